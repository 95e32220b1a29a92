"""Plans out of sized shapes: per-device figures, the longest context that fits, timings,
the engine's start-up lines, the per-TP summary, the refused splits and the smallest fit."""

from __future__ import annotations

import math

from llm_inventory.engine.experts import expected_distinct_experts
from llm_inventory.engine.placement.facts import ModelFacts
from llm_inventory.engine.placement.fit import Sized, why_not
from llm_inventory.engine.placement.fit import devices_used as fit_devices_used
from llm_inventory.engine.placement.models import (
    DeviceFit,
    HostFit,
    Plan,
    RefusedSplit,
    SmallestFit,
    StageFit,
    WidthSummary,
)
from llm_inventory.engine.placement.tiers import with_tiers
from llm_inventory.engine.roofline import Timing, roofline
from llm_inventory.engine.serving.base import KvCapacity, KvLayer, PoolLayout, StartupContext
from llm_inventory.engine.serving.paged import longest_context
from llm_inventory.engine.speculative import speculative_fit
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.engine.tensors import TensorGroup
from llm_inventory.engine.timing.calibration import Calibration, engine_release, timing_trust
from llm_inventory.engine.timing.profile import ModelWork, WorkProfile, model_work, work_profile
from llm_inventory.engine.trust import percent
from llm_inventory.units import DTYPE_BITS, format_bytes

# Placement times a batch at what one engine holds, every request in: the offline regime.
PLACEMENT_REGIME = "offline maximum"


