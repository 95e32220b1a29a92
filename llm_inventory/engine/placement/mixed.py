"""Pipeline stages on devices of different types: one engine instance whose stages run on
the device groups given (`--devices h100:4,a100-80gb:4`), with the layer partition the
engine is told (vLLM's VLLM_PP_LAYER_PARTITION, read by get_pp_indices in
vllm/distributed/utils.py).

Each stage is sized by its own device's facts, exactly as a single-type placement sizes it
(weights, reserve and pool by the engine's rules, with the partition pinned); the pool is
cut as the engine cuts it and the engine's binding rule picks the binding stage over all of
them (vLLM: the fewest blocks, every worker then keeps that many). For each TP width and
order of the device types, the partition starts even (the engine's own) and moves one layer
at a time from the stage with the least pool per layer to the one with the most while the
stages' room, least first, grows (leximin, so stages tied at the least all move): the
partition that gives the binding stage the most room.
"""

from __future__ import annotations

from itertools import permutations

from pydantic import BaseModel, Field

from llm_inventory.engine.placement.candidates import Shape
from llm_inventory.engine.placement.facts import ModelFacts, model_facts
from llm_inventory.engine.placement.fit import Sized, size
from llm_inventory.engine.placement.legality import Judge
from llm_inventory.engine.placement.models import PlacementRequest
from llm_inventory.engine.serving.bands import reserve_trust
from llm_inventory.engine.serving.base import StartupContext
from llm_inventory.engine.trust import Trust, engine_rule, exact
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

MAX_TYPES = 3  # device types in one search (orders grow as their factorial)


class DeviceGroup(BaseModel):
    device: Device
    count: int = Field(ge=1, le=65_536)


class MixedStage(BaseModel):
    """One pipeline stage: its device type and what one of its devices holds, in bytes."""

    stage: int
    device: str
    device_memory_bytes: int
    layers: int
    weight_bytes: int
    reserve_bytes: int
    kv_pool_bytes: int
    kv_blocks: int
    kv_capacity_tokens: int


class MixedPlan(BaseModel):
    tp: int
    pp: int
    devices_used: int
    partition: list[int]  # layers per stage
    stages: list[MixedStage]
    binding_stage: int
    kv_capacity_tokens: int  # what every worker keeps: the binding stage's
    max_concurrency: float | None
    fits: bool
    why: str | None
    env: dict[str, str]  # what the engine is told: VLLM_PP_LAYER_PARTITION
    startup: list[str]
    startup_error: str | None


class PoolPlan(BaseModel):
    """One pool of a prefill/decode pair: its device type and its best plain plan there."""

    role: str  # "prefill" or "decode"
    device: str
    count: int
    tp: int
    pp: int
    ep: int
    dp: int
    kv_capacity_tokens: int | None
    total_concurrency: float | None
    fits: bool
    why: str | None


class MixedDisaggregated(BaseModel):
    """Prefill on one device type, decode on another, each pool placed on its own type: the
    decode pool holds the workload at the context, the prefill pool one request (it hands
    each prompt's KV over to the decode pool)."""

    prefill: PoolPlan
    decode: PoolPlan
    fits: bool


class MixedResult(BaseModel):
    schema_version: int = 1
    model: str
    groups: list[dict[str, int | str]]  # device id and count, in the order given
    engine: str
    engine_version: str
    context: int
    concurrency: int
    plans: list[MixedPlan]  # fitting first, most requests held first
    disaggregated: list[MixedDisaggregated] = Field(default_factory=list)
    trust: dict[str, Trust] = Field(default_factory=dict)


def _partition_env(name: str, partition: list[int]) -> dict[str, str]:
    return {name: ",".join(map(str, partition))}


