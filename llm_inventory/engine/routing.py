"""MoE routing: one step's expert loads and all-to-all traffic, and their spread over many steps.

The router is modelled, not run: each token picks `top_k` distinct experts, drawn from a fixed
popularity (uniform, or Zipf-like with exponent `skew`: weight of expert i ∝ 1/(i+1)^skew,
expert 0 the most popular), by successive weighted sampling without replacement. Draws come
from Python's `random.Random(seed)` and only its `random()` method, whose sequence for a given
seed Python promises to keep across versions, so a seed replays the same routing.

Rules applied (also listed in every result's `assumptions`):
- experts sit on EP ranks as vLLM places them (`expert_rank_counts`);
- the step's tokens are spread over the EP ranks in contiguous blocks, the remainder one each
  to the first ranks (the same rule as the experts);
- dispatch: a token's hidden state (hidden × dtype bytes) goes once to each distinct remote
  rank that owns one of its chosen experts; combine: that rank sends one vector back (its
  experts' weighted outputs, summed); experts on the token's own rank cost no traffic;
- the busiest expert sets the step's pace: straggler factor = busiest load / mean load.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from random import Random
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.experts import (
    even_split,
    expected_distinct_experts,
    expert_rank_counts,
)
from llm_inventory.engine.trust import Trust, exact
from llm_inventory.errors import InputError
from llm_inventory.units import bytes_for, normalize_dtype

# steps × (tokens × top_k + experts): the draws plus the per-step scan of the loads. At this
# bound a run takes a few seconds (about 0.4 µs a unit), not minutes.
MAX_WORK = 10_000_000
# Beyond this exponent the tail weights underflow towards zero and the popularity is one expert.
MAX_SKEW = 10.0
# Per-token choices of the shown step are reported up to this many tokens.
MAX_SHOWN_TOKENS = 1024
# Rejection sampling stops paying once the chosen experts hold this share of the popularity.
_REJECTION_LIMIT = 0.75

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Skew = Annotated[float, Field(ge=0.0, le=MAX_SKEW, allow_inf_nan=False)]


class RoutingRequest(BaseModel):
    """What to route: the MoE layer's shape, the batch, the popularity and the split.

    `experts`, `top_k`, `hidden` and `expert_bytes` describe one MoE layer (a model
    description can supply them); `tokens` is the batch one step routes; `expert_bytes` is the
    weight bytes of one expert in one MoE layer and `moe_layers` how many MoE layers a decode
    step runs through.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    experts: PositiveInt
    top_k: PositiveInt
    tokens: PositiveInt
    seed: NonNegativeInt = 0
    skew: Skew = 0.0
    steps: PositiveInt = 1000
    ep: PositiveInt | None = None
    hidden: PositiveInt = 4096
    dtype: str = "bf16"
    expert_bytes: PositiveInt | None = None
    moe_layers: PositiveInt = 1


class DeviceStep(BaseModel):
    """One EP rank in the shown step: its experts, its load and its all-to-all bytes."""

    rank: int
    first_expert: int
    experts: int
    tokens: int = Field(description="Tokens that start on this rank and whose outputs return to it")
    load: int = Field(description="Token-expert assignments its experts process")
    dispatch_send_bytes: int
    dispatch_recv_bytes: int
    combine_send_bytes: int
    combine_recv_bytes: int


class RoutingStep(BaseModel):
    """The first simulated step, shown in full."""

    assignments: int = Field(description="tokens × top_k: the sum of the loads")
    loads: list[int] = Field(description="Assignments per expert, expert 0 first")
    busiest: int = Field(description="The largest load")
    busiest_expert: int
    mean_load: float
    straggler: float = Field(description="busiest / mean_load")
    distinct_experts: int
    idle_experts: int
    choices: list[list[int]] | None = Field(
        description=f"Each token's experts; omitted above {MAX_SHOWN_TOKENS:,} tokens"
    )
    hidden_state_bytes: int | None = Field(description="One token's hidden state: hidden × dtype")
    devices: list[DeviceStep] | None
    device_straggler: float | None = Field(
        description="Busiest rank's load / the mean rank load"
    )
    dispatch_bytes: int | None = Field(description="All ranks' dispatch sends added up")
    combine_bytes: int | None = Field(description="All ranks' combine sends added up")


class LoadSpread(BaseModel):
    """A load over the simulated steps: mean and nearest-rank percentiles."""

    mean: float
    p50: int
    p99: int
    max: int