class Reporter:
    """Turns sized shapes into plans, reusing what every plan of a search shares."""

    def __init__(self, facts: ModelFacts) -> None:
        self.facts = facts
        self._work: dict[tuple[str, int], tuple[int, int]] = {}
        self._handover: int | None = None
        self._groups: list[TensorGroup] | None = None
        self._profiles: dict[tuple[int, int, int], WorkProfile | None] = {}
        self._model_work: ModelWork | None = None
        self._capacities: dict[tuple[object, int], tuple[PoolLayout, KvCapacity]] = {}
        self._timings: dict[tuple[int, ...], Timing | None] = {}
        self._longest: dict[tuple[tuple[KvLayer, ...], int], int] = {}

    def capacity(self, layout: PoolLayout, pool: int) -> KvCapacity:
        """`layout.capacity(pool)`, once per (layout, pool) in a search: a plan asks for its
        binding stage's, every stage's start-up figures and, when a request does not fit,
        each stage's longest context (a search over max_model_len)."""
        # Keyed by the layout's content (every engine's layout is a frozen dataclass): the
        # stages of a deep pipeline mostly hold alike layers, and a stage that cannot hold
        # one request searches max_model_len, so a distinct layout object per stage and plan
        # repeated that search millions of times (pp 1,024 over 4,096 layers).
        key: tuple[object, int]
        try:
            key = (layout, pool)
            found = self._capacities.get(key)
        except TypeError:  # an unhashable layout: kept beside its figures, so its id stays
            key = (id(layout), pool)
            found = self._capacities.get(key)
        if found is None:
            found = self._capacities[key] = (layout, layout.capacity(pool))
        return found[1]

    def plan(self, sized: Sized) -> Plan:
        facts, request = self.facts, self.facts.request
        shape, b = sized.shape, sized.binding
        cap = self.capacity(sized.layouts[b], sized.pools[b])
        reserve = sized.reserves[b]
        stage = sized.ranges[b]
        per_seq = facts.sequence_bytes(shape.tp, stage.start, stage.stop, facts.context)
        fits_context = longest = None
        if facts.state and per_seq:  # a model whose layers keep nothing has no context to fit
            fits_context = (sized.concurrency or 0) >= 1
            if not fits_context:
                longest = self.longest_context(sized)
        devices_used = fit_devices_used(shape, sized.dp)
        warnings = list(sized.warnings)
        idle = max(0, request.count - devices_used)
        if idle and sized.legal:
            warnings.append(f"{idle} of {request.count} devices idle")
        fallback = facts.engine.context_fallback(cap, facts.settings) if facts.state else None
        if fallback and sized.legal:
            warnings.append(fallback)
        timing = self.timing(sized) if sized.legal and all(p > 0 for p in sized.pools) \
            else None
        tiers = sized.tiers
        timing = with_tiers(timing, tiers, shape.devices,
                            facts.settings.max_num_batched_tokens)
        if tiers is not None:
            warnings += tiers.warnings
        handover = self.handover() if shape.disaggregation == "prefill/decode" else None
        concurrency = sized.concurrency
        speculative = speculative_fit(facts, shape.tp, shape.ep, cap.bytes_per_token,
                                      cap.tokens, timing) \
            if request.speculative is not None else None
        if speculative is not None and speculative.on_top_bytes:
            warnings.append(f"the drafter's {format_bytes(speculative.on_top_bytes)} are "
                            "allocated beyond the engine's budget: "
                            f"{speculative.rule}")
        from llm_inventory.engine.placement.report_features import feature_fits

        features = feature_fits(facts, sized)
        warnings.extend(features.warnings)
        report = facts.engine.startup(
            cap, sized.pools[b], facts.settings,
            StartupContext(device=request.device,
                           weight_bytes=sized.weights[b] + features.loaded_bytes,
                           reserve=reserve)) if facts.state else None
        return Plan(
            tp=shape.tp, pp=shape.pp, ep=shape.ep, dp=sized.dp,
            devices_per_replica=shape.devices, devices_used=min(devices_used, request.count),
            idle_devices=idle, disaggregation=shape.disaggregation, legal=sized.legal,
            reasons=sized.reasons, warnings=warnings, fits=sized.fits,
            why=why_not(facts, sized), fits_context=fits_context, longest_context=longest,
            max_concurrency=round(concurrency, 4) if concurrency is not None else None,
            engines=sized.engines,
            total_concurrency=round(concurrency * sized.engines, 4)
            if concurrency is not None else None,
            devices_needed=self.devices_needed(sized),
            per_device=DeviceFit(
                memory_bytes=request.device.memory_bytes,
                usable_bytes=facts.usable,
                weight_bytes=sized.weights[b],
                reserve_bytes=reserve.reserve_bytes,
                reserve=reserve,
                kv_pool_bytes=sized.layouts[b].allocated(sized.pools[b]),
                kv_capacity_tokens=cap.tokens,
                kv_blocks=cap.blocks,
                kv_bytes_per_token=cap.bytes_per_token,
                state_bytes_per_sequence=per_seq,
                workload_bytes=per_seq * request.concurrency,
                others_bytes=sized.others,
                others_error=sized.refused,
                **_slots(cap, facts.engine.state_slots_knob),
                lora=features.lora, multimodal=features.multimodal,
            ),
            stages=[StageFit(stage=i, layers=len(sized.ranges[i]),
                             weight_bytes=sized.weights[i],
                             reserve_bytes=sized.reserves[i].reserve_bytes,
                             kv_pool_bytes=sized.layouts[i].allocated(sized.pools[i]),
                             kv_blocks=sized.measures[i][0],
                             kv_capacity_tokens=sized.measures[i][1])
                    for i in range(len(sized.weights))],
            experts_per_rank=sized.experts_per_rank,
            kv_handover_bytes=handover,
            timing=timing,
            startup=(features.with_startup(self.startup_lines(sized, report.lines))
                     if report is not None else [])
            + (tiers.startup if tiers is not None else []),
            startup_error=sized.refused or (report.error if report is not None else None),
            host=self.host(sized),
            speculative=speculative,
            tiers=tiers,
        )

    def startup_lines(self, sized: Sized, binding: list[str]) -> list[str]:
        """The engine's lines over every stage and the host, when it prints them so (else
        the binding worker's)."""
        facts = self.facts
        own = facts.engine.plan_startup_lines(
            [self.capacity(lay, pool)
             for lay, pool in zip(sized.layouts, sized.pools, strict=True)],
            sized.layouts, sized.pools, sized.binding, facts.settings, self.host_layout(sized))
        return binding if own is None else own

    def host_layout(self, sized: Sized) -> PoolLayout | None:
        """The caches of the layers the engine keeps in host RAM (None: none)."""
        facts, shape = self.facts, sized.shape
        share = facts.engine.host_share(facts.layout, sized.ranges,
                                        facts.stage_shape(shape.tp, shape.pp, shape.ep, 0),
                                        facts.settings)
        if share is None:
            return None
        cached = facts.engine.host_kv_layers(share[0], facts.layers, facts.settings)
        if not len(cached):
            return None
        return facts.engine.host_pool_layout(facts.kv_layers(1, cached.start, cached.stop),
                                             facts.settings)

    def host(self, sized: Sized) -> HostFit | None:
        """What the engine keeps in host RAM for this plan (None: nothing)."""
        facts = self.facts
        shape = sized.shape
        share = facts.engine.host_share(facts.layout, sized.ranges,
                                        facts.stage_shape(shape.tp, shape.pp, shape.ep, 0),
                                        facts.settings)
        if share is None:
            return None
        layers, weights, compute = share
        kv = 0
        cached = facts.engine.host_kv_layers(layers, facts.layers, facts.settings)
        if len(cached):
            # the host holds what its layers' caches take, whatever the room
            kv = facts.engine.host_pool_layout(facts.kv_layers(1, cached.start, cached.stop),
                                               facts.settings).allocated(2**62)
        return HostFit(layers=len(layers), weight_bytes=weights, kv_bytes=kv,
                       compute_bytes=compute, total_bytes=weights + kv + compute)

    def longest_context(self, sized: Sized) -> int:
        """The longest max_model_len one request fits, over every stage (0: none): as the
        engine's pool layout finds it, else by vLLM's paging."""
        facts = self.facts
        found = []
        for r, pool, layout in zip(sized.ranges, sized.pools, sized.layouts, strict=True):
            cap = self.capacity(layout, pool)
            if cap.max_concurrency >= 1 or not layout.keeps_state:
                found.append(facts.context)
            elif cap.longest_context is not None:
                found.append(cap.longest_context)
            else:
                # Stages holding the same layers in the same pool have the same answer: a
                # search over max_model_len once per kind of stage, not once per stage of
                # every plan (pp 1,024 over 4,096 layers asked it millions of times).
                layers = facts.kv_layers(sized.shape.tp, r.start, r.stop)
                key = (layers, pool)
                if key not in self._longest:
                    self._longest[key] = longest_context(
                        layers, pool, block_size=facts.settings.block_size,
                        max_num_batched_tokens=facts.settings.max_num_batched_tokens,
                        upper=facts.context)
                found.append(self._longest[key])
        return min(found)

    def devices_needed(self, sized: Sized) -> int | None:
        """Devices this shape needs to serve the workload: whole replicas, each holding its
        engines' concurrency (None when one request at the context does not fit)."""
        if not sized.legal or not all(p > 0 for p in sized.pools):
            return None
        shape = sized.shape
        per_replica = 1 if sized.dp < 1 else sized.engines // max(1, sized.dp)
        if sized.concurrency is None:
            count = 1
        elif sized.concurrency < 1:
            return None
        else:
            count = math.ceil(self.facts.request.concurrency
                              / (sized.concurrency * per_replica) - 1e-9)
        devices = count * shape.devices
        if shape.disaggregation == "encoder":
            devices += 1
        if shape.disaggregation == "prefill/decode":
            devices *= 2
        return devices

    def handover(self) -> int:
        """KV one request hands from the prefill pool to the decode pool, at the context."""
        if self._handover is None:
            facts = self.facts
            self._handover = size_state(StateRequest(
                layers=facts.state, tokens=facts.context,
                dtype=facts.kv_dtype)).bytes_per_sequence
        return self._handover

    def _phase(self, phase: str, rows: int) -> tuple[int, int]:
        """(FLOPs, weight bytes read) of one phase over `rows` rows, memoised."""
        key = (phase, rows)
        if key not in self._work:
            from llm_inventory.engine.params import count_parameters
            from llm_inventory.engine.shapes import phase_work
            from llm_inventory.engine.tensors import model_tensors

            facts, spec = self.facts, self.facts.spec
            if self._groups is None:
                self._groups = model_tensors(spec) if spec.coarse is None else []
            groups = self._groups
            coarse = count_parameters(spec, facts.request.dtype) if spec.coarse else None
            if phase == "prefill":
                work = phase_work(spec, groups, phase="prefill", tokens=rows, sequences=1,
                                  context=rows, state_bytes=0, dtype=facts.weight_dtype,
                                  quant=facts.quant, coarse=coarse)
            else:
                work = phase_work(spec, groups, phase="decode", tokens=1, sequences=rows,
                                  context=facts.context, state_bytes=0,
                                  dtype=facts.weight_dtype, quant=facts.quant, coarse=coarse)
            self._work[key] = (work.flops, work.weight_bytes_read)
        return self._work[key]

    def timing(self, sized: Sized) -> Timing | None:
        """Prefill/decode for one replica of a sized, legal plan: the calibrated estimate, with
        the roofline (see roofline.py) kept beside it as the physics bound.

        Decode batch: --batch, else as many requests as one engine holds at --context (at
        most max_num_seqs); weights read per step count routed experts only as the batch
        touches them.
        """
        facts, request, s = self.facts, self.facts.request, self.facts.stack
        if s is None or not s.shaped:
            return None
        shape = sized.shape
        concurrency = int(sized.concurrency or 0)
        batch = request.batch or max(1, min(concurrency, facts.settings.max_num_seqs))
        prompt = request.prompt_tokens or min(1000, facts.context)
        weights = sum(sized.weights)
        state = sum(facts.sequence_bytes(shape.tp, r.start, r.stop, facts.context)
                    for r in sized.ranges)
        # Everything below reads these and the search's constants only: a disaggregated
        # variant, or another plan of the same shape and batch, has the same times.
        key = (shape.tp, shape.pp, shape.ep, shape.devices, batch, prompt, weights, state)
        if key not in self._timings:
            self._timings[key] = self._timing(sized, batch, prompt, weights, state)
        found = self._timings[key]
        return None if found is None else found.model_copy()

    def _timing(self, sized: Sized, batch: int, prompt: int, weights: int,
                state: int) -> Timing | None:
        facts, request, s = self.facts, self.facts.request, self.facts.stack
        assert s is not None
        shape = sized.shape
        prefill_flops, _ = self._phase("prefill", prompt)
        decode_flops, _ = self._phase("decode", batch)
        # Expert bytes the device holds: an engine that keeps experts (or whole layers) in
        # host memory (llama.cpp's -ngl, --n-cpu-moe) reads none of those from the device,
        # so the untouched share is taken off what it holds, never below zero.
        experts = min(facts.expert_bytes(shape.tp, shape.ep), float(weights))
        # pp micro-batches of batch ÷ pp sequences cross the stages, each stage reading its
        # weights once per micro-batch (so the rank's whole weights per round, the experts
        # a micro-batch touches) and the state of the sequences it holds: batch ÷ pp, split
        # again over data-parallel attention groups (ep ÷ tp) with expert parallelism
        micro = max(1, round(batch / shape.pp))
        groups = shape.ep // shape.tp if shape.ep > shape.tp and shape.ep % shape.tp == 0 \
            else 1
        touched = prompt_touched = 1.0
        if facts.moe is not None:  # routed experts count only as the tokens touch them
            touched = expected_distinct_experts(facts.moe.experts, facts.moe.top_k,
                                                micro) / facts.moe.experts
            prompt_touched = expected_distinct_experts(facts.moe.experts, facts.moe.top_k,
                                                       prompt) / facts.moe.experts
        hidden = s.hidden_size or 0
        act = facts.act_bits // 8
        bits = facts.quant.bits if facts.quant is not None else DTYPE_BITS[facts.weight_dtype]
        bound = roofline(
            request.device, tp=shape.tp, devices_per_replica=shape.devices,
            weight_bits=int(bits), batch=batch, prompt_tokens=prompt,
            prefill_flops=prefill_flops,
            prefill_bytes_per_device=int(weights - experts * (1 - prompt_touched)),
            prefill_allreduce=2 * facts.layers * prompt * hidden * act,
            decode_flops=decode_flops,
            decode_bytes_per_device=int(weights - experts * (1 - touched)
                                        + batch * state / (shape.pp * groups)),
            decode_allreduce=2 * facts.layers * batch * hidden * act,
            efficiency=request.efficiency, stages=shape.pp,
        )
        if bound is None:
            return None
        return self.calibrated(sized, bound)

    def calibrated(self, sized: Sized, bound: Timing) -> Timing:
        """The calibrated estimate (`engine/timing/`) for the same batch and prompt, with the
        roofline kept beside it as the physics bound."""
        from llm_inventory.engine.timing.serving import busy_ttft
        from llm_inventory.engine.timing.step import Load, round_time
        from llm_inventory.spec.calibration import default_calibration

        facts, shape = self.facts, sized.shape
        key = (shape.tp, shape.pp, shape.ep)
        if key not in self._profiles:
            if self._model_work is None:
                self._model_work = model_work(facts)
            self._profiles[key] = work_profile(facts, *key, work=self._model_work)
        profile = self._profiles[key]
        if profile is None:
            return bound
        cal = (facts.request.calibration or default_calibration()).for_engine(
            engine_release(facts.request.engine, facts.engine))
        chunk = facts.settings.max_num_batched_tokens
        tpot = round_time(profile, cal, Load(decode=bound.batch, context=facts.context),
                          chunk).seconds
        ttft = busy_ttft(profile, cal, isl=bound.prompt_tokens, decoding=bound.batch - 1,
                         context=facts.context, chunk=chunk)
        trust = timing_trust(cal, PLACEMENT_REGIME, facts.request.device, "",
                             engine=engine_release(facts.request.engine, facts.engine))
        band = trust.band
        per_replica = bound.batch / tpot
        return bound.model_copy(update={
            "estimate": timing_estimate(cal, facts.engine.label, PLACEMENT_REGIME),
            "ttft_s": ttft, "tpot_s": tpot, "decode_step_s": tpot,
            "tokens_per_s_per_replica": per_replica,
            "tokens_per_s_per_device": per_replica / max(1, shape.devices),
            "trust": trust.label(), "band": band,
            "roofline_ttft_s": bound.ttft_s, "roofline_tpot_s": bound.tpot_s,
        })