class _Search:
    """One model and request over several device types; facts per (type, tp, partition)."""

    def __init__(self, spec: ModelSpec, groups: list[DeviceGroup],
                 request: PlacementRequest) -> None:
        self.spec, self.groups, self.request = spec, groups, request
        self._sized: dict[tuple[str, int, tuple[int, ...]], tuple[ModelFacts, Sized]] = {}

    def sized(self, device: Device, tp: int, partition: list[int]) -> tuple[ModelFacts, Sized]:
        key = (device.id, tp, tuple(partition))
        if key not in self._sized:
            pp = len(partition)
            request = self.request.model_copy(update={
                "device": device, "count": tp * pp, "tp": tp, "pp": pp, "ep": 1,
                "pp_layer_partition": partition, "used_bytes": []})
            facts = model_facts(self.spec, request)
            self._sized[key] = facts, size(facts, Shape(tp=tp, pp=pp, ep=1), [], [])
        return self._sized[key]

    def stages(self, tp: int, order: list[Device], partition: list[int]
               ) -> list[tuple[ModelFacts, Sized]]:
        return [self.sized(device, tp, partition) for device in order]

    def room(self, tp: int, order: list[Device], partition: list[int]) -> list[float]:
        """Pool bytes per layer of each stage (negative: its weights do not fit)."""
        return [sized.pools[s] / partition[s]
                for s, (_, sized) in enumerate(self.stages(tp, order, partition))]

    def balance(self, tp: int, order: list[Device], start: list[int]) -> list[int]:
        partition = list(start)
        room = self.room(tp, order, partition)
        for _ in range(sum(partition)):
            low, high = room.index(min(room)), room.index(max(room))
            if low == high or partition[low] <= 1:
                break
            moved = list(partition)
            moved[low] -= 1
            moved[high] += 1
            after = self.room(tp, order, moved)
            if sorted(after) <= sorted(room):  # leximin: stages tied at the least move too
                break
            partition, room = moved, after
        return partition

    def plan(self, tp: int, order: list[Device], partition: list[int]) -> MixedPlan:
        parts = self.stages(tp, order, partition)
        facts = parts[0][0]
        measures = [sized.measures[s] for s, (_, sized) in enumerate(parts)]
        layouts = [sized.layouts[s] for s, (_, sized) in enumerate(parts)]
        pools = [sized.pools[s] for s, (_, sized) in enumerate(parts)]
        binding = facts.engine.binding_stage(measures, layouts, pools)
        stateful = [m[2] for m, lay in zip(measures, layouts, strict=True) if lay.keeps_state]
        concurrency = min(stateful) if facts.state and stateful else None
        stages = []
        for s, (_, sized) in enumerate(parts):
            stages.append(MixedStage(
                stage=s, device=order[s].id, device_memory_bytes=order[s].memory_bytes,
                layers=partition[s], weight_bytes=sized.weights[s],
                reserve_bytes=sized.reserves[s].reserve_bytes,
                kv_pool_bytes=sized.layouts[s].allocated(sized.pools[s]),
                kv_blocks=sized.measures[s][0], kv_capacity_tokens=sized.measures[s][1]))
        bound_facts, bound = parts[binding]
        report = bound_facts.engine.startup(
            layouts[binding].capacity(pools[binding]), pools[binding], bound_facts.settings,
            StartupContext(device=order[binding], weight_bytes=bound.weights[binding],
                           reserve=bound.reserves[binding])) if facts.state else None
        error = report.error if report is not None else None
        why = None
        if any(p <= 0 for p in pools):
            why = f"stage {pools.index(min(pools))}: the weights leave no room for the KV cache"
        elif concurrency is not None and concurrency < self.request.concurrency:
            why = (f"holds {concurrency:,.1f} requests at the context; the workload needs "
                   f"{self.request.concurrency:,}")
        elif error:
            why = f"the engine stops at start-up: {error}"
        name = facts.engine.layer_partition or "layer partition"
        return MixedPlan(
            tp=tp, pp=len(partition), devices_used=tp * len(partition), partition=partition,
            stages=stages, binding_stage=binding, kv_capacity_tokens=measures[binding][1],
            max_concurrency=round(concurrency, 4) if concurrency is not None else None,
            fits=why is None, why=why, env=_partition_env(name, partition),
            startup=report.lines if report is not None else [], startup_error=error)