class RatioSpread(BaseModel):
    """A ratio over the simulated steps: mean and nearest-rank percentiles."""

    mean: float
    p50: float
    p99: float
    max: float


class DistinctExperts(BaseModel):
    """Distinct experts one step touches: the uniform closed form next to the simulation."""

    expected: float = Field(description="E × (1 − (1 − k/E)^B): exact under uniform routing")
    simulated: float = Field(description="Mean over the simulated steps")
    relative_difference: float = Field(description="(simulated − expected) / expected")
    bound: int = Field(description="min(experts, tokens × top_k)")
    p50: int
    p99: int
    min: int
    max: int


class ExpertWeights(BaseModel):
    """Expert weight bytes one decode step reads, beside the active and resident figures."""

    expert_bytes: int = Field(description="One expert in one MoE layer")
    moe_layers: int
    distinct_experts: float = Field(description="Expected distinct experts per MoE layer")
    basis: str
    active_bytes: int = Field(description="top_k × expert_bytes × moe_layers: one token's share")
    read_bytes: int = Field(description="distinct_experts × expert_bytes × moe_layers, rounded")
    resident_bytes: int = Field(description="experts × expert_bytes × moe_layers")
    read_fraction_of_resident: float


class RoutingResult(BaseModel):
    """Per-step routing of `tokens` tokens and its spread over `steps` steps."""

    schema_version: int = 1
    experts: int
    top_k: int
    tokens: int
    seed: int
    skew: float
    popularity: str
    steps: int
    ep: int | None
    hidden: int
    dtype: str
    step: RoutingStep
    busiest: LoadSpread
    straggler: RatioSpread
    device_straggler: RatioSpread | None
    distinct_experts: DistinctExperts
    decode_expert_bytes: int | None = Field(
        description="Expected expert weight bytes one decode step reads (needs expert_bytes)"
    )
    expert_weights: ExpertWeights | None
    assumptions: list[str]
    trust: dict[str, Trust] = Field(default_factory=lambda: {
        "simulation": exact("counts of the seeded simulation: exact for this seed"),
        "expectations": exact("closed forms (distinct experts, bytes read), checked "
                              "against the simulation"),
    })


def popularity_weights(experts: int, skew: float) -> list[float]:
    """Relative popularity of each expert: 1/(i+1)^skew (all 1.0 when skew is 0)."""
    return [1.0 / (i + 1) ** skew for i in range(experts)]


def routing_work(request: RoutingRequest) -> int:
    """The work bound's measure: steps × (tokens × top_k + experts)."""
    return request.steps * (request.tokens * request.top_k + request.experts)


def _check(request: RoutingRequest) -> None:
    if request.top_k > request.experts:
        raise InputError(
            "top_k", f"top_k {request.top_k} exceeds the {request.experts} experts"
        )
    if request.ep is not None:
        expert_rank_counts(request.experts, request.ep)
    work = routing_work(request)
    if work > MAX_WORK:
        raise InputError(
            "steps",
            f"steps × (tokens × top_k + experts) = {work:,} exceeds the limit of "
            f"{MAX_WORK:,}; simulate fewer steps or a smaller batch",
        )


def _step_router(
    rng: Random, experts: int, top_k: int, weights: list[float]
) -> Callable[[int, bool], tuple[list[int], list[list[int]]]]:
    """A function routing one step: `route(tokens, keep)` → (loads per expert, and each
    token's experts when `keep`, else an empty list).

    Successive sampling without replacement: while the experts a token has already chosen hold
    under three quarters of the popularity, draw from the full popularity and redraw repeats
    (at most four tries per pick on average); past that, walk the unchosen experts from the
    most popular with one draw over what is left. Both give each unchosen expert a chance
    proportional to its weight. The loop is written out flat because it is the whole cost.
    """
    random = rng.random
    uniform = all(w == weights[0] for w in weights)
    last = experts - 1
    cumulative: list[float] = []
    running = 0.0
    for w in weights:
        running += w
        cumulative.append(running)
    total = running
    limit = total * (1.0 - _REJECTION_LIMIT)

    def walk(chosen: list[int], left: float) -> int:
        target = random() * left
        pick = -1
        for expert in range(experts):
            if expert in chosen:
                continue
            pick = expert
            target -= weights[expert]
            if target < 0.0:
                break
        return pick  # rounding can leave a sliver past the end: the last unchosen expert

    def route(tokens: int, keep: bool) -> tuple[list[int], list[list[int]]]:
        loads = [0] * experts
        kept: list[list[int]] = []
        for _ in range(tokens):
            chosen: list[int] = []
            left = total
            picked = 0
            while picked < top_k:
                if left > limit:
                    if uniform:
                        expert = int(random() * experts)
                    else:
                        expert = bisect_right(cumulative, random() * total)
                    if expert > last:
                        expert = last
                    if expert in chosen:
                        continue
                else:
                    expert = walk(chosen, left)
                chosen.append(expert)
                left -= weights[expert]
                loads[expert] += 1
                picked += 1
            if keep:
                kept.append(chosen)
        return loads, kept

    return route


