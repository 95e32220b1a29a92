"""The serving engines and accounting eras modelled, as `inventory engines` lists them:
whatever the registry (`engine/serving/ERAS` and run-time registrations) holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from llm_inventory.engine.serving import ServingEngine, era_ranges, get

if TYPE_CHECKING:
    from llm_inventory.engine.placement import PlacementRequest, PlacementResult
    from llm_inventory.spec.model import ModelSpec


class EngineRule(BaseModel):
    rule: str
    source: str


class EngineEra(BaseModel):
    """One engine in one accounting era."""

    engine: str  # as --engine spells it
    versions: str  # the releases whose accounting it follows
    lowest: str  # the lowest release `--engine NAME@VERSION` maps to it
    below: str | None  # the next era's lowest release (None: the newest)
    version: str  # the release it answers for by default
    label: str
    default: bool  # what `--engine NAME` picks
    summary: str
    programs: list[str]  # command lines `inventory launch` reads for it
    rules: list[EngineRule]
    # a release newer than the newest one modelled: the newest era answers, and says so
    warning: str | None = None
    # its offload and KV-tier rules with their sources (engine/offload.py; empty: none)
    offload: list[str] = Field(default_factory=list)


class EngineList(BaseModel):
    schema_version: int = 1
    engines: list[EngineEra]


def _era(engine: ServingEngine, lowest: str, below: str | None, default: bool) -> EngineEra:
    return EngineEra(engine=engine.name, versions=engine.versions, lowest=lowest, below=below,
                     version=engine.version, label=engine.label, default=default,
                     summary=engine.summary,
                     programs=[" ".join(p) for p in engine.programs],
                     rules=[EngineRule(rule=r, source=s) for r, s in engine.rules],
                     warning=engine.release_warning, offload=_offload(engine))


def _offload(engine: ServingEngine) -> list[str]:
    rules = engine.offload_rules()
    return list(rules.sources) if rules is not None else []


def engine_list() -> EngineList:
    """Every era, newest era of each engine first, as the registry orders them."""
    seen: set[str] = set()
    found = []
    for engine, lowest, below in era_ranges():
        found.append(_era(engine, lowest, below, engine.name not in seen))
        seen.add(engine.name)
    return EngineList(engines=found)


def engine_detail(spec: str) -> EngineEra:
    """The era `NAME` or `NAME@VERSION` names (InputError for an unknown one)."""
    engine = get(spec)
    default = get(engine.name)
    for era, lowest, below in era_ranges():
        if era.name == engine.name and era.versions == engine.versions:
            return _era(engine, lowest, below, era is default)
    return _era(engine, engine.version, None, engine is default)


class DiffSide(BaseModel):
    """What one release does with the model on the devices (the binding worker's figures)."""

    engine: str  # as --engine spelt it
    label: str
    warning: str | None  # a release newer than the newest modelled
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    weight_bytes: int
    reserve_bytes: int
    cuda_graph_bytes: int
    kv_pool_bytes: int
    kv_bytes_per_token: int
    kv_tokens: int
    max_concurrency: float
    startup_error: str | None


class EngineDiff(BaseModel):
    """`inventory engines --diff A B MODEL -d DEV`: what changed for one model between two
    releases, on the same split: the KV tokens before and after, each figure that moved,
    and the rules one era has and the other not."""

    schema_version: int = 1
    model: str
    device: str
    count: int
    tp: int
    pp: int
    ep: int
    context: int
    kv_dtype: str
    before: DiffSide
    after: DiffSide
    kv_tokens_change: int
    kv_tokens_change_ratio: float | None  # after ÷ before − 1 (None: no tokens before)
    moved: list[str]  # the settings and figures that differ, in words
    rules_added: list[EngineRule]  # rules of the later era the earlier lacks
    rules_removed: list[EngineRule]  # rules of the earlier era the later lacks


def _side(name: str, result: PlacementResult) -> DiffSide:
    from llm_inventory.errors import InputError

    plan = result.plans[0] if result.plans else None
    fit = plan.per_device if plan is not None else None
    if plan is None or fit is None:
        raise InputError("engine", f"{name} has no plan for this model on these devices")
    engine = get(name)
    return DiffSide(
        engine=name, label=engine.label,
        warning=engine.release_warning,
        gpu_memory_utilization=result.gpu_memory_utilization,
        max_num_batched_tokens=result.max_num_batched_tokens,
        max_num_seqs=result.max_num_seqs, block_size=result.block_size,
        weight_bytes=fit.weight_bytes, reserve_bytes=fit.reserve_bytes,
        cuda_graph_bytes=fit.reserve.cuda_graph_bytes if fit.reserve else 0,
        kv_pool_bytes=fit.kv_pool_bytes, kv_bytes_per_token=fit.kv_bytes_per_token,
        kv_tokens=fit.kv_capacity_tokens, max_concurrency=plan.max_concurrency or 0.0,
        startup_error=plan.startup_error)


_MOVES: tuple[tuple[str, str, bool], ...] = (
    # (field, words, a byte figure)
    ("gpu_memory_utilization", "memory fraction", False),
    ("max_num_batched_tokens", "max_num_batched_tokens", False),
    ("max_num_seqs", "max_num_seqs", False),
    ("block_size", "block size", False),
    ("weight_bytes", "weights", True),
    ("cuda_graph_bytes", "CUDA-graph memory (estimate)", True),
    ("reserve_bytes", "reserve (estimate)", True),
    ("kv_bytes_per_token", "KV bytes per token", False),
    ("kv_pool_bytes", "KV pool", True),
)


def _moved(before: DiffSide, after: DiffSide) -> list[str]:
    from llm_inventory.units import GIB

    found = []
    for field, words, in_bytes in _MOVES:
        old, new = getattr(before, field), getattr(after, field)
        if old == new:
            continue
        if in_bytes:
            found.append(f"{words}: {old / GIB:.2f} → {new / GIB:.2f} GiB")
        else:
            found.append(f"{words}: {old:,} → {new:,}")
    return found


def engine_diff(spec: ModelSpec, request: PlacementRequest, before: str,
                after: str) -> EngineDiff:
    """`before` and `after` (NAME@VERSION) on the same split: the best plan `before` finds
    for `request`, its tp/pp/ep pinned for both (InputError when either has none)."""
    from llm_inventory.engine.placement import plan_placement
    from llm_inventory.errors import InputError

    first = plan_placement(spec, request.model_copy(update={"engine": before}))
    legal = [p for p in first.plans if p.legal and p.per_device is not None]
    if not legal:
        raise InputError("model", f"{before} finds no legal split of the model on "
                         f"{request.count} × {request.device.id}")
    best = legal[0]
    pinned = request.model_copy(update={"tp": best.tp, "pp": best.pp, "ep": best.ep,
                                        "limit": 1})
    a = plan_placement(spec, pinned.model_copy(update={"engine": before}))
    b = plan_placement(spec, pinned.model_copy(update={"engine": after}))
    side_a, side_b = _side(before, a), _side(after, b)
    rules_a = {(r, s) for r, s in get(before).rules}
    rules_b = {(r, s) for r, s in get(after).rules}
    change = side_b.kv_tokens - side_a.kv_tokens
    return EngineDiff(
        model=a.model, device=a.device, count=request.count, tp=best.tp, pp=best.pp,
        ep=best.ep, context=a.context, kv_dtype=a.kv_dtype, before=side_a, after=side_b,
        kv_tokens_change=change,
        kv_tokens_change_ratio=round(change / side_a.kv_tokens, 4) if side_a.kv_tokens
        else None,
        moved=_moved(side_a, side_b),
        rules_added=[EngineRule(rule=r, source=s) for r, s in get(after).rules
                     if (r, s) not in rules_a],
        rules_removed=[EngineRule(rule=r, source=s) for r, s in get(before).rules
                       if (r, s) not in rules_b])