def timing_estimate(cal: Calibration, engine: str, regime: str) -> str:
    """What the calibrated times are, in one sentence: their band is the p90 error on the
    published measurements the fit did not see (of the regime that matches how they are
    used, where it has such rows)."""
    rows = cal.unseen_rows(regime)
    own = any(e.held_out and e.regime == regime for e in cal.errors)
    where = (f"in the {regime} regime" if own else
             f"of any regime (none unseen in the {regime} regime: extrapolated)")
    source = (f"{cal.engine}'s, timed with {cal.constants_of}'s constants"
              if cal.constants_of is not None else
              f"{cal.engine}'s" if engine.lower().startswith(cal.engine.lower().split()[0])
              else f"{cal.engine}'s, not {engine}'s")
    return (f"calibrated ({percent(cal.band(regime))}, the p90 error {where} over {rows:,} "
            f"published measurements the fit did not see, {source}): achievable fractions "
            "of peak FLOP/s and bandwidth per device, step and layer overheads, attention "
            "and expert efficiency, collectives over the links")


def widths(facts: ModelFacts, judged: list[Sized]) -> list[WidthSummary]:
    """Each TP width at pp 1 (no EP, no disaggregation), in order."""
    rows = []
    for sized in judged:
        shape = sized.shape
        if shape.pp != 1 or shape.ep != 1 or shape.disaggregation is not None:
            continue
        state = facts.sequence_bytes(shape.tp, 0, facts.layers, facts.context)
        why = sized.reasons[0] if sized.reasons else why_not(facts, sized)
        rows.append(WidthSummary(
            tp=shape.tp, legal=sized.legal, fits=sized.fits, weight_bytes=sized.weights[0],
            state_bytes_per_sequence=state,
            max_concurrency=round(sized.concurrency, 2)
            if sized.concurrency is not None else None,
            why=why))
    return sorted(rows, key=lambda r: r.tp)


