"""Whether a shape fits: every stage's weights, reserve and KV pool, as the engine sizes them.

Per stage: weights on one rank (the engine's padding and buffers included), the engine's
reserve, the pool the engine makes of the rest, and the pool's blocks, tokens and maximum
concurrency at the context. The engine says which stage binds (vLLM: the fewest blocks).
A legal shape fits when every pool is positive and, for models that keep state, one request
at the context fits and every engine together holds the workload's concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_inventory.engine.placement.candidates import Shape
from llm_inventory.engine.placement.facts import ModelFacts
from llm_inventory.engine.placement.tiers import Tiers, sized_tiers
from llm_inventory.engine.placement.tiers import moved as offloaded
from llm_inventory.engine.serving.base import Occupied, PoolLayout, ReserveEstimate


@dataclass
class Sized:
    """A judged shape with its memory per stage and its verdict."""

    shape: Shape
    dp: int
    reasons: list[str]
    warnings: list[str]
    weights: list[int]
    reserves: list[ReserveEstimate]
    layouts: list[PoolLayout]
    measures: list[tuple[int, int, float]]
    pools: list[int]
    ranges: list[range]
    binding: int
    concurrency: float | None
    fits: bool
    experts_per_rank: list[int] | None
    others: int = 0  # bytes other processes hold on the busiest device the plan uses
    refused: str | None = None  # the engine's start-up error on that device, if any
    lora: list[int] | None = None  # LoRA adapter buffers per stage (None: LoRA off)
    moved: list[int] = field(default_factory=list)  # weights each stage's rank moves to host
    tiers: Tiers | None = None  # with offload asked: GPU, host and disk bytes (tiers.py)

    @property
    def legal(self) -> bool:
        return not self.reasons

    @property
    def engines(self) -> int:
        """Engine instances: replicas, times the attention-DP ranks of an EP group."""
        s = self.shape
        return max(1, self.dp) * (s.ep // s.tp if s.ep > 1 and s.ep % s.tp == 0 else 1)

    @property
    def total_concurrency(self) -> float | None:
        return None if self.concurrency is None else self.concurrency * self.engines

    @property
    def tokens(self) -> int:
        """KV tokens of the binding worker's pool."""
        return self.measures[self.binding][1] if self.measures else 0


def replicas(facts: ModelFacts, shape: Shape) -> int:
    """Whole replicas of `shape` the devices allow (an encoder variant keeps one device for
    the encoder; prefill/decode halves the devices between the pools)."""
    count = facts.request.count
    if shape.disaggregation == "encoder":
        return (count - 1) // shape.devices
    if shape.disaggregation == "prefill/decode":
        return count // (2 * shape.devices)
    return count // shape.devices


def devices_used(shape: Shape, dp: int) -> int:
    """Devices a plan occupies: its replicas, the encoder's device, both P/D pools."""
    used = shape.devices * dp
    if shape.disaggregation == "encoder":
        used += 1
    if shape.disaggregation == "prefill/decode":
        used *= 2
    return used


def busiest(used_bytes: list[int], count: int, devices: int) -> int:
    """Bytes other processes hold on the busiest of the `devices` least-occupied of `count`
    devices: a plan takes the freest devices, and its busiest one binds (every replica is
    sized by it, as a tensor-split engine fails on its fullest card)."""
    if not used_bytes:
        return 0
    ranked = sorted(used_bytes[:count] + [0] * max(0, count - len(used_bytes)))
    return ranked[min(devices, count) - 1]


def occupancy(facts: ModelFacts, shape: Shape, pools: list[int]
              ) -> tuple[int, int, Occupied | None]:
    """The replicas a shape keeps on devices other processes partly hold, the bytes held on
    the busiest device they use, and what the engine makes of it: as many replicas as the
    devices allow, less those whose devices would make the engine refuse to start or leave
    a stage no pool (the busiest devices are left out first)."""
    dp = replicas(facts, shape)
    used, count = facts.request.used_bytes, facts.request.count
    if not any(used):
        return dp, 0, None
    for keep in range(dp, 0, -1):
        others = busiest(used, count, max(shape.devices, devices_used(shape, keep)))
        occupied = facts.engine.occupied(facts.request.device, facts.settings, others)
        if occupied.error is None and all(p - occupied.pool_loss_bytes > 0 for p in pools):
            return keep, others, occupied
    others = busiest(used, count, max(shape.devices, devices_used(shape, max(dp, 1))))
    return dp, others, facts.engine.occupied(facts.request.device, facts.settings, others)


