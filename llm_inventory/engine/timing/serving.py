"""Time under load: what a continuous-batching server does with a traffic shape.

Rules:
- A round advances every running sequence by one token; the prompts that arrived meanwhile
  ride in chunks of the token budget (at most max_num_batched_tokens a step), so the mean
  round pays for the prefill riding in some rounds and not others (`step.mean_round`: a
  decode-only round reads only the experts its decodes touch).
- Steady state at an arrival rate λ (requests/s): prompt tokens per round P = λ × ISL × t,
  decoding sequences N = λ × OSL × t (Little's law), t = round(N, P): solved as a fixed
  point. The batch is bounded by the KV pool (sequences at ISL + OSL) and max_num_seqs.
- TTFT: half a round waiting for the running step, the prompt's own chunks (ISL ÷ the
  step's free token budget, at least one round), and the wait behind other prompts, as an
  M/D/1 queue would (ρ S ÷ 2(1 − ρ), ρ the budget's utilisation).
- Past capacity (the batch at its bound, or prefill using every free token) the server is
  saturated: it serves μ requests/s, and a finite run of M requests waits on average
  M ÷ 2 × (1/μ − 1/λ) more before its first token.
- Closed loop at C concurrent users: λ = C ÷ (TTFT + OSL × TPOT), solved the same way for
  the rounds; TTFT and its percentiles from users who start together (`waves`): their
  prompts arrive in waves that wait for each other's prefill, not spread as at a rate.
- Offline (every request queued): the batch at its bound, each round admitting N × ISL ÷ OSL
  prompt tokens; a run with fewer requests than the bound prefills them all, then decodes.
- Static batching (no continuous batching): one prefill of the whole batch, then OSL − 1
  decode rounds at the mean context ISL + OSL/2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.timing.profile import WorkProfile
from llm_inventory.engine.timing.step import Load, mean_round, round_time


@dataclass(frozen=True)
class Served:
    """A server's steady state under one traffic shape."""

    ttft_s: float
    tpot_s: float
    concurrency: float  # sequences decoding at once (mean)
    requests_per_s: float
    output_tokens_per_s: float
    saturated: bool
    capacity_requests_per_s: float  # the most this replica sustains at these lengths
    ttft_p50_s: float | None = None  # percentiles where the load has a spread (closed loop)
    ttft_p90_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_p99_s: float | None = None


def prefill_alone(p: WorkProfile, cal: Calibration, isl: int, chunk: int) -> float:
    """Seconds from a lone prompt's arrival to its first token (nothing else running)."""
    steps = max(1, math.ceil(isl / chunk))
    # Each chunk attends what came before it: its share of the prompt's attention, which
    # depends on its size only. Every chunk but the last is full, so they cost the same:
    # priced once, not once per chunk (a 2^30-token prompt in chunks of 1 would loop 2^30
    # times).
    full = steps - 1
    total = 0.0
    if full:
        total = full * round_time(p, cal, Load(decode=0, context=1, prefill=chunk, prompt=isl,
                                                prompts=0), chunk).seconds
    last = isl - full * chunk
    return total + round_time(p, cal, Load(decode=0, context=1, prefill=last, prompt=isl,
                                           prompts=1), chunk).seconds


def static_batch(p: WorkProfile, cal: Calibration, batch: int, isl: int, osl: int) -> float:
    """Output tokens/s of one replica running `batch` requests together (no continuous
    batching): one prefill of every prompt, then OSL − 1 decode rounds."""
    prefill = round_time(p, cal, Load(decode=0, context=1, prefill=batch * isl, prompt=isl,
                                      prompts=batch), 1 << 40).seconds
    decode = round_time(p, cal, Load(decode=batch, context=isl + osl / 2), 1 << 40).seconds
    total = prefill + max(0, osl - 1) * decode
    return batch * osl / total


def _capacity(p: WorkProfile, cal: Calibration, isl: int, osl: int, cap: float,
              chunk: int) -> tuple[float, float]:
    """(requests/s, round seconds) with the batch at its bound and prompts admitted as
    sequences finish."""
    n = max(1.0, cap)
    t = mean_round(p, cal, Load(decode=n, context=isl + osl / 2, prefill=n * isl / osl,
                                prompt=isl, prompts=n / osl), chunk).seconds
    return n / (osl * t), t


