"""The evaluation behind `recommend` (see the package docstring for the rule)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from random import Random

from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.placement.facts import ModelFacts, model_facts
from llm_inventory.engine.recommend.models import (
    NEAR,
    OBJECTIVES,
    CapacityPoint,
    Cost,
    Latency,
    LengthBin,
    ParetoPoint,
    RecommendedPlan,
    RecommendRequest,
    RecommendResult,
    Status,
)
from llm_inventory.engine.serving import get as get_engine
from llm_inventory.engine.speculative import (
    accepted_length,
    plan_drafting_seconds,
    time_basis,
)
from llm_inventory.engine.timing.calibration import Calibration, engine_release, timing_trust
from llm_inventory.engine.timing.profile import ModelWork, WorkProfile, model_work, work_profile
from llm_inventory.engine.timing.serving import _first_token, prefill_alone, serve
from llm_inventory.engine.timing.step import Load, mean_round, round_time
from llm_inventory.engine.trust import Trust, engine_rule, exact
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

HOURS_PER_MONTH = 730


@dataclass
class Lengths:
    """The workload's lengths: the bins, their means and a seeded sample."""

    bins: list[LengthBin]
    isl: float
    osl: float
    sample: list[tuple[int, int]]

    @property
    def longest(self) -> int:
        return max(b.isl + b.osl for b in self.bins)


def _lengths(request: RecommendRequest) -> Lengths:
    w = request.workload
    bins = list(w.histogram) or [LengthBin(isl=w.isl, osl=w.osl)]
    weights = [b.weight for b in bins]
    total = sum(weights)
    if not math.isfinite(total):  # finite weights whose sum is not: relative ones instead
        weights = [x / max(weights) for x in weights]
        total = sum(weights)
    isl = sum(b.isl * x for b, x in zip(bins, weights, strict=True)) / total
    osl = sum(b.osl * x for b, x in zip(bins, weights, strict=True)) / total
    if len(bins) == 1:
        sample = [(bins[0].isl, bins[0].osl)]
    else:
        rng = Random(request.seed)
        picked = rng.choices(bins, weights=weights, k=request.samples)
        sample = [(b.isl, b.osl) for b in picked]
    return Lengths(bins=bins, isl=isl, osl=osl, sample=sample)


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def _batches(limit: int) -> list[int]:
    """Batches to try: powers of two up to the limit, and the limit."""
    found = {1, limit}
    b = 2
    while b < limit:
        found.add(b)
        b *= 2
    return sorted(found)


@dataclass
class Point:
    """One replica's steady state at an operating batch."""

    batch: int
    ttft: Latency
    tpot: Latency
    e2e: Latency
    rate: float  # requests/s one replica sustains at this batch (Little's law)