def size(facts: ModelFacts, shape: Shape, reasons: list[str], warnings: list[str]) -> Sized:
    """Memory of every stage of `shape`, the binding stage, and whether the workload fits."""
    tp, pp, ep = shape.tp, shape.pp, shape.ep
    weights = facts.stage_weights(tp, pp, ep)
    moved = offloaded(facts, tp, pp, ep, weights)  # [] unless offload moves weights
    if moved:
        weights = [w - m for w, m in zip(weights, moved, strict=True)]
    ranges = facts.ranges(pp)
    reserves = [facts.reserve(tp, pp, ep, index) for index in range(len(ranges))]
    lora = _lora(facts, tp, pp, ep, len(ranges))
    budgeted = (weights if lora is None or not facts.lora_rule or not facts.lora_rule.in_budget
                else [w + a for w, a in zip(weights, lora, strict=True)])
    pools = [facts.engine.pool_bytes(facts.request.device, facts.settings,
                                     facts.stage_shape(tp, pp, ep, index), budgeted[index],
                                     reserves[index])
             for index in range(len(ranges))]
    dp, others, occupied = occupancy(facts, shape, pools)
    if occupied is not None:
        pools = [pool - occupied.pool_loss_bytes for pool in pools]
        left_out = replicas(facts, shape) - dp
        if left_out > 0 and occupied.error is None:
            warnings = [*warnings, f"{left_out} replica{'s' if left_out > 1 else ''} fewer: "
                        "other processes hold too much of the busiest devices"]
    layouts = [facts.pool_layout(tp, stage.start, stage.stop) for stage in ranges]
    measures = [layout.measure(pool) for layout, pool in zip(layouts, pools, strict=True)]
    binding = facts.engine.binding_stage(measures, layouts, pools)
    stateful = [m[2] for m, lay in zip(measures, layouts, strict=True) if lay.keeps_state]
    concurrency = min(stateful) if facts.state and stateful else None
    sized = Sized(shape=shape, dp=dp, reasons=reasons, warnings=warnings,
                  weights=weights, reserves=reserves, layouts=layouts, measures=measures,
                  pools=pools, ranges=ranges, binding=binding, concurrency=concurrency,
                  fits=False,
                  experts_per_rank=facts.expert_counts(ep) if facts.experts and ep > 1
                  else None, others=others,
                  refused=occupied.error if occupied is not None else None, moved=moved,
                  lora=lora)
    if facts.request.offload.active:
        sized.tiers = sized_tiers(facts, sized)
    sized.fits = fits(facts, sized)
    return sized


def _lora(facts: ModelFacts, tp: int, pp: int, ep: int, stages: int) -> list[int] | None:
    """LoRA adapter buffers one device of each stage holds (None: LoRA off)."""
    if facts.request.lora is None:
        return None
    from llm_inventory.engine.placement.features import lora_stage_bytes

    return [lora_stage_bytes(facts, tp, pp, ep, stage) for stage in range(stages)]


def fits(facts: ModelFacts, sized: Sized) -> bool:
    if sized.reasons or sized.dp < 1 or sized.refused or not all(p > 0 for p in sized.pools):
        return False
    if sized.tiers is not None and sized.tiers.host_fits is False:
        return False
    if not facts.state or sized.concurrency is None:
        return True
    total = sized.total_concurrency or 0.0
    return sized.concurrency >= 1 and total >= facts.request.concurrency


def variant(facts: ModelFacts, base: Sized, kind: str) -> Sized:
    """A disaggregated variant of a sized shape: the same devices per replica, its own
    replica count (sized like the base: each pool holds the same weights)."""
    shape = Shape(tp=base.shape.tp, pp=base.shape.pp, ep=base.shape.ep, disaggregation=kind)
    if facts.request.used_bytes:  # it occupies other devices, maybe busier ones: size afresh
        return size(facts, shape, list(base.reasons), list(base.warnings))
    copy = Sized(shape=shape, dp=replicas(facts, shape), reasons=list(base.reasons),
                 warnings=list(base.warnings), weights=base.weights, reserves=base.reserves,
                 layouts=base.layouts, measures=base.measures, pools=base.pools,
                 ranges=base.ranges, binding=base.binding, concurrency=base.concurrency,
                 fits=False, experts_per_rank=base.experts_per_rank, moved=base.moved,
                 lora=base.lora)
    if facts.request.offload.active:  # its own devices on a node: its own host memory
        copy.tiers = sized_tiers(facts, copy)
    copy.fits = fits(facts, copy)
    return copy


def why_not(facts: ModelFacts, sized: Sized) -> str | None:
    """Why a legal shape does not fit, in one phrase (None when it fits)."""
    if sized.fits or sized.reasons:
        return None
    if sized.dp < 1:
        return f"a replica needs more than the {facts.request.count} devices given"
    if sized.refused:
        return f"the engine stops at start-up: {sized.refused}"
    if any(p <= 0 for p in sized.pools):
        return "the weights leave no room for the KV cache"
    t = sized.tiers
    if t is not None and t.host_fits is False and t.host_memory_bytes is not None:
        from llm_inventory.units import format_bytes

        return (f"a node's host memory ({format_bytes(t.host_memory_bytes)}) cannot hold the "
                f"{format_bytes(t.host_bytes_per_node)} of weights and KV offloaded to it")
    if sized.concurrency is not None and sized.concurrency < 1:
        return "one request at the context does not fit"
    total = sized.total_concurrency or 0.0
    return (f"holds {total:,.1f} requests at the context; the workload needs "
            f"{facts.request.concurrency:,}")
