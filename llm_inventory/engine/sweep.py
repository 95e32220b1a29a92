"""The operating envelope: placement at every point of a grid of contexts, concurrencies,
KV dtypes, weight dtypes and engines, one cell per point (at most MAX_CELLS cells and
bounds.SEARCHES searches).

A cell is exactly the placement run at its point (its best plan, in placement's order): the
search runs once per engine, weight dtype, KV dtype and context, and every concurrency is
judged on it (`placement.result_of`), so a grid costs about one search per context.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from llm_inventory.engine.placement import (
    PlacementRequest,
    PlacementResult,
    Plan,
    result_of,
    search,
)
from llm_inventory.engine.trust import Trust
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec
from llm_inventory.spec.prices import PriceCatalog

#: Cells one sweep may ask for (each is a placement's verdict; the grid is their product).
MAX_CELLS = 4096


class SweepCell(BaseModel):
    """One point of the grid: its inputs, then placement's verdict there (its best plan)."""

    context: int
    concurrency: int
    kv_dtype: str
    dtype: str
    engine: str  # NAME@VERSION as it answered
    fits: bool
    why: str | None  # why the best plan does not fit
    plan: str | None  # "tp4 pp1 ×2", with P/D or enc
    tp: int | None
    pp: int | None
    ep: int | None
    dp: int | None
    devices_used: int | None
    kv_tokens: int | None  # the binding device's KV pool, tokens
    max_concurrency: float | None  # per engine, as the engine prints it
    total_concurrency: float | None  # every engine together
    ttft_s: float | None  # calibrated
    tpot_s: float | None
    tokens_per_s: float | None  # decode output tokens/s of every replica together
    price_per_hour: float | None  # devices used × the cheapest on-demand rate known
    price_per_million_tokens: float | None
    launch: list[str] = Field(default_factory=list)  # the best plan's command lines
    trust: dict[str, Trust] = Field(default_factory=dict)


class SweepResult(BaseModel):
    schema_version: int = 1
    model: str
    device: str
    device_memory_bytes: int
    count: int
    contexts: list[int]
    concurrencies: list[int]
    kv_dtypes: list[str]
    dtypes: list[str]
    engines: list[str]
    cells: list[SweepCell]  # context, then concurrency, KV dtype, dtype, engine vary slowest
    price_source: str | None = None


def _label(plan: Plan) -> str:
    mode = {"encoder": " enc", "prefill/decode": " P/D"}.get(plan.disaggregation or "", "")
    ep = f" ep{plan.ep}" if plan.ep > 1 else ""
    return f"tp{plan.tp} pp{plan.pp}{ep} ×{plan.dp}{mode}"


def cell_of(result: PlacementResult, rate: float | None, launch: list[str]) -> SweepCell:
    """A placement result as its grid cell: the inputs and its best plan's figures."""
    plan = result.plans[0] if result.plans else None
    timing = plan.timing if plan is not None else None
    tokens = timing.tokens_per_s_per_replica * plan.dp \
        if timing is not None and plan is not None and plan.dp else None
    hourly = rate * plan.devices_used if rate is not None and plan is not None else None
    per_million = hourly / (tokens * 3600) * 1e6 if hourly and tokens else None
    return SweepCell(
        context=result.context, concurrency=result.concurrency, kv_dtype=result.kv_dtype,
        dtype=result.weight_dtype, engine=f"{result.engine}@{result.engine_version}",
        fits=plan is not None and plan.fits, why=plan.why if plan is not None else
        "no legal split", plan=_label(plan) if plan is not None else None,
        tp=plan.tp if plan else None, pp=plan.pp if plan else None,
        ep=plan.ep if plan else None, dp=plan.dp if plan else None,
        devices_used=plan.devices_used if plan else None,
        kv_tokens=plan.per_device.kv_capacity_tokens if plan and plan.per_device else None,
        max_concurrency=plan.max_concurrency if plan else None,
        total_concurrency=plan.total_concurrency if plan else None,
        ttft_s=timing.ttft_s if timing else None, tpot_s=timing.tpot_s if timing else None,
        tokens_per_s=tokens, price_per_hour=hourly, price_per_million_tokens=per_million,
        launch=launch, trust=dict(result.trust))


def cheapest_rate(prices: PriceCatalog | None, device: str) -> tuple[float, str] | None:
    """The cheapest on-demand rate per device-hour the catalog knows, and its source."""
    if prices is None:
        return None
    found = [p for p in prices.prices if p.device == device]
    if not found:
        return None
    best = min(found, key=lambda p: p.on_demand)
    return best.on_demand, f"{best.provider} {best.offer}, {best.as_of} ({best.source})"


def sweep(spec: ModelSpec, base: PlacementRequest, *, contexts: list[int],
          concurrencies: list[int], kv_dtypes: list[str | None], dtypes: list[str | None],
          engines: list[str], prices: PriceCatalog | None = None,
          reference: str | None = None) -> SweepResult:
    """Every cell of the grid, each the placement at its point. `reference` (the model as
    the user named it) writes each best plan's launch lines; InputError past MAX_CELLS."""
    cells_asked = (len(contexts) * len(concurrencies) * len(kv_dtypes) * len(dtypes)
                   * len(engines))
    if cells_asked > MAX_CELLS:
        raise InputError("context", f"{cells_asked:,} cells asked; a sweep holds at most "
                         f"{MAX_CELLS:,} (narrow a list)")
    from llm_inventory.bounds import SEARCHES

    searches = len(contexts) * len(kv_dtypes) * len(dtypes) * len(engines)
    if searches > SEARCHES.limit:
        raise InputError("context", f"{searches:,} searches asked (contexts × KV dtypes × "
                         f"dtypes × engines; every concurrency shares one); a request is "
                         f"limited to {SEARCHES.limit} ({SEARCHES.reason})")
    rate = cheapest_rate(prices, base.device.id)
    by_point: dict[tuple[int, int, int, int, int], SweepCell] = {}
    for e, engine in enumerate(engines):
        for d, dtype in enumerate(dtypes):
            for k, kv in enumerate(kv_dtypes):
                for c, context in enumerate(contexts):
                    request = base.model_copy(update={
                        "engine": engine, "dtype": dtype, "kv_dtype": kv, "context": context,
                        "concurrency": concurrencies[0]})
                    found = search(spec, request)
                    for n, users in enumerate(concurrencies):
                        result = result_of(spec, found, users)
                        launch: list[str] = []
                        if reference is not None and result.plans:
                            from llm_inventory.engine.launch_lines import with_launch_lines

                            best = result.model_copy(update={"plans": result.plans[:1]})
                            lined = with_launch_lines(best, found.facts.request, reference)
                            launch = lined.plans[0].launch or []
                        by_point[(c, n, k, d, e)] = cell_of(
                            result, rate[0] if rate else None, launch)
    cells = [by_point[key] for key in sorted(by_point)]

    def seen(values: list[str]) -> list[str]:
        return list(dict.fromkeys(values))

    return SweepResult(
        model=spec.name, device=base.device.id, device_memory_bytes=base.device.memory_bytes,
        count=base.count, contexts=contexts, concurrencies=concurrencies,
        kv_dtypes=seen([c.kv_dtype for c in cells]), dtypes=seen([c.dtype for c in cells]),
        engines=seen([c.engine for c in cells]), cells=cells,
        price_source=rate[1] if rate else None)