def _percentile(ordered: list[int], percent: int) -> int:
    """Nearest-rank percentile of an ascending list: the ⌈p/100 × n⌉-th smallest value."""
    rank = max(1, math.ceil(percent * len(ordered) / 100))
    return ordered[rank - 1]


def _ratio_spread(values: list[int], scale: float) -> RatioSpread:
    ordered = sorted(values)
    return RatioSpread(
        mean=round(sum(ordered) / len(ordered) / scale, 6),
        p50=round(_percentile(ordered, 50) / scale, 6),
        p99=round(_percentile(ordered, 99) / scale, 6),
        max=round(ordered[-1] / scale, 6),
    )


def _devices(
    request: RoutingRequest, loads: list[int], choices: list[list[int]], vector: int
) -> list[DeviceStep]:
    """EP ranks in the shown step: placement, load, and dispatch/combine bytes."""
    assert request.ep is not None
    ep = request.ep
    counts = expert_rank_counts(request.experts, ep)
    owner = [rank for rank, count in enumerate(counts) for _ in range(count)]
    token_rank = [rank for rank, count in enumerate(even_split(request.tokens, ep))
                  for _ in range(count)]
    send = [0] * ep
    receive = [0] * ep
    for token, chosen in enumerate(choices):
        source = token_rank[token]
        remote = {owner[expert] for expert in chosen}
        remote.discard(source)
        send[source] += vector * len(remote)
        for rank in remote:
            receive[rank] += vector
    devices: list[DeviceStep] = []
    first = 0
    tokens = even_split(request.tokens, ep)
    for rank, count in enumerate(counts):
        devices.append(DeviceStep(
            rank=rank,
            first_expert=first,
            experts=count,
            tokens=tokens[rank],
            load=sum(loads[first:first + count]),
            dispatch_send_bytes=send[rank],
            dispatch_recv_bytes=receive[rank],
            # Combine mirrors dispatch: every vector a rank received goes back to its sender.
            combine_send_bytes=receive[rank],
            combine_recv_bytes=send[rank],
        ))
        first += count
    return devices


def routing_assumptions(request: RoutingRequest) -> list[str]:
    """The rules behind the figures, in words, for the result and the table."""
    popularity = (
        "uniform popularity" if request.skew == 0
        else f"expert i weighs 1/(i+1)^{request.skew:g}"
    )
    rules = [
        f"{request.top_k} distinct experts per token, sampled without replacement; "
        f"{popularity}; seed {request.seed}",
        "straggler = busiest expert's load / mean load (tokens × top_k / experts)",
        "percentiles: nearest rank over the simulated steps",
        "expected distinct experts: E × (1 − (1 − k/E)^B), exact under uniform routing",
    ]
    if request.ep is not None:
        rules += [
            "experts on EP ranks in contiguous blocks, remainder one each to the first ranks "
            "(vLLM)",
            "tokens on EP ranks in contiguous blocks, remainder one each to the first ranks",
            "dispatch: a token's hidden state goes once to each distinct remote rank it chose",
            "combine: one vector back from each such rank; local experts cost no traffic",
        ]
    if request.expert_bytes is not None:
        rules.append(
            "weights read: expected distinct experts per MoE layer × expert bytes × MoE layers"
        )
    return rules


