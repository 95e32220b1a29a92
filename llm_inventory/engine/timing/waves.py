"""A closed loop as benchmark clients run it: users who start together, simulated step by step.

`vllm bench serve --max-concurrency C`, `sglang.bench_serving` and genai-perf/AIPerf in
concurrency mode start all C users at once, each sending its next request the moment the
previous one finishes, with fixed lengths. The prompts therefore arrive in waves that wait
for each other's prefill, not spread over time as a queue at a request rate assumes.

Rules (the engine's scheduler, as vLLM's v1 `Scheduler.schedule` in
`vllm/v1/core/sched/scheduler.py` does it; SGLang's and TensorRT-LLM's chunked prefill keep
the same token budget per step):
- Each step has a token budget, max_num_batched_tokens (`chunk`). Running sequences come
  first: every decoding sequence takes one token of it; prompts already admitted continue
  their prefill with what is left, in arrival order; then waiting prompts are admitted,
  first come first served, while the budget lasts and the KV pool (`cap` sequences) has a
  slot.
- A request reaches the engine when the server has taken it in: at once, or, with an
  admission time (an engine's constants), one after another, that long each; its TTFT counts
  from when the client sent it.
- A prompt whose last chunk runs in a step yields its first token at the end of that step;
  a sequence that produces its last output token frees its slot, and its user sends the
  next request at once.
- A step costs `step.round_time` of what it carries (the decodes, the prefill tokens, the
  prompts that finish in it). Steps that carry only decodes repeat at the same cost until
  a sequence finishes, so the simulation jumps over them: its work grows with the requests,
  not with the output lengths.
- The figures are over the requests the run measures: all of them (a finite run, as
  `vllm bench serve` counts), or, with `warmup`, all but the first `warmup` (a steady-state
  window, as genai-perf measures); percentiles from the simulated requests, not copies of
  the mean.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.timing.profile import WorkProfile
from llm_inventory.engine.timing.step import Load, round_time

#: The most requests one simulation runs (its cost grows with them).
MAX_REQUESTS = 4096


@dataclass(frozen=True)
class Waves:
    """What the measured requests of a closed loop saw."""

    ttft_s: tuple[float, ...]  # each measured request's time to first token, sorted
    tpot_s: float  # mean time per output token after the first
    running: float  # mean sequences in the running batch, over the measured window
    requests_per_s: float
    output_tokens_per_s: float

    @property
    def mean_ttft_s(self) -> float:
        return sum(self.ttft_s) / len(self.ttft_s)

    def ttft_percentile(self, q: float) -> float:
        """The q-th percentile (0–100) of TTFT, nearest rank."""
        values = self.ttft_s
        return values[max(0, math.ceil(q / 100 * len(values)) - 1)]


@dataclass
class _Seq:
    arrival: float  # when the engine has it (after the server has taken it in)
    prefill: int  # prompt tokens not yet processed
    decode: int  # output tokens not yet produced (after the first)
    index: int
    first: float = -1.0
    sent: float = 0.0  # when the client sent it (its TTFT counts from here)


def closed_loop(p: WorkProfile, cal: Calibration, *, isl: int, osl: int, cap: float,
                chunk: int, users: int, requests: int | None = None,
                warmup: int = 0, admission_s: float = 0.0) -> Waves:
    """Simulate `users` users who start together and run `requests` requests in all
    (default: four per user), and measure all but the first `warmup` (see the module
    rules). `admission_s`: the server takes requests in one at a time, this long each, so a
    burst reaches the engine spread over N × admission_s (0: every request at once)."""
    users = max(1, users)
    slots = max(1, int(cap))
    isl, osl, chunk = max(1, isl), max(1, osl), max(1, chunk)
    total = min(MAX_REQUESTS, max(users, requests if requests is not None else 4 * users))
    warmup = min(max(0, warmup), total - 1)
    context = isl + osl / 2
    cost: dict[tuple[int, int, int], float] = {}

    def step_s(decode: int, prefill: int, done: int) -> float:
        key = (decode, prefill, done)
        if key not in cost:
            cost[key] = round_time(p, cal, Load(decode=decode, context=context,
                                                prefill=prefill, prompt=isl,
                                                prompts=done), chunk).seconds
        return cost[key]

    now = 0.0
    issued = 0
    waiting: deque[_Seq] = deque()
    admitted = 0.0  # when the server is free to take the next request in

    def take_in(sent: float) -> _Seq:
        nonlocal admitted, issued
        admitted = max(sent, admitted) + admission_s
        seq = _Seq(admitted if admission_s else sent, isl, osl - 1, issued, sent=sent)
        issued += 1
        return seq

    for _ in range(min(users, total)):
        waiting.append(take_in(0.0))
    running: list[_Seq] = []  # admitted: prefilling (in arrival order) or decoding
    ttft: list[float] = []
    decode_time = 0.0
    decode_tokens = 0
    start = end = -1.0
    busy = 0.0  # integral of the running batch over the measured window
    finished = 0
    while finished < total:
        budget = chunk
        decoding = [s for s in running if s.prefill == 0]
        budget -= len(decoding) * (1 + p.verify)  # with the drafts each verifies
        chunks: list[tuple[_Seq, int]] = []
        for s in running:
            if s.prefill and budget > 0:
                take = min(s.prefill, budget)
                chunks.append((s, take))
                budget -= take
        while waiting and budget > 0 and len(running) < slots \
                and waiting[0].arrival <= now + 1e-12:
            s = waiting.popleft()
            running.append(s)
            take = min(s.prefill, budget)
            chunks.append((s, take))
            budget -= take
        prefill = sum(take for _, take in chunks)
        done = sum(1 for s, take in chunks if take == s.prefill)
        if not chunks and not decoding:
            if waiting:  # the next request has not reached the engine yet
                now = max(now, waiting[0].arrival)
                continue
            break  # nothing can run: cannot happen with slots ≥ 1
        repeat = 1
        dt = step_s(len(decoding), prefill, done)
        if not chunks:  # decode-only steps repeat until a sequence finishes
            repeat = max(1, min(s.decode for s in decoding))
            if waiting and waiting[0].arrival > now and len(running) < slots:
                # ... or until the next request reaches the engine
                repeat = max(1, min(repeat, math.ceil((waiting[0].arrival - now) / dt)))
        span = dt * repeat
        measuring = start >= 0
        if measuring:
            busy += len(running) * span
        now += span
        for s in decoding:
            s.decode -= repeat
        decode_time += span * len(decoding) if measuring else 0.0
        decode_tokens += repeat * len(decoding) if measuring else 0
        for s, take in chunks:
            s.prefill -= take
            if s.prefill == 0:
                s.first = now
                if s.index >= warmup:
                    ttft.append(now - s.sent + cal.server_overhead_s)
                    if start < 0:
                        start = now
        for s in [s for s in running if s.prefill == 0 and s.decode <= 0]:
            running.remove(s)
            finished += 1
            if s.index >= warmup:
                end = now
            if issued < total:
                waiting.append(take_in(now))
    window = max(end - start, 1e-12) if start >= 0 and end > start else max(now, 1e-12)
    measured = max(1, total - warmup)
    tpot = decode_time / decode_tokens if decode_tokens else step_s(1, 0, 0)
    return Waves(ttft_s=tuple(sorted(ttft)), tpot_s=tpot, running=busy / window,
                 requests_per_s=measured / window,
                 output_tokens_per_s=measured * osl / window)