def serve(p: WorkProfile, cal: Calibration, *, isl: int, osl: int, cap: float, chunk: int,
          rate: float | None = None, concurrency: float | None = None,
          requests: int | None = None, warmup: int = 0) -> Served:
    """The steady state at `rate` requests/s, or with `concurrency` users in a closed loop
    (see the module rules). `cap`: sequences the pool and max_num_seqs allow at once; a
    closed loop runs `requests` requests (default four per user) and measures all but the
    first `warmup`."""
    cap = max(1.0, cap)
    capacity, t_cap = _capacity(p, cal, isl, osl, cap, chunk)
    alone = prefill_alone(p, cal, isl, chunk)
    context = isl + osl / 2
    if concurrency is not None:
        lam = min(capacity, concurrency / (alone + osl * t_cap))
    else:
        lam = rate or 0.0
    t = round_time(p, cal, Load(decode=1, context=context), chunk).seconds
    for _ in range(100):
        offered = min(lam, capacity)
        n = min(cap, offered * osl * t)
        t_new = mean_round(p, cal, Load(decode=max(n, 1e-9), context=context,
                                        prefill=offered * isl * t, prompt=isl,
                                        prompts=offered * t), chunk).seconds
        t_new = min(t_new, t_cap) if offered >= capacity else t_new
        ttft = _first_token(p, cal, isl, context, n, offered, t_new, chunk, alone)
        if concurrency is not None:
            lam = 0.5 * lam + 0.5 * min(capacity, concurrency / (ttft + osl * t_new))
        done = abs(t_new - t) <= 1e-6 * t
        t = 0.5 * t + 0.5 * t_new
        if done:
            break
    saturated = lam >= capacity * (1 - 1e-6)
    served = min(lam, capacity)
    n = min(cap, served * osl * t)
    ttft = _first_token(p, cal, isl, context, n, served, t, chunk, alone)
    if concurrency is not None:
        from llm_inventory.engine.timing.waves import closed_loop

        waves = closed_loop(p, cal, isl=isl, osl=osl, cap=cap, chunk=chunk,
                            users=max(1, round(concurrency)), requests=requests,
                            warmup=warmup)
        return Served(ttft_s=waves.mean_ttft_s, tpot_s=t, concurrency=n, requests_per_s=served,
                      output_tokens_per_s=served * osl, saturated=False,
                      capacity_requests_per_s=capacity,
                      ttft_p50_s=waves.ttft_percentile(50),
                      ttft_p90_s=waves.ttft_percentile(90),
                      ttft_p95_s=waves.ttft_percentile(95),
                      ttft_p99_s=waves.ttft_percentile(99))
    if lam > capacity:
        ttft = ttft + requests / 2 * (1 / capacity - 1 / lam) if requests else math.inf
    return Served(ttft_s=ttft, tpot_s=t, concurrency=n, requests_per_s=served,
                  output_tokens_per_s=served * osl, saturated=saturated,
                  capacity_requests_per_s=capacity)


def _first_token(p: WorkProfile, cal: Calibration, isl: int, context: float, n: float,
                 lam: float, t: float, chunk: int, alone: float) -> float:
    """Mean TTFT at rate `lam` with `n` sequences decoding and rounds of `t` seconds: half a
    round's wait, then the round(s) carrying the prompt with those that arrived meanwhile,
    then the M/D/1 wait behind other prompts for the step's free token budget."""
    wait = 0.5 * t
    own = round_time(p, cal, Load(decode=max(n, 1e-9), context=context,
                                  prefill=isl * (1 + lam * wait), prompt=isl,
                                  prompts=1 + lam * wait), chunk).seconds
    budget = max(1.0, chunk - n * (1 + p.verify))
    rho = min(0.999, lam * isl * t / budget)
    queue = rho * own / (2 * (1 - rho))
    return max(alone, wait + own + queue) + cal.server_overhead_s


def offline(p: WorkProfile, cal: Calibration, *, isl: int, osl: int, cap: float, chunk: int,
            requests: int | None = None) -> float:
    """Output tokens/s of one replica with every request queued (see the module rules)."""
    cap = max(1.0, cap)
    if requests is not None and requests <= cap:
        n = float(requests)
        total = int(n * isl)
        full, rest = divmod(total, chunk)
        prefill = full * round_time(p, cal, Load(decode=0, context=1, prefill=chunk, prompt=isl,
                                                 prompts=chunk / isl), chunk).seconds
        if rest:
            prefill += round_time(p, cal, Load(decode=0, context=1, prefill=rest, prompt=isl,
                                               prompts=rest / isl), chunk).seconds
        decode = round_time(p, cal, Load(decode=n, context=isl + osl / 2), chunk).seconds
        return n * osl / (prefill + osl * decode)
    capacity, _ = _capacity(p, cal, isl, osl, cap, chunk)
    return capacity * osl



def busy_ttft(p: WorkProfile, cal: Calibration, *, isl: int, decoding: float,
              context: float, chunk: int) -> float:
    """TTFT of one prompt arriving while `decoding` sequences run (no other prompt queued):
    half a decode round's wait, then the round(s) carrying its chunks beside the decodes."""
    if decoding < 1:
        return prefill_alone(p, cal, isl, chunk) + cal.server_overhead_s
    t = round_time(p, cal, Load(decode=decoding, context=context), chunk).seconds
    own = round_time(p, cal, Load(decode=decoding, context=context, prefill=isl, prompt=isl,
                                  prompts=1), chunk, whole_prompts=True).seconds
    return 0.5 * t + own + cal.server_overhead_s
