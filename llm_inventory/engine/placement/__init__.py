"""Every split of a model over N devices: legal or not and why, and whether it fits.

Splits: tensor (TP), pipeline (PP), expert (EP, MoE only: experts spread over the TP × DP
ranks of an engine instance, each expert whole), data (DP: instances), encoder
disaggregation and prefill/decode disaggregation. The search runs in jobs, one module each:
`candidates` (the shapes worth judging, bounded by construction), `legality` (why a shape is
illegal, what to warn about), `fit` (memory per stage, as the serving engine accounts for
it: see `engine/serving/`), `ranking` (what "best first" means) and `report` (plans, the
per-TP summary, refused splits, the smallest fit). `facts` holds what every shape reuses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm_inventory.engine.model_state import context_notes
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.placement.candidates import Shape, shapes
from llm_inventory.engine.placement.facts import ModelFacts, model_facts
from llm_inventory.engine.placement.fit import Sized, size, variant
from llm_inventory.engine.placement.fit import fits as fit_of
from llm_inventory.engine.placement.legality import Judge, model_refusals
from llm_inventory.engine.placement.models import (
    ORDERS,
    DeviceFit,
    PlacementRequest,
    PlacementResult,
    Plan,
    RefusedSplit,
    SmallestFit,
    SortKey,
    StageFit,
    WidthSummary,
    WouldFit,
)
from llm_inventory.engine.placement.ranking import sort_plans
from llm_inventory.engine.placement.report import (
    PLACEMENT_REGIME,
    Reporter,
    refused,
    smallest,
    widths,
)
from llm_inventory.engine.timing.calibration import Calibration, engine_release, timing_trust
from llm_inventory.engine.trust import Trust, counted, counted_state, engine_rule, estimate, exact
from llm_inventory.engine.trust import bound as bound_trust
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec

__all__ = ["ORDERS", "DeviceFit", "PlacementRequest", "PlacementResult", "Plan",
           "RefusedSplit", "SmallestFit", "SortKey", "StageFit", "WidthSummary", "WouldFit",
           "plan_placement"]


def _check_pins(request: PlacementRequest) -> None:
    """Pinned dimensions that cannot exist on the devices given are bad input."""
    tp, pp = request.tp or 1, request.pp or 1
    group = max(tp, request.ep or 1)
    if group * pp > request.count:
        pins = " × ".join(f"{name} {value}" for name, value in
                          (("tp", request.tp), ("ep", request.ep), ("pp", request.pp))
                          if value)
        raise InputError("count", f"{pins} needs {group * pp} devices; --count is "
                         f"{request.count}")


def _check_partition(spec: ModelSpec, request: PlacementRequest, facts: ModelFacts) -> None:
    """A layer partition is the engine's (vLLM's VLLM_PP_LAYER_PARTITION): one positive
    count per stage of the pinned pp, summing to the layers, as get_pp_indices
    (vllm/distributed/utils.py) requires."""
    partition = request.pp_layer_partition
    if partition is None:
        return
    name = facts.engine.layer_partition
    if name is None:
        raise InputError("pp_layer_partition", f"{facts.engine.label} takes no layer "
                         "partition; vLLM does (VLLM_PP_LAYER_PARTITION)")
    if request.pp != len(partition):
        raise InputError("pp_layer_partition", f"{name} gives {len(partition)} stages; pin "
                         f"--pp {len(partition)}")
    if any(n < 1 for n in partition) or sum(partition) != facts.layers:
        raise InputError("pp_layer_partition", f"{name} must give every stage at least one "
                         f"layer and {facts.layers} in all, got {sum(partition)}")


def _judge_all(facts: ModelFacts) -> list[Sized]:
    """Every candidate shape, judged; legal ones (and the per-TP rows) sized."""
    judge = Judge(facts)
    judged = []
    for shape in shapes(facts):
        verdict = judge(shape)
        plain = shape.pp == 1 and shape.ep == 1
        if verdict.legal or plain:
            judged.append(size(facts, shape, verdict.reasons, verdict.warnings))
        else:
            judged.append(_unsized(shape, verdict.reasons, verdict.warnings))
    return judged


def _unsized(shape: Shape, reasons: list[str], warnings: list[str]) -> Sized:
    return Sized(shape=shape, dp=0, reasons=reasons, warnings=warnings, weights=[],
                 reserves=[], layouts=[], measures=[], pools=[], ranges=[], binding=0,
                 concurrency=None, fits=False, experts_per_rank=None)


def _variants(facts: ModelFacts, legal: list[Sized]) -> list[Sized]:
    """Encoder and prefill/decode disaggregation of the legal shapes, where the devices
    allow at least one replica."""
    count = facts.request.count
    found: list[Sized] = []
    if not facts.engine.disaggregates:
        return found
    for sized in legal:
        if facts.has_encoder and sized.shape.devices <= count - 1:
            found.append(variant(facts, sized, "encoder"))
        if facts.state and 2 * sized.shape.devices <= count:
            found.append(variant(facts, sized, "prefill/decode"))
    return found


@dataclass
class Search:
    """A placement search before a workload's concurrency judges its shapes: the facts,
    every shape judged and sized, and the reporter whose memo tables (timings,
    capacities) every concurrency shares."""

    facts: ModelFacts
    judged: list[Sized]
    legal: list[Sized]  # the legal shapes and their disaggregated variants
    variants: int
    reporter: Reporter


def search(spec: ModelSpec, request: PlacementRequest) -> Search:
    """Enumerate, judge and size every split of `request` (its concurrency only sets which
    fit: `result_of` judges them for any other). Raises InputError for pins the devices
    cannot hold and for settings the engine refuses."""
    _check_pins(request)
    facts = model_facts(spec, request)
    _check_partition(spec, request, facts)
    judged = _judge_all(facts)
    legal = [s for s in judged if s.legal]
    disaggregated = _variants(facts, legal)
    return Search(facts=facts, judged=judged, legal=legal + disaggregated,
                  variants=len(disaggregated), reporter=Reporter(facts))


def plan_placement(spec: ModelSpec, request: PlacementRequest) -> PlacementResult:
    """Enumerate, judge and size every split; plans in the order `request.sort` defines
    (see `ranking.py`); illegal splits listed once each in `refused`.

    Raises InputError for pins the devices cannot hold and for settings the engine refuses.
    """
    return result_of(spec, search(spec, request), request.concurrency)


def result_of(spec: ModelSpec, found: Search, concurrency: int) -> PlacementResult:
    """A search's result for a workload of `concurrency` requests at its context: only
    which shapes fit, and so the order, the verdicts and the smallest fit, depend on it (a
    sweep judges one search at every concurrency it asks)."""
    facts = found.facts
    if concurrency != facts.request.concurrency:
        facts = replace(facts, request=facts.request.model_copy(
            update={"concurrency": concurrency}))
    request = facts.request
    judged = [replace(s, fits=fit_of(facts, s)) if s.weights else s for s in found.judged]
    legal = [replace(s, fits=fit_of(facts, s)) for s in found.legal]
    disaggregated = legal[len(legal) - found.variants:] if found.variants else []
    reporter = found.reporter
    reporter.facts = facts
    plans = [reporter.plan(s) for s in legal]
    notes = context_notes(spec, facts.context)
    if facts.engine.release_warning:
        notes.append(facts.engine.release_warning)
    from llm_inventory.engine.placement.features import feature_notes

    notes += feature_notes(facts)
    limit = facts.engine.context_limit(spec)
    refusal = None
    if limit is not None and facts.context > limit and not request.allow_long_context:
        refusal = (f"{facts.engine.label} refuses a context of {facts.context:,} tokens: "
                   f"the model has {limit:,} positions")
        for plan in plans:
            plan.fits, plan.why, plan.devices_needed = False, refusal, None
    ordered = sort_plans(plans, request.sort, request.concurrency)
    shown = ordered[:request.limit] if request.limit else ordered
    settings = facts.settings
    return PlacementResult(
        model=spec.name,
        exact=spec.exact,
        estimated=spec.estimated,
        device=request.device.id,
        device_memory_bytes=request.device.memory_bytes,
        count=request.count,
        per_node=facts.per_node,
        engine=facts.engine.name,
        engine_version=facts.engine.version,
        context=facts.context,
        context_limit=limit,
        concurrency=request.concurrency,
        gpu_memory_utilization=settings.memory_fraction,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        max_num_seqs=settings.max_num_seqs,
        block_size=settings.block_size,
        weight_dtype=facts.weight_dtype,
        weights=facts.scheme,
        kv_dtype=settings.kv_dtype,
        estimate=facts.engine.estimate_note(settings) or (
            "weights and KV bytes are exact; the reserve (activation peak of a profiling "
            f"pass over {settings.max_num_batched_tokens:,} tokens and "
            f"{min(settings.max_num_seqs, settings.max_num_batched_tokens):,} sampled rows, "
            "plus non-torch memory) is an estimate calibrated on "
            f"{facts.engine.calibrated_on or facts.engine.label + ' start-ups'}"
        ),
        sort=request.sort,
        order=ORDERS[request.sort],
        candidates=len(judged) + len(disaggregated),
        legal=len(legal),
        fitting=sum(1 for p in plans if p.fits),
        shown=len(shown),
        model_weight_bytes=_replica_weights(spec, request, facts),
        usable_bytes=facts.usable,
        notes=notes,
        smallest=None if refusal else smallest(plans),
        widths=widths(facts, [s for s in judged if s.weights]),
        refused=refused(model_refusals(facts), [s for s in judged if not s.legal]),
        plans=shown,
        trust=_trust(facts, request),
    )


def _trust(facts: ModelFacts, request: PlacementRequest) -> dict[str, Trust]:
    """How each field group of a placement result was obtained."""
    from llm_inventory.spec.calibration import default_calibration

    cal = (request.calibration or default_calibration()).for_engine(
        engine_release(request.engine, facts.engine))
    label = facts.engine.label
    return {**_groups(facts, request, cal, label), **_speculative_trust(facts)}


def _speculative_trust(facts: ModelFacts) -> dict[str, Trust]:
    """How the speculative figures were obtained (nothing when none is asked); a drafter
    that is an estimate makes the weights and state it joins estimates too."""
    from llm_inventory.engine.speculative import speculative_trust

    if facts.request.speculative is None:
        return {}
    found = speculative_trust(facts)
    if found["speculative"].kind != "estimate" or facts.drafter(facts.request.tp or 1) is None:
        return found
    basis = found["speculative"].basis
    return {**found, "weights": estimate(f"the target's counted, the drafter's: {basis}"),
            "state": estimate(f"the target's counted, the drafter's layers: {basis}")}


def _groups(facts: ModelFacts, request: PlacementRequest, cal: Calibration,
            label: str) -> dict[str, Trust]:
    from llm_inventory.engine.gguf_tensors import gguf_trust
    from llm_inventory.engine.serving.bands import reserve_trust

    return {
        # A checkpoint's headers keep the weights exact even for an estimated architecture.
        "weights": (exact("read from the checkpoint's tensors, with the engine's padding")
                    if facts.layout.from_checkpoint else
                    gguf_trust(facts.spec, facts.quant) or
                    counted(facts.spec, "counted from the model's tensors, with the engine's "
                            "padding")),
        "state": counted_state(facts.spec, "bytes per token and per sequence, as each layer kind "
                         "keeps them"),
        "kv_pool": facts.engine.rule_trust(f"{label}'s budget, blocks and maximum "
                                           "concurrency"),
        "reserve": reserve_trust(facts.engine, request.device),
        "timing": timing_trust(cal, PLACEMENT_REGIME, request.device,
                               f"fitted on published {cal.fitted_by} measurements",
                               engine=engine_release(request.engine, facts.engine)),
        "timing_bound": bound_trust("datasheet peak FLOP/s, memory and link bandwidth at "
                                    "100 % (timing.roofline_*)"),
        **_tiers_trust(facts, request),
    }


def _tiers_trust(facts: ModelFacts, request: PlacementRequest) -> dict[str, Trust]:
    """With offload asked: the tiers' bytes follow the engine's rules; the host link's time
    is bytes over the link's peak, an estimate (none without offload)."""
    if not request.offload.active:
        return {}
    from llm_inventory.engine.trust import estimate

    return {
        "tiers": engine_rule(f"{facts.engine.label}'s offload rules (weights moved up to the "
                             "limit, short of it by at most one tensor; host KV as the engine "
                             "sizes it; LMCache's tokens estimated)"),
        "tiers_time": estimate("bytes over the host link's peak bandwidth (weights every "
                               "forward, a prefix reload before the first token)"),
    }


def _replica_weights(spec: ModelSpec, request: PlacementRequest, facts: ModelFacts) -> int:
    """One whole replica's weights: the checkpoint's own bytes when its headers were read."""
    if spec.checkpoint is None or request.dtype is not None:
        return count_parameters(spec, request.dtype).weight_bytes
    return sum(facts.stage_weights(1, 1, 1)) - facts.layout.buffers
