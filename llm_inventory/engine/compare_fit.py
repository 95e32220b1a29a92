"""`compare A B C -d DEV -n N`: for each model, whether it fits those devices and what it
holds there.

Per model: whether any legal plan fits one request at the context; the smallest fit
(fewest devices, from placement); the longest context one request fits on any plan of
the devices (placement asked again at the model's own limit: a paged pool does not
depend on the context asked, so the answer is the longest a request can grow to there);
and the most requests at the context the devices hold together (the plan ranked first by
concurrency), with that plan's launch line.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.placement.models import SmallestFit, WouldFit
from llm_inventory.engine.trust import Trust, engine_rule, exact
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec


class ModelFit(BaseModel):
    """One model on the devices compared."""

    schema_version: int = 1
    model: str
    device: str
    count: int
    engine: str
    context: int
    fits: bool
    smallest_fit: SmallestFit | None
    longest_context: int | None  # one request, on the plan that allows the longest
    max_concurrency: float | None  # requests at `context` every engine holds together
    plan: str | None  # the split holding them ("tp4 pp1 ×2")
    launch: list[str] = Field(default_factory=list)  # that plan's lines (one replica)
    why: str | None = None  # why nothing fits, when nothing does
    would_fit: WouldFit | None = None  # when nothing fits: what would (see would_fit.py)
    trust: dict[str, Trust] = Field(default_factory=dict)


def model_fit(spec: ModelSpec, request: PlacementRequest, reference: str,
              catalog: Sequence[Device] = ()) -> ModelFit:
    """How `spec` (named `reference` on the command line) fares on the request's devices;
    when nothing fits, what would (the smallest device from `catalog`)."""
    from llm_inventory.engine.launch_lines import with_launch_lines
    from llm_inventory.engine.would_fit import would_fit

    asked = request.model_copy(update={"sort": "concurrency", "limit": None})
    result = with_launch_lines(plan_placement(spec, asked), asked, reference)
    best = next((p for p in result.plans if p.fits), None)
    longest = _longest(spec, asked, result.context, result.context_limit)
    split = None
    if best is not None:
        split = (f"tp{best.tp} pp{best.pp}" + (f" ep{best.ep}" if best.ep > 1 else "")
                 + f" ×{best.dp}" + (" P/D" if best.disaggregation else ""))
    why = None
    wider = None
    if best is None:
        why = next((p.why for p in result.plans if p.legal and p.why), None) or (
            "no legal split" if not result.legal else None)
        wider = would_fit(spec, asked, result, catalog)
    return ModelFit(
        model=result.model, device=result.device, count=result.count,
        engine=f"{result.engine}@{result.engine_version}", context=result.context,
        fits=best is not None, smallest_fit=result.smallest, longest_context=longest,
        max_concurrency=best.total_concurrency if best is not None else None, plan=split,
        launch=best.launch if best is not None else [], why=why, would_fit=wider,
        trust={"fits": engine_rule("placement's pools, as the engine sizes them"),
               "smallest_fit": exact("whole devices of the plans that fit"),
               "longest_context": engine_rule("the engine's paging of one request"),
               "max_concurrency": engine_rule("every engine's pool at the context")})


def _longest(spec: ModelSpec, request: PlacementRequest, context: int,
             limit: int | None) -> int | None:
    """The longest context one request fits on any legal plan (None: none fits)."""
    upper = max(context, limit or context)
    wide = plan_placement(spec, request.model_copy(update={"context": upper}))
    found = [upper if p.fits_context is not False else (p.longest_context or 0)
             for p in wide.plans if p.legal and p.per_device is not None
             and p.per_device.kv_pool_bytes > 0]
    best = max(found, default=0)
    return best or None
