"""The time of one engine step, and of one round in which every running sequence advances.

Rules (constants from `Calibration`):
- Compute: matmul FLOPs at the device's peak × its compute fraction; routed experts at
  `experts` × that rate, their busiest EP rank setting the pace (straggler, checked against
  the routing simulation); attention scores at `attention` × that rate (its share grows
  with context).
- Memory: the non-expert weights, the routed experts the step's tokens touch, and every
  decoding sequence's KV, at the device's bandwidth × its bandwidth fraction.
- The two join smoothly, (compute^n + memory^n)^(1/n): a step is neither purely
  compute- nor purely bandwidth-bound near the ridge point.
- Collectives add to it: TP all-reduce (2 per layer: fixed latency + ring payload
  2 × (tp − 1) / tp over the link × `link`), EP dispatch and combine per MoE layer.
- Overhead: `step_overhead_s` + `layer_overhead_s` per layer (scheduling, sampling, launch),
  + `sequence_overhead_s` per sequence the step carries (the host's work per request and
  step: scheduling, sampling, detokenizing and streaming its token; 0 unless an engine's
  constants say otherwise).
- CUDA graphs: a step that carries only decodes replays the graph the engine captured for
  its batch (vLLM's `CUDAGraphWrapper`/cudagraph_capture_sizes, SGLang's
  `CudaGraphRunner`, TensorRT-LLM's PyTorch `cuda_graph_config`): no kernel is launched
  from the host layer by layer, so it pays `graph_layer_overhead_s` per layer and
  `graph_collective_latency_s` per collective instead (when the calibration has them); a
  step with prefill tokens runs eagerly.
- Chunking: a step carries at most max_num_batched_tokens tokens; more make more steps.
- Speculative decoding: a decoding sequence computes its own token and the k drafted ones
  it verifies (matmuls, attention, lm_head and collectives over k + 1 positions; vLLM's
  scheduler counts them against max_num_batched_tokens, `Scheduler.schedule`), reading its
  KV once; the drafting the round needs first (`WorkProfile.draft_s`) adds to the round.
- Pipeline: a round crosses every stage once; each stage runs 1 ÷ pp of the layers for a
  micro-batch of 1 ÷ m of the sequences, m = min(pp, the round's sequences): a sequence is
  never split across micro-batches, so fewer sequences than stages leave stages idle (a
  lone prompt crosses the stages one after another, as vLLM schedules a request in flight
  once), and the prompt a TTFT waits for rides whole in one micro-batch.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.timing.profile import WorkProfile


@dataclass(frozen=True)
class Load:
    """What one round carries, over the whole replica."""

    decode: float  # sequences producing one token each
    context: float  # mean positions a decoding sequence attends
    prefill: float = 0.0  # prompt tokens riding in the round
    prompt: int = 0  # the prompt length those tokens come from (for attention's share)
    prompts: float = 0.0  # prompts that finish (and sample a token) in the round


@dataclass(frozen=True)
class StepCost:
    seconds: float
    compute_s: float
    memory_s: float
    communication_s: float
    overhead_s: float
    steps: int


@functools.lru_cache(maxsize=4096)
def ep_straggler(experts: int, top_k: int, tokens: int, ep: int) -> float:
    """Expected busiest-rank ÷ mean-rank load of `tokens` tokens routed uniformly over `ep`
    ranks of experts ÷ ep experts each.

    A token's top_k distinct experts put a hypergeometric count on a rank (mean k ÷ ep,
    variance k p (1 − p)(E − k) ÷ (E − 1), p = 1 ÷ ep); the busiest of ep ranks sits Blom's
    normal order statistic above the mean. `tests/engine/timing` checks it against the
    routing simulation (`engine/routing.py`), which is too slow to run per plan.
    """
    if ep <= 1 or experts <= 1 or tokens < 1:
        return 1.0
    from statistics import NormalDist

    p = 1 / ep
    mean = tokens * top_k * p
    spread = math.sqrt(tokens * top_k * p * (1 - p) * (experts - top_k) / (experts - 1))
    z = NormalDist().inv_cdf((ep - 0.375) / (ep + 0.25))
    factor = (mean + spread * z) / mean
    if mean < 1:  # the busiest rank holds at least one assignment
        factor = max(factor, 1 / mean)
    return min(float(ep), factor)


def _stage(p: WorkProfile, cal: Calibration, load: Load, share: float) -> StepCost:
    """One stage's step over `share` of the round's load."""
    eff = cal.device_efficiency(p.device)
    g = p.attention_groups
    # decodes spread over the attention-DP groups; a prompt is prefilled by one group, so
    # few prompts load few groups: the busiest group carries this many tokens
    prompts_in = math.ceil(load.prefill / load.prompt - 1e-9) if load.prompt else g
    g_prefill = min(g, max(1, prompts_in))
    positions = load.decode * (1 + p.verify)  # a decode's own token and those it verifies
    tokens = (positions + load.prefill) * share
    busiest = (positions / g + load.prefill / g_prefill) * share
    seqs = (positions + load.prompts) * share  # rows of logits: every verified position
    requests = (load.decode + load.prompts) * share  # the host's work is per sequence
    layer_share = 1 / p.pp
    rate = p.peak * eff.compute
    dense = (p.dense_flops_per_token * busiest + p.lm_head_flops * seqs / g) / p.tp
    compute = dense * layer_share / rate
    if p.expert_flops_per_token and tokens:
        straggle = ep_straggler(p.experts, p.top_k, max(1, round(tokens)), p.ep) \
            if p.ep > 1 else 1.0
        compute += (p.expert_flops_per_token * tokens * straggle / p.group * layer_share
                    / (rate * cal.experts))
    attn = 0.0
    if load.decode:
        attn += positions * share * p.attention_flops(max(0, round(load.context) - 1),
                                                      max(1, round(load.context))) / g
    if load.prefill and load.prompt:
        attn += load.prefill * share * p.attention_flops(0, load.prompt) / load.prompt \
            / g_prefill
    compute += attn / p.tp * layer_share / (rate * cal.attention)
    read = p.dense_weight_bytes + p.expert_weight_bytes * p.touched(tokens)
    read += load.decode * share / g * p.kv_bytes(round(load.context))
    memory = read / (p.bandwidth * eff.bandwidth)
    n = cal.smoothness
    work = (compute ** n + memory ** n) ** (1 / n) if compute or memory else 0.0
    graphed = not load.prefill and cal.graph_layer_overhead_s is not None
    latency = cal.collective_latency_s
    if graphed and cal.graph_collective_latency_s is not None:
        latency = cal.graph_collective_latency_s
    comm = 0.0
    link = p.link(p.tp)  # the TP all-reduce stays inside its TP group
    per_device_tokens = busiest
    payload = per_device_tokens * p.hidden * p.activation_bytes
    stage_layers = p.layers * layer_share
    if p.tp > 1:
        ring = payload * 2 * (p.tp - 1) / p.tp / (link * cal.link) if link else 0.0
        comm += 2 * stage_layers * (latency + ring)
    if p.ep > 1 and p.moe_layers:
        moved = per_device_tokens / max(1, p.tp) * min(p.top_k, p.ep - 1) * p.hidden \
            * p.activation_bytes * (p.ep - 1) / p.ep
        wide = p.link()  # the dispatch crosses the whole EP group
        alltoall = moved / (wide * cal.link) if wide else 0.0
        comm += 2 * p.moe_layers * layer_share * (latency + alltoall)
    per_layer = cal.layer_overhead_s
    if graphed and cal.graph_layer_overhead_s is not None:
        per_layer = cal.graph_layer_overhead_s
    overhead = cal.step_overhead_s + per_layer * stage_layers + cal.sequence_overhead_s * requests
    return StepCost(seconds=work + comm + overhead, compute_s=compute, memory_s=memory,
                    communication_s=comm, overhead_s=overhead, steps=1)


def round_time(p: WorkProfile, cal: Calibration, load: Load, chunk: int, *,
               whole_prompts: bool = False) -> StepCost:
    """One round: every decoding sequence advances a token and `load.prefill` prompt tokens
    are processed, in as many steps of at most `chunk` tokens as that takes, across every
    pipeline stage (see the module rules). `whole_prompts`: the round as its prompts see it,
    each riding whole in one micro-batch (a TTFT); otherwise the prompt tokens spread over
    the micro-batches, as each of the engine's scheduler steps fills its own token budget
    (a round's throughput)."""
    tokens = load.decode * (1 + p.verify) + load.prefill
    steps = max(1, math.ceil(tokens / chunk - 1e-9))
    prompts = math.ceil(load.prefill / load.prompt - 1e-9) if load.prompt else \
        (1 if load.prefill else 0)
    micro = max(1, min(p.pp, math.floor(load.decode + prompts)))
    # the busiest micro-batch sets the pace: its share of the decodes and of the prompts
    per = math.ceil(prompts / micro - 1e-9) / prompts if prompts and whole_prompts \
        else 1 / micro
    busiest = Load(decode=load.decode / micro, context=load.context,
                   prefill=load.prefill * per, prompt=load.prompt, prompts=load.prompts * per)
    one = _stage(p, cal, busiest, 1 / steps)
    factor = steps * p.pp
    draft = p.draft_s if load.decode else 0.0
    return StepCost(seconds=one.seconds * factor + draft, compute_s=one.compute_s * factor,
                    memory_s=one.memory_s * factor + draft,
                    communication_s=one.communication_s * factor,
                    overhead_s=one.overhead_s * factor, steps=steps)


def mean_round(p: WorkProfile, cal: Calibration, load: Load, chunk: int) -> StepCost:
    """The mean round of a steady state whose `load.prefill` is an average over rounds.

    Chunked prefill does not spread a prompt over every round: a prompt arrives whole and
    rides in the next steps in chunks of the budget the decodes leave
    (max_num_batched_tokens − running decodes), so a fraction q = prefill ÷ chunk of the
    rounds carries a chunk and the rest carry only the decodes. The mean is
    q × round(decodes + chunk) + (1 − q) × round(decodes): a decode-only round reads only
    the experts its decode tokens touch, not every expert a spread prompt would touch.
    Where the average prefill fills a whole chunk or more, every round carries one and the
    round is priced as it stands."""
    if not load.prefill or not load.prompt:
        return round_time(p, cal, load, chunk)
    budget = max(1.0, chunk - load.decode * (1 + p.verify))
    piece = min(float(load.prompt), budget)
    if load.prefill >= piece:
        return round_time(p, cal, load, chunk)
    q = load.prefill / piece
    mixed = round_time(p, cal, Load(decode=load.decode, context=load.context, prefill=piece,
                                    prompt=load.prompt, prompts=load.prompts / q), chunk)
    plain = round_time(p, cal, Load(decode=load.decode, context=load.context), chunk)

    def blend(a: float, b: float) -> float:
        return q * a + (1 - q) * b

    return StepCost(seconds=blend(mixed.seconds, plain.seconds),
                    compute_s=blend(mixed.compute_s, plain.compute_s),
                    memory_s=blend(mixed.memory_s, plain.memory_s),
                    communication_s=blend(mixed.communication_s, plain.communication_s),
                    overhead_s=blend(mixed.overhead_s, plain.overhead_s), steps=mixed.steps)