def plan_mixed(spec: ModelSpec, groups: list[DeviceGroup],
               request: PlacementRequest) -> MixedResult:
    """Every TP width and order of the device types, each with its balanced partition;
    fitting plans first, the most requests held first. InputError when the engine takes no
    layer partition, or for more than MAX_TYPES types."""
    if not 1 < len(groups) <= MAX_TYPES or len({g.device.id for g in groups}) != len(groups):
        raise InputError("devices", f"give 2 to {MAX_TYPES} different device types with "
                         "their counts (h100:4,a100-80gb:4)")
    search = _Search(spec, groups, request)
    base = model_facts(spec, request.model_copy(update={
        "device": groups[0].device, "count": sum(g.count for g in groups)}))
    engine = base.engine
    if engine.layer_partition is None:
        raise InputError("devices", f"{engine.label} takes no layer partition, so its "
                         "stages cannot differ by device; vLLM does (VLLM_PP_LAYER_PARTITION)")
    judge = Judge(base)
    plans: list[MixedPlan] = []
    widest = max(g.count for g in groups)
    for tp in range(1, widest + 1):
        stages = {g.device.id: g.count // tp for g in groups}
        if any(n == 0 for n in stages.values()) or not judge.tp(tp).legal:
            continue
        pp = sum(stages.values())
        if pp > base.layers or pp < 2:
            continue
        for types in permutations(groups):
            order = [g.device for g in types for _ in range(stages[g.device.id])]
            even = engine.pp_partition(base.layers, pp)
            partition = search.balance(tp, order, even)
            plans.append(search.plan(tp, order, partition))
    plans.sort(key=lambda p: (not p.fits, -(p.max_concurrency or 0), p.devices_used))
    pairs = _disaggregated(spec, groups, request) if engine.disaggregates and base.state \
        else []
    return MixedResult(
        model=spec.name, groups=[{"device": g.device.id, "count": g.count} for g in groups],
        engine=engine.name, engine_version=engine.version, context=base.context,
        concurrency=request.concurrency, plans=plans, disaggregated=pairs,
        trust={"weights": exact("counted per stage, with the engine's padding"),
               "kv_pool": engine.rule_trust(f"{engine.label}'s budget per device and its "
                                            "binding worker, the partition pinned"),
               # the widest of the types' bands: every stage's reserve is in the plan
               "reserve": max((reserve_trust(engine, g.device) for g in groups),
                              key=lambda t: (t.kind != "calibrated", t.band or 0.0)),
               "partition": engine_rule("balanced by the tool; the engine takes it as "
                                        f"{engine.layer_partition}")})


def _pool(spec: ModelSpec, group: DeviceGroup, request: PlacementRequest,
          role: str) -> PoolPlan:
    """A pool's best plain plan on its own device type."""
    from llm_inventory.engine.placement import plan_placement

    # a prefill pool keeps a prompt's KV only until it is handed over: one request at the
    # context is what it must hold; the decode pool holds the workload
    result = plan_placement(spec, request.model_copy(update={
        "device": group.device, "count": group.count, "used_bytes": [],
        "pp_layer_partition": None,
        "concurrency": 1 if role == "prefill" else request.concurrency}))
    plan = next((p for p in result.plans if p.disaggregation is None), None)
    if plan is None:
        why = result.refused[0].reason if result.refused else "no legal split"
        return PoolPlan(role=role, device=group.device.id, count=group.count, tp=0, pp=0,
                        ep=0, dp=0, kv_capacity_tokens=None, total_concurrency=None,
                        fits=False, why=why)
    return PoolPlan(role=role, device=group.device.id, count=group.count, tp=plan.tp,
                    pp=plan.pp, ep=plan.ep, dp=plan.dp,
                    kv_capacity_tokens=plan.per_device.kv_capacity_tokens
                    if plan.per_device else None,
                    total_concurrency=plan.total_concurrency, fits=plan.fits, why=plan.why)


def _disaggregated(spec: ModelSpec, groups: list[DeviceGroup],
                   request: PlacementRequest) -> list[MixedDisaggregated]:
    """Every ordered pair of types as (prefill, decode) pools, both fitting first."""
    pools = {(g.device.id, role): _pool(spec, g, request, role)
             for g in groups for role in ("prefill", "decode")}
    pairs = [MixedDisaggregated(prefill=pools[a.device.id, "prefill"],
                                decode=pools[b.device.id, "decode"],
                                fits=pools[a.device.id, "prefill"].fits
                                and pools[b.device.id, "decode"].fits)
             for a, b in permutations(groups, 2)]
    pairs.sort(key=lambda p: (not p.fits, -(p.decode.total_concurrency or 0)))
    return pairs