def refused(model_level: list[tuple[str, str]], judged: list[Sized]) -> list[RefusedSplit]:
    """Each reason once, with the splits it rules out (reasons that rule out the same splits
    are said together): the model's own refusals first."""
    by_reason: dict[str, list[str]] = {reason: [split] for split, reason in model_level}
    for sized in judged:
        for reason in sized.reasons:
            by_reason.setdefault(reason, []).append(sized.shape.label())
    by_splits: dict[tuple[str, ...], list[str]] = {}
    for reason, splits in by_reason.items():
        by_splits.setdefault(tuple(splits), []).append(reason)
    return [RefusedSplit(reason=_join(reasons), splits=list(splits))
            for splits, reasons in by_splits.items()]


def _join(reasons: list[str]) -> str:
    """Reasons said together: "tp 3 does not divide the 64 attention heads or the 8 KV
    heads" when they share their opening words, else one after another."""
    if len(reasons) > 1:
        head = reasons[0].split(" the ", 1)[0] + " the "
        if all(r.startswith(head) for r in reasons):
            parts = [r[len(head):] for r in reasons]
            return head + ", the ".join(parts[:-1]) + " or the " + parts[-1]
    return "; ".join(reasons)


def smallest(plans: list[Plan]) -> SmallestFit | None:
    """The fewest devices any plain (not disaggregated) shape serves the workload with."""
    best: Plan | None = None
    for plan in plans:
        if plan.disaggregation is not None or plan.devices_needed is None:
            continue
        if best is None or best.devices_needed is None or (
                plan.devices_needed, plan.tp, plan.pp) < (best.devices_needed, best.tp, best.pp):
            best = plan
    if best is None or best.devices_needed is None:
        return None
    return SmallestFit(devices=best.devices_needed, tp=best.tp, pp=best.pp, ep=best.ep,
                       replicas=best.devices_needed // best.devices_per_replica)


def _slots(cap: KvCapacity, knob: str | None) -> dict[str, object]:
    """The state-slot figures of a pool that keeps them apart (none otherwise)."""
    if not cap.state_slots and not cap.state_slot_bytes:
        return {}
    best = cap.state_slots_best_concurrency
    return {"state_slots": cap.state_slots, "state_slot_bytes": cap.state_slot_bytes,
            "state_slots_knob": knob, "state_slots_best": cap.state_slots_best,
            "state_slots_best_concurrency": round(best, 4) if best is not None else None}