class Evaluator:
    """One device and engine: the placement search, its facts, and each plan's timing."""

    def __init__(self, spec: ModelSpec, request: RecommendRequest, device: Device,
                 engine: str, lengths: Lengths, cal: Calibration) -> None:
        self.spec, self.request, self.device, self.lengths, self.cal = (
            spec, request, device, lengths, cal)
        count = request.count or device.devices_per_node or 8
        self.count = count
        self.placement_request = PlacementRequest(
            device=device, count=count, engine=engine,
            context=request.context or lengths.longest, tp=request.tp, pp=request.pp,
            ep=request.ep, dtype=request.dtype, kv_dtype=request.kv_dtype, limit=None,
            calibration=cal, speculative=request.speculative,
            lora=request.lora, multimodal=request.multimodal,
            offload=request.offload, max_num_batched_tokens=request.max_num_batched_tokens,
            max_num_seqs=request.max_num_seqs,
            gpu_memory_utilization=request.gpu_memory_utilization)
        self.facts: ModelFacts = model_facts(spec, self.placement_request)
        # the engine's and release's own constants where they were fitted (`for_engine`)
        self.engine_release = engine_release(engine, self.facts.engine)
        self.cal = cal.for_engine(self.engine_release)
        self.placement_request = self.placement_request.model_copy(
            update={"calibration": self.cal})
        self.placed = plan_placement(spec, self.placement_request)
        self.chunk = self.facts.settings.max_num_batched_tokens
        self.encoder_s = self._encoder_seconds()
        self._profiles: dict[tuple[int, int, int], WorkProfile | None] = {}
        self._work: ModelWork | None = None

    def _encoder_seconds(self) -> float:
        """One request's media through the encoder on one device (0 without an encoder)."""
        if not self.facts.has_encoder:
            return 0.0
        from llm_inventory.engine.inventory import InventoryRequest, build_inventory
        from llm_inventory.engine.roofline import peak_flops

        inv = build_inventory(self.spec, InventoryRequest(context=self.lengths.longest))
        peak = peak_flops(self.device, 16)
        if inv.encoder is None or not peak:
            return 0.0
        return inv.encoder.flops / (peak * self.cal.device_efficiency(self.device).compute)

    def profile(self, plan: Plan) -> WorkProfile | None:
        key = (plan.tp, plan.pp, plan.ep)
        if key not in self._profiles:
            if self._work is None:
                self._work = model_work(self.facts)
            found = work_profile(self.facts, *key, work=self._work)
            spec = self.request.speculative
            if found is not None and spec is not None and spec.acceptance is not None:
                # each round verifies k drafts per sequence after drafting them
                rate = found.bandwidth * self.cal.device_efficiency(self.device).bandwidth
                found = replace(found, verify=spec.num_speculative_tokens,
                                draft_s=plan_drafting_seconds(self.facts, plan.tp, plan.ep,
                                                              rate))
            self._profiles[key] = found
        return self._profiles[key]

    @property
    def accepted(self) -> float:
        """Output tokens a round yields per decoding sequence: 1, or with speculative
        decoding at the user's acceptance rate (1 − a^(k+1)) ÷ (1 − a)."""
        spec = self.request.speculative
        if spec is None or spec.acceptance is None:
            return 1.0
        return accepted_length(spec.acceptance, spec.num_speculative_tokens)

    def rounds(self, osl: float) -> float:
        """Rounds a request of `osl` output tokens decodes for."""
        return max(1.0, osl / self.accepted)

    def batch_limit(self, plan: Plan) -> int:
        """Sequences one replica runs at once at the workload's mean lengths: its pools'
        KV tokens over ISL + OSL per sequence, at most max_num_seqs per engine. An engine
        that allocates what its context flags ask (llama.cpp) holds as many slots of the
        workload's context as the device's room takes; the launch command asks for them."""
        d = plan.per_device
        if d is None:
            return 0
        engines = max(1, plan.engines // max(1, plan.dp))
        if self.facts.engine.kv_from_context and d.state_bytes_per_sequence:
            room = d.usable_bytes - d.weight_bytes - d.reserve_bytes
            return int(max(0, room) / d.state_bytes_per_sequence) * engines
        block = max(1, self.facts.settings.block_size)  # a sequence holds whole blocks
        per_engine = d.kv_capacity_tokens / (
            math.ceil((self.lengths.isl + self.lengths.osl) / block) * block)
        if not d.kv_capacity_tokens:
            per_engine = float(self.facts.settings.max_num_seqs)
        per_engine = min(per_engine, float(self.facts.settings.max_num_seqs))
        return int(per_engine) * engines

    # --- timing ---------------------------------------------------------------------------

    def point(self, p: WorkProfile, batch: int, extra_ttft: float = 0.0) -> Point:
        """A replica with `batch` sequences decoding at ISL + OSL/2 and their prompts riding
        along (rule 3), with latency percentiles over the length sample."""
        lengths, cal, chunk = self.lengths, self.cal, self.chunk
        isl = self._prefill(lengths.isl)
        context = lengths.isl + lengths.osl / 2
        rounds = self.rounds(lengths.osl)
        t = mean_round(p, cal, Load(decode=batch, context=context, prefill=batch * isl
                                    / rounds, prompt=max(1, round(isl)),
                                    prompts=batch / rounds), chunk).seconds
        rate = batch / (rounds * t)
        return self._spread(p, batch, t / self.accepted, rate, extra_ttft, busy=batch,
                            round_s=t)

    def _prefill(self, isl: float) -> float:
        """Prompt tokens a prefill computes: the prefix cache serves the shared part."""
        return max(1.0, isl * (1 - self.request.workload.prefix_share))

    def _spread(self, p: WorkProfile, batch: int, t: float, rate: float, extra: float,
                busy: float, round_s: float | None = None) -> Point:
        """The percentiles over the length sample at TPOT `t`, the rounds lasting
        `round_s` (`t` unless a round yields more than one token)."""
        ttfts, e2es = [], []
        step = t if round_s is None else round_s
        # The sample draws from a few bins: each distinct prompt length is timed once (the
        # figure depends on it alone), not once per draw (200 draws, a few bins).
        by_isl: dict[int, float] = {}
        for isl, osl in self.lengths.sample:
            ttft = by_isl.get(isl)
            if ttft is None:
                own = max(1, round(self._prefill(isl)))
                alone = prefill_alone(p, self.cal, own, self.chunk)
                ttft = by_isl[isl] = _first_token(
                    p, self.cal, own, self.lengths.isl + self.lengths.osl / 2,
                    max(0.0, busy - 1), rate, step, self.chunk, alone) + extra
            ttfts.append(ttft)
            e2es.append(ttft + max(0, osl - 1) * t)
        ttft_l = Latency(p50=_percentile(ttfts, 0.5), p95=_percentile(ttfts, 0.95))
        return Point(batch=batch, ttft=ttft_l, tpot=Latency(p50=t, p95=t),
                     e2e=Latency(p50=_percentile(e2es, 0.5), p95=_percentile(e2es, 0.95)),
                     rate=rate)

    def under_load(self, p: WorkProfile, batch: int, rate: float | None,
                   concurrency: float | None, extra: float,
                   requests: int | None = None) -> tuple[Point, bool]:
        """The replica's real load: its share of the rate or of the users (and of a finite
        run's requests)."""
        lengths = self.lengths
        served = serve(p, self.cal, isl=max(1, round(self._prefill(lengths.isl))),
                       osl=max(1, round(self.rounds(lengths.osl))), cap=batch,
                       chunk=self.chunk, rate=rate, concurrency=concurrency,
                       requests=requests)
        point = self._spread(p, batch, served.tpot_s / self.accepted, served.requests_per_s,
                             extra, busy=served.concurrency, round_s=served.tpot_s)
        if served.saturated and requests and rate and served.capacity_requests_per_s:
            # a finite run past capacity: the i-th request waits i × (1/μ − 1/λ) behind the
            # others, so the median waits half the run's backlog and p95 0.95 of it
            backlog = requests * max(0.0, 1 / served.capacity_requests_per_s - 1 / rate)
            point.ttft = Latency(p50=point.ttft.p50 + 0.5 * backlog,
                                 p95=point.ttft.p95 + 0.95 * backlog)
            point.e2e = Latency(p50=point.e2e.p50 + 0.5 * backlog,
                                p95=point.e2e.p95 + 0.95 * backlog)
        if concurrency is not None and served.ttft_p50_s is not None:
            # users who start together wait in waves (and for a slot past the pool): the
            # percentiles of that schedule, with the length sample's spread on top
            shift = max(0.0, served.ttft_p50_s - point.ttft.p50)
            p95 = max(point.ttft.p95 + shift, served.ttft_p95_s or 0.0)
            point.e2e = Latency(p50=point.e2e.p50 + shift,
                                p95=point.e2e.p95 + p95 - point.ttft.p95)
            point.ttft = Latency(p50=point.ttft.p50 + shift, p95=p95)
        return point, served.saturated


def _judge(point: Point, request: RecommendRequest) -> tuple[Status, list[str]]:
    """meets / near miss (every target within 20 %) / misses, and what is missed."""
    t = request.targets
    key = t.percentile
    worst = 0.0
    missed = []
    for name, target, value in (("TTFT", t.ttft_s, getattr(point.ttft, key)),
                                ("TPOT", t.tpot_s, getattr(point.tpot, key)),
                                ("E2E", t.e2e_s, getattr(point.e2e, key))):
        if target is None:
            continue
        ratio = value / target
        worst = max(worst, ratio)
        if ratio > 1:
            shown = f"{value * 1000:,.0f} ms" if math.isfinite(value) else "unbounded"
            missed.append(f"{name} {key} {shown} > {target * 1000:,.0f} ms")
    if worst <= 1:
        return "meets", missed
    return ("near miss" if worst <= NEAR else "misses"), missed


def _cost(request: RecommendRequest, device: Device, gpus: int,
          tokens_per_s: float) -> Cost | None:
    """The cheapest matching price (the named provider's, spot where asked and published)."""
    from llm_inventory.spec.prices import price_catalog

    catalog = request.prices if request.prices is not None else price_catalog()
    offers = [p for p in catalog.prices if p.device == device.id
              and (request.provider is None or p.provider == request.provider)]
    if not offers:
        return None

    def rate(p: object) -> float:
        from llm_inventory.spec.prices import Price

        assert isinstance(p, Price)
        return p.spot if request.spot and p.spot is not None else p.on_demand

    best = min(offers, key=rate)
    per_gpu = rate(best)
    per_hour = per_gpu * gpus
    per_million = per_hour / (tokens_per_s * 3600) * 1e6 if tokens_per_s > 0 else None
    return Cost(provider=best.provider, offer=best.offer, price_per_gpu_hour=per_gpu,
                pricing="spot" if request.spot and best.spot is not None else "on-demand",
                as_of=best.as_of, source=best.source, per_hour=per_hour,
                per_month=per_hour * HOURS_PER_MONTH, per_million_output_tokens=per_million)


def _label(plan: Plan, replicas: int) -> str:
    text = f"tp{plan.tp} pp{plan.pp}" + (f" ep{plan.ep}" if plan.ep > 1 else "")
    text += f" ×{replicas}"
    return text + {"encoder": " enc", "prefill/decode": " P/D"}.get(plan.disaggregation or "", "")


def _choose_batch(ev: Evaluator, p: WorkProfile, limit: int, request: RecommendRequest,
                  extra: float) -> tuple[Point, list[Point]]:
    """The operating batch: the largest whose point meets the targets, else the best near
    miss, else batch 1; with every point tried (for the Pareto front)."""
    points = [ev.point(p, b, extra) for b in _batches(limit)]
    rank = {"meets": 0, "near miss": 1, "misses": 2}
    judged = [(rank[_judge(pt, request)[0]], -pt.batch, pt) for pt in points]
    best_status = min(j[0] for j in judged)
    if best_status == 2:
        return points[0], points
    return min((j for j in judged if j[0] == best_status), key=lambda j: j[1])[2], points


def _plain(ev: Evaluator, plan: Plan, request: RecommendRequest,
           pareto: list[ParetoPoint]) -> RecommendedPlan | None:
    p = ev.profile(plan)
    limit = ev.batch_limit(plan)
    if p is None or limit < 1:
        return None
    w = request.workload
    encoder_gpus = 0
    extra = 0.0
    notes: list[str] = []
    if ev.encoder_s:
        if plan.disaggregation == "encoder":
            extra = ev.encoder_s
        else:
            extra = ev.encoder_s / p.group
    if plan.tiers is not None and plan.tiers.reload_s:  # a prefix reloaded from the host
        extra += plan.tiers.reload_s
        notes.append(f"TTFT includes {plan.tiers.reload_s * 1e3:,.1f} ms reloading "
                      f"{plan.tiers.reload_tokens:,} prefix tokens from the host tier "
                      "(estimate)")
    op, points = _choose_batch(ev, p, limit, request, extra)
    per_gpu_rep = plan.devices_per_replica
    for pt in points:
        pareto.append(ParetoPoint(device=ev.device.id, engine=ev.placed.engine,
                                  label=_label(plan, 1), batch=pt.batch,
                                  tokens_per_s_per_gpu=pt.batch / pt.tpot.p50 / per_gpu_rep,
                                  tokens_per_s_per_user=1 / pt.tpot.p50, on_front=False))
    rate = None
    users = None
    pinned = request.replicas
    if w.qps is not None:
        per_replica = op.batch / (op.ttft.p50 + ev.lengths.osl * op.tpot.p50)
        replicas = pinned or max(1, math.ceil(w.qps / per_replica - 1e-9))
        rate = w.qps / replicas
    elif w.concurrency is not None:
        replicas = pinned or max(1, math.ceil(w.concurrency / op.batch - 1e-9))
        users = w.concurrency / replicas
        # a closed loop never has more requests in flight than its users: the engine is
        # sized to them, not to what its KV pool could hold
        op = replace(op, batch=min(op.batch, max(1, math.ceil(users - 1e-9))))
    else:
        replicas = pinned or 1
    # a finite run: each replica serves its share of the requests
    share = (max(1, math.ceil(request.requests / replicas - 1e-9))
             if request.requests is not None else None)
    if rate is not None or users is not None:
        final, saturated = ev.under_load(p, op.batch, rate, users, extra, share)
    else:  # no traffic given: the batch at its bound, every request queued
        final, saturated = op, False
    served = (min(w.qps, final.rate * replicas) if w.qps is not None and saturated else
              w.qps if w.qps is not None else
              final.rate * replicas if users is not None else op.rate * replicas)
    if plan.disaggregation == "encoder":
        encoder_gpus = max(1, math.ceil(served * ev.encoder_s))
        notes.append(f"{encoder_gpus} encoder GPU(s) beside the replicas")
    gpus = replicas * per_gpu_rep + encoder_gpus
    status, missed = _judge(final, request)
    if saturated and share is None:
        status = "misses"
        missed.append("the replicas cannot keep up with the rate")
    elif saturated:
        notes.append(f"past capacity: each replica's {share:,} requests queue, and the "
                     "TTFT counts their wait")
    tokens = served * ev.lengths.osl
    return _finish(ev, plan, request, replicas=replicas, gpus=gpus, batch=op.batch,
                   limit=limit, point=final, status=status, missed=missed, served=served,
                   tokens=tokens, notes=notes, saturated=saturated)


def _disaggregated(ev: Evaluator, plan: Plan, request: RecommendRequest) -> \
        RecommendedPlan | None:
    """Prefill and decode pools sized apart (rule 5)."""
    p = ev.profile(plan)
    limit = ev.batch_limit(plan)
    if p is None or limit < 1:
        return None
    w, lengths, cal, chunk = request.workload, ev.lengths, ev.cal, ev.chunk
    isl = max(1, round(ev._prefill(lengths.isl)))
    context = lengths.isl + lengths.osl / 2
    # decode pool: the largest batch meeting TPOT, no prompts riding in its steps
    best = None
    per_token = 1 / ev.accepted  # a round's share of each output token
    for b in _batches(limit):
        t = round_time(p, cal, Load(decode=b, context=context), chunk).seconds * per_token
        if request.targets.tpot_s is None or t <= request.targets.tpot_s or best is None:
            best = (b, t)
    assert best is not None
    batch, tpot = best
    if w.concurrency is not None and w.concurrency < batch:  # a closed loop: its users
        batch = w.concurrency
        tpot = round_time(p, cal, Load(decode=batch, context=context), chunk).seconds \
            * per_token
    rate = w.qps
    if rate is None:
        users = w.concurrency or batch
        rate = users / (prefill_alone(p, cal, isl, chunk) + lengths.osl * tpot)
    decode_replicas = request.decode_replicas or max(
        1, math.ceil(rate * lengths.osl * tpot / batch - 1e-9))
    # the decode pool at its load, not at its batch limit: each replica runs what Little's
    # law gives, n = rate ÷ replicas × OSL × TPOT(n), at most the batch (a closed loop's
    # rate follows its TPOT)
    running = float(batch)
    for _ in range(100):
        tpot = round_time(p, cal, Load(decode=max(1.0, running), context=context),
                          chunk).seconds * per_token
        if w.qps is None:
            rate = (w.concurrency or batch) / (prefill_alone(p, cal, isl, chunk)
                                               + lengths.osl * tpot)
        nxt = min(float(batch), rate / decode_replicas * lengths.osl * tpot)
        if abs(nxt - running) <= 1e-6 * max(1.0, running):
            break
        running = 0.5 * running + 0.5 * nxt
    # prefill pool: prompts at the chunk's rate; M/D/1 wait for the pool's free steps
    full = round_time(p, cal, Load(decode=0, context=1, prefill=chunk, prompt=isl,
                                   prompts=chunk / isl), chunk).seconds
    per_prompt = full * isl / chunk
    alone = prefill_alone(p, cal, isl, chunk)
    handoff = float(plan.kv_handover_bytes or 0) * lengths.isl / max(1, lengths.longest)
    link = ev.device.inter_node_bandwidth_bytes_per_s or ev.device.intra_node_bandwidth_bytes_per_s
    transfer = handoff / (link * plan.devices_per_replica) if link else 0.0
    target = request.targets.ttft_s
    prefill_replicas = 1
    ttft = math.inf
    for r in ([request.prefill_replicas] if request.prefill_replicas else range(1, 10_000)):
        prefill_replicas = r
        rho = rate * per_prompt / r
        if rho >= 1:  # a pinned pool that cannot keep up: its queue never drains
            ttft = math.inf
            continue
        ttft = alone + rho * per_prompt / (2 * (1 - rho)) + transfer + cal.server_overhead_s
        if target is None or ttft <= target or rho <= 0.5:
            break
    ttft_l = Latency(p50=ttft, p95=ttft)
    e2e = ttft + (lengths.osl - 1) * tpot
    point = Point(batch=batch, ttft=ttft_l, tpot=Latency(p50=tpot, p95=tpot),
                  e2e=Latency(p50=e2e, p95=e2e), rate=rate)
    status, missed = _judge(point, request)
    if not math.isfinite(ttft):
        status = "misses"
        missed.append("the prefill replicas cannot keep up with the rate")
    if rate * lengths.osl * tpot > batch * decode_replicas * (1 + 1e-9):
        status = "misses"
        missed.append("the decode replicas cannot hold the running sequences")
    gpus = (prefill_replicas + decode_replicas) * plan.devices_per_replica
    need = handoff * rate
    limit_bps = float(link * plan.devices_per_replica * prefill_replicas) if link else None
    notes = [f"{prefill_replicas} prefill and {decode_replicas} decode replicas; each request "
             f"hands {handoff / 1e6:,.0f} MB of KV over"]
    if limit_bps is not None and need > limit_bps:
        status = "misses"
        missed.append(f"KV hand-off {need / 1e9:,.1f} GB/s > the links' {limit_bps / 1e9:,.1f}")
    result = _finish(ev, plan, request, replicas=prefill_replicas + decode_replicas,
                     gpus=gpus, batch=batch, limit=limit, point=point, status=status,
                     missed=missed, served=rate, tokens=rate * lengths.osl, notes=notes,
                     saturated=False, decoding=decode_replicas)
    return result.model_copy(update={
        "prefill_replicas": prefill_replicas, "decode_replicas": decode_replicas,
        "handoff_bytes_per_s": need, "handoff_limit_bytes_per_s": limit_bps,
        "label": _label(plan, prefill_replicas + decode_replicas)})


def _finish(ev: Evaluator, plan: Plan, request: RecommendRequest, *, replicas: int,
            gpus: int, batch: int, limit: int, point: Point, status: Status,
            missed: list[str], served: float, tokens: float, notes: list[str],
            saturated: bool, decoding: int | None = None) -> RecommendedPlan:
    if request.count is not None and gpus > request.count:
        status = "misses"
        missed.append(f"needs {gpus} GPUs; --count allows {request.count}")
    energy = None
    if request.power_price is not None and ev.device.tdp_watts:
        energy = gpus * ev.device.tdp_watts / 1000 * request.power_price
    return RecommendedPlan(
        device=ev.device.id, engine=ev.placed.engine, engine_version=ev.placed.engine_version,
        tp=plan.tp, pp=plan.pp, ep=plan.ep, disaggregation=plan.disaggregation,
        label=_label(plan, replicas), gpus_per_replica=plan.devices_per_replica,
        replicas=replicas, gpus=gpus, batch=batch, batch_limit=limit, ttft=point.ttft,
        tpot=point.tpot, e2e=point.e2e, status=status, misses=missed,
        requests_per_s=served, tokens_per_s_per_gpu=tokens / max(1, gpus),
        # Little's law over the replicas that decode
        running_batch=min(float(batch), served / (decoding or replicas) * ev.lengths.osl
                          * point.tpot.p50),
        tokens_per_s_per_replica=tokens / max(1, replicas),
        tokens_per_s_per_user=1 / point.tpot.p50 if point.tpot.p50 else 0.0,
        cost=_cost(request, ev.device, gpus, tokens), energy_per_hour=energy,
        saturated=saturated, notes=notes, tiers=plan.tiers)


def _order(plans: list[RecommendedPlan], objective: str, percentile: str) -> \
        list[RecommendedPlan]:
    rank = {"meets": 0, "near miss": 1, "misses": 2}

    def per_hour(p: RecommendedPlan) -> float:
        return p.cost.per_hour if p.cost is not None else math.inf

    def key(p: RecommendedPlan) -> tuple[float, ...]:
        primary = {"cost": per_hour(p), "gpus": float(p.gpus),
                   "latency": getattr(p.e2e, percentile),
                   "throughput": -p.tokens_per_s_per_gpu}[objective]
        return (rank[p.status], primary, per_hour(p), float(p.gpus),
                0.0 if p.disaggregation is None else 1.0, float(p.tp), float(p.pp))

    return sorted(plans, key=key)


def _front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Mark the points no other beats on both tokens/s per GPU and per user.

    One sweep in falling tokens/s per GPU, not every pair (thousands of plans over several
    devices and engines made the pairwise test seconds): a point is beaten when a point of
    a higher per-GPU rate is at least as fast per user, or one of the same per-GPU rate is
    faster per user.
    """
    if any(math.isnan(p.tokens_per_s_per_gpu) or math.isnan(p.tokens_per_s_per_user)
           for p in points):
        return _front_pairwise(points)  # NaN orders nothing; only the pairwise test is exact
    order = sorted(range(len(points)), key=lambda i: -points[i].tokens_per_s_per_gpu)
    dominated = [False] * len(points)
    higher: float | None = None  # the best per-user rate among a higher per-GPU rate
    start = 0
    while start < len(order):
        rate = points[order[start]].tokens_per_s_per_gpu
        stop = start
        while stop < len(order) and points[order[stop]].tokens_per_s_per_gpu == rate:
            stop += 1
        group = order[start:stop]
        best = max(points[i].tokens_per_s_per_user for i in group)
        for i in group:
            user = points[i].tokens_per_s_per_user
            dominated[i] = (higher is not None and higher >= user) or best > user
        higher = best if higher is None else max(higher, best)
        start = stop
    return [p.model_copy(update={"on_front": not d}) for p, d in zip(points, dominated,
                                                                      strict=True)]


def _front_pairwise(points: list[ParetoPoint]) -> list[ParetoPoint]:
    out = []
    for a in points:
        dominated = any(b.tokens_per_s_per_gpu >= a.tokens_per_s_per_gpu
                        and b.tokens_per_s_per_user >= a.tokens_per_s_per_user
                        and (b.tokens_per_s_per_gpu > a.tokens_per_s_per_gpu
                             or b.tokens_per_s_per_user > a.tokens_per_s_per_user)
                        for b in points)
        out.append(a.model_copy(update={"on_front": not dominated}))
    return out


def _capacity(ev: Evaluator, plan: RecommendedPlan) -> list[CapacityPoint]:
    """The chosen plan's pool (its binding stage) held at contexts from 1,024 tokens to the
    model's limit: KV tokens and requests at that context."""
    from llm_inventory.engine.capacity import capacity_against_context, contexts_to

    limit = ev.spec.max_context or max(ev.lengths.longest, 131072)
    return capacity_against_context(ev.facts, plan.tp, plan.pp, plan.ep,
                                    contexts_to(limit, ev.lengths.longest))


def _check(spec: ModelSpec, request: RecommendRequest, lengths: Lengths) -> None:
    limit = spec.max_context
    if limit is not None and lengths.longest > limit:
        raise InputError("osl", f"ISL + OSL of {lengths.longest:,} tokens exceeds the "
                         f"{limit:,} positions of {spec.name}")
    if request.workload.qps is not None and request.workload.concurrency is not None:
        raise InputError("qps", "give --qps or --concurrency, not both")
    if request.context is not None:
        if request.context < lengths.longest:
            raise InputError("context", f"{request.context:,} tokens is shorter than the "
                             f"longest request (ISL + OSL {lengths.longest:,})")
        if limit is not None and request.context > limit:
            raise InputError("context", f"{request.context:,} tokens exceeds the {limit:,} "
                             f"positions of {spec.name}")


def recommend(spec: ModelSpec, request: RecommendRequest) -> RecommendResult:
    """Evaluate every plan on every device and engine asked, ranked by the objective.

    Raises InputError for lengths past the model's positions and for contradictory traffic.
    """
    from llm_inventory.engine.placement.report import timing_estimate
    from llm_inventory.spec.calibration import default_calibration

    cal = request.calibration or default_calibration()
    lengths = _lengths(request)
    _check(spec, request, lengths)
    if request.offload.weight_bytes:
        raise InputError("cpu_offload_gb", "recommend's step times read every weight from the "
                         "device; size weights moved to host memory with `placement "
                         "--cpu-offload-gb`")
    plans: list[RecommendedPlan] = []
    pareto: list[ParetoPoint] = []
    evaluators: dict[tuple[str, str], Evaluator] = {}
    if not any(d.runs(get_engine(e).name) for d in request.devices for e in request.engines):
        raise InputError("engine", "no engine asked runs on the devices asked: "
                         + "; ".join(f"{d.id} runs {', '.join(d.engines)}"
                                     for d in request.devices if d.engines))
    for device in request.devices:
        for engine in request.engines:
            if not device.runs(get_engine(engine).name):
                continue
            ev = Evaluator(spec, request, device, engine, lengths, cal)
            evaluators[(device.id, ev.placed.engine)] = ev
            for plan in ev.placed.plans:
                if not plan.legal or not plan.fits:
                    continue
                if plan.disaggregation is not None and not request.disaggregation:
                    continue
                if plan.disaggregation == "prefill/decode" and request.replicas is not None:
                    continue  # its pools are sized apart: --replicas cannot say them
                found = (_disaggregated(ev, plan, request)
                         if plan.disaggregation == "prefill/decode"
                         else _plain(ev, plan, request, pareto))
                if found is not None:
                    plans.append(found)
    ordered = _order(plans, request.objective, request.targets.percentile)
    chosen = ordered[0] if ordered else None
    launch: str | None = None
    equivalents: dict[str, str] = {}
    capacity: list[CapacityPoint] = []
    readback: dict[str, object] = {}
    if chosen is not None:
        ev = evaluators[(chosen.device, chosen.engine)]
        launch, equivalents = _launches(ev, chosen, request)
        capacity = _capacity(ev, chosen)
        if launch is not None:
            readback = _read_back(spec, ev, chosen, launch)
    shown = ordered[:request.limit] if request.limit else ordered
    loaded = request.workload.qps is not None or request.workload.concurrency is not None
    # the regime whose held-out rows band the chosen plan's times: prefill/decode pools have
    # no published measurement, so their band is the worst of the others (extrapolated)
    regime = ("prefill/decode" if chosen is not None
              and chosen.disaggregation == "prefill/decode" else
              "concurrency" if request.workload.concurrency is not None else
              "request rate" if loaded else "offline maximum")
    first = next(iter(evaluators.values()), None)
    engine_label = first.facts.engine.label if first is not None else ""
    # the evaluator of the chosen plan (else the first): its engine's constants timed it
    judged = evaluators[(chosen.device, chosen.engine)] if chosen is not None else first
    if judged is not None:
        cal = judged.cal
    # the engine's rule, or an estimate for a release past the eras read
    rule = judged.facts.engine.rule_trust if judged is not None else engine_rule
    notes = []
    if len(lengths.bins) == 1:
        notes.append("one length for every request: p95 is p50 (give --lengths for a spread; the "
                     "spread of queueing is not modelled)")
    if request.workload.qps is None and request.workload.concurrency is None:
        notes.append("no --qps or --concurrency: one replica with its batch at the bound")
    asked = request.speculative
    if asked is not None and asked.acceptance is None:
        notes.append(f"times leave {asked.method} speculative decoding out (its memory is "
                     "placed): give --acceptance for the tokens a step yields")
    elif asked is not None and asked.acceptance is not None:
        k = asked.num_speculative_tokens
        notes.append(f"TPOT with {asked.method} speculative decoding at your acceptance rate "
                     f"{asked.acceptance:g}: {accepted_length(asked.acceptance, k):.2f} tokens "
                     f"a round, each verifying {k} drafts after {k} drafting steps (estimate)")
    if request.context is None and launch is not None:
        notes.append(f"the launch context is the workload's longest request, ISL + OSL "
                     f"{lengths.longest:,} tokens: the engine refuses longer ones (give "
                     "--context for the longest you will serve; plans are sized at it)")
    return RecommendResult(
        model=spec.name, workload=request.workload, targets=request.targets,
        objective=request.objective, order=OBJECTIVES[request.objective],
        estimate=timing_estimate(cal, engine_label, regime), considered=len(plans),
        meeting=sum(1 for p in plans if p.status == "meets"), plans=shown, chosen=chosen,
        launch=launch, equivalents=equivalents, pareto=_front(pareto), capacity=capacity,
        **readback,
        notes=notes,
        trust={
            "gpus": exact("whole replicas of plans whose memory fits"),
            "batch_limit": rule("the engine's KV pool and max_num_seqs"),
            "latency": timing_trust(cal, regime, _chosen_device(request, chosen),
                                    f"the {regime} regime of published {cal.fitted_by} "
                                    "measurements", engine=_chosen_engine(chosen, evaluators)),
            "throughput": timing_trust(cal, regime, _chosen_device(request, chosen),
                                       "requests served at the operating batch",
                                       engine=_chosen_engine(chosen, evaluators)),
            **_speculative_trust(request),
            "cost": exact("price catalog × GPUs: as exact as the dated list price"),
            "launch": rule("the chosen command read back as `inventory launch` reads it: "
                           "the engine's own start-up lines"),
        },
    )


def _speculative_trust(request: RecommendRequest) -> dict[str, Trust]:
    """The label of times that rest on the user's acceptance rate (none without it)."""
    spec = request.speculative
    if spec is None or spec.acceptance is None:
        return {}
    from llm_inventory.engine.trust import estimate

    return {"speculative_time": estimate(
        time_basis(spec) + "; a round computes each sequence's k + 1 positions and reads "
        "its KV and the weights once")}


def _chosen_device(request: RecommendRequest, chosen: RecommendedPlan | None) -> Device | None:
    """The chosen plan's device (its measurements decide the band), None with no plan."""
    if chosen is None:
        return None
    return next((d for d in request.devices if d.id == chosen.device), None)


def _chosen_engine(chosen: RecommendedPlan | None,
                   evaluators: dict[tuple[str, str], Evaluator]) -> str | None:
    """The chosen plan's engine and release, NAME@VERSION."""
    if chosen is None:
        return None
    ev = evaluators.get((chosen.device, chosen.engine))
    return ev.engine_release if ev is not None else None


def _read_back(spec: ModelSpec, ev: Evaluator, plan: RecommendedPlan,
               launch: str) -> dict[str, object]:
    """`launch` (its first server line) read and predicted as `inventory launch` does, on
    one replica's GPUs (one pool's, for a prefill/decode pair: its servers are alike)."""
    import shlex

    from llm_inventory.engine import serving
    from llm_inventory.engine.launch import match_program, predict_launch

    era, rest = match_program(shlex.split(launch.splitlines()[0]))
    command = era.parse_launch(rest)
    engine = serving.get(f"{era.name}@{plan.engine_version}")
    # the drafter as asked (the line names it; its loaded shape is the request's)
    result = predict_launch(spec, command, engine, ev.device, plan.gpus_per_replica,
                            ev.request.speculative)
    d = result.plan.per_device
    return {"launch_startup": result.startup,
            "launch_kv_tokens": d.kv_capacity_tokens if d is not None else None,
            "launch_max_concurrency": result.plan.max_concurrency}


def _launches(ev: Evaluator, plan: RecommendedPlan, request: RecommendRequest) -> \
        tuple[str | None, dict[str, str]]:
    """The chosen plan's lines for its engine (a prefill/decode plan: both servers and the
    router), and for every other registered engine whose command line can say the plan
    (with that engine's own memory default: the fractions do not carry over)."""
    from llm_inventory.engine import serving
    from llm_inventory.engine.launch_lines import plan_lines
    from llm_inventory.engine.serving.launch_line import joined

    facts = ev.facts
    ranks = plan.ep // plan.tp if plan.ep > plan.tp and plan.ep % plan.tp == 0 else 1
    common = {"tp": plan.tp, "pp": plan.pp, "ep": plan.ep, "context": facts.context,
              "max_num_seqs": request.max_num_seqs or max(1, plan.batch // ranks),
              "max_num_batched_tokens": facts.settings.max_num_batched_tokens,
              "disaggregation": plan.disaggregation,
              "kv_dtype": request.kv_dtype,  # as asked: an engine's own word stays its own
              "quantization": request.dtype if request.dtype in ("fp8",) else None,
              "speculative": request.speculative,
              "lora": request.lora, "multimodal": request.multimodal}
    own = joined(plan_lines(facts.engine, request.model_ref,
                            memory_fraction=facts.settings.memory_fraction,
                            flags=dict(facts.settings.flags), **common))  # type: ignore[arg-type]
    others = {}
    for name in serving.names():
        if name != facts.engine.name and facts.request.device.runs(name):
            command = joined(plan_lines(serving.get(name), request.model_ref,
                                        **common))  # type: ignore[arg-type]
            if command is not None:
                others[name] = command
    return own, others