def simulate_routing(request: RoutingRequest) -> RoutingResult:
    """Route `request.steps` steps of `request.tokens` tokens; show the first in full.

    Raises InputError when top_k exceeds the experts, ep exceeds the experts, the dtype is
    unknown, or the work steps × (tokens × top_k + experts) exceeds MAX_WORK.
    """
    dtype = normalize_dtype(request.dtype, "dtype")
    _check(request)
    experts, top_k, tokens = request.experts, request.top_k, request.tokens
    weights = popularity_weights(experts, request.skew)
    route = _step_router(Random(request.seed), experts, top_k, weights)

    busiest: list[int] = []
    distinct: list[int] = []
    device_busiest: list[int] = []
    counts = expert_rank_counts(experts, request.ep) if request.ep is not None else None
    first_loads: list[int] = []
    first_choices: list[list[int]] = []
    for index in range(request.steps):
        keep = index == 0
        loads, kept = route(tokens, keep)
        busiest.append(max(loads))
        distinct.append(experts - loads.count(0))
        if counts is not None:
            start = 0
            heaviest = 0
            for count in counts:
                heaviest = max(heaviest, sum(loads[start:start + count]))
                start += count
            device_busiest.append(heaviest)
        if keep:
            first_loads, first_choices = loads, kept

    assignments = tokens * top_k
    mean_load = assignments / experts
    vector = bytes_for(request.hidden, dtype)
    devices = None
    device_straggler = None
    if request.ep is not None:
        devices = _devices(request, first_loads, first_choices, vector)
        device_straggler = round(device_busiest[0] / (assignments / request.ep), 6)
    top = max(first_loads)
    step = RoutingStep(
        assignments=assignments,
        loads=first_loads,
        busiest=top,
        busiest_expert=first_loads.index(top),
        mean_load=mean_load,
        straggler=round(top / mean_load, 6),
        distinct_experts=distinct[0],
        idle_experts=experts - distinct[0],
        choices=first_choices if tokens <= MAX_SHOWN_TOKENS else None,
        hidden_state_bytes=vector if devices is not None else None,
        devices=devices,
        device_straggler=device_straggler,
        dispatch_bytes=sum(d.dispatch_send_bytes for d in devices) if devices else None,
        combine_bytes=sum(d.combine_send_bytes for d in devices) if devices else None,
    )

    ordered = sorted(busiest)
    expected = expected_distinct_experts(experts, top_k, tokens)
    simulated = sum(distinct) / len(distinct)
    seen = sorted(distinct)
    distinct_experts = DistinctExperts(
        expected=round(expected, 6),
        simulated=round(simulated, 6),
        relative_difference=round((simulated - expected) / expected, 6),
        bound=min(experts, assignments),
        p50=_percentile(seen, 50),
        p99=_percentile(seen, 99),
        min=seen[0],
        max=seen[-1],
    )
    weights_read = None
    if request.expert_bytes is not None:
        weights_read = _expert_weights(request, expected, simulated)
    return RoutingResult(
        experts=experts,
        top_k=top_k,
        tokens=tokens,
        seed=request.seed,
        skew=request.skew,
        popularity="uniform" if request.skew == 0 else f"zipf s={request.skew:g}",
        steps=request.steps,
        ep=request.ep,
        hidden=request.hidden,
        dtype=dtype,
        step=step,
        busiest=LoadSpread(
            mean=round(sum(ordered) / len(ordered), 6),
            p50=_percentile(ordered, 50),
            p99=_percentile(ordered, 99),
            max=ordered[-1],
        ),
        straggler=_ratio_spread(busiest, mean_load),
        device_straggler=(
            _ratio_spread(device_busiest, assignments / request.ep)
            if request.ep is not None else None
        ),
        distinct_experts=distinct_experts,
        decode_expert_bytes=weights_read.read_bytes if weights_read else None,
        expert_weights=weights_read,
        assumptions=routing_assumptions(request),
    )


def _expert_weights(request: RoutingRequest, expected: float, simulated: float) -> ExpertWeights:
    """Weight bytes of one decode step: the closed form under uniform routing (exact), the
    simulated mean under skew (the closed form does not apply)."""
    assert request.expert_bytes is not None
    per_expert = request.expert_bytes * request.moe_layers
    uniform = request.skew == 0
    distinct = expected if uniform else simulated
    read = round(distinct * per_expert)
    resident = request.experts * per_expert
    return ExpertWeights(
        expert_bytes=request.expert_bytes,
        moe_layers=request.moe_layers,
        distinct_experts=round(distinct, 6),
        basis="closed form (uniform routing)" if uniform else "simulated mean (skewed routing)",
        active_bytes=request.top_k * per_expert,
        read_bytes=read,
        resident_bytes=resident,
        read_fraction_of_resident=round(read / resident, 6),
    )
