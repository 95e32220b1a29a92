"""MoE decode under chunked prefill: a round reads the experts its own tokens touch."""

from __future__ import annotations

from functools import cache

from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import model_facts
from llm_inventory.engine.timing.profile import WorkProfile, work_profile
from llm_inventory.engine.timing.serving import serve
from llm_inventory.engine.timing.step import Load, mean_round, round_time
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model

CAL = default_calibration()


@cache
def profile(model: str, device: str, n: int) -> WorkProfile:
    facts = model_facts(load_model(model), PlacementRequest(
        device=resolve_device(device), count=n, context=10000))
    found = work_profile(facts, n, 1, 1)
    assert found is not None
    return found


def test_a_long_prompt_is_not_spread_over_every_round() -> None:
    # gpt-oss-120b on two B200s, 8,000-token prompts: a prompt arrives whole and rides in
    # one step of 8,192 tokens; the other rounds carry 4 decodes, which touch ~12 % of the
    # 128 experts, not the ~89 % that 4 decodes plus a spread 64-token slice would
    p = profile("gpt-oss-120b", "b200", 2)
    assert p.touched(4) < 0.2 < 0.8 < p.touched(4 + 64)
    load = Load(decode=4, context=8250, prefill=64, prompt=8000, prompts=4 / 500)
    mixed = round_time(p, CAL, Load(decode=4, context=8250, prefill=8000, prompt=8000,
                                    prompts=1), 8192).seconds
    plain = round_time(p, CAL, Load(decode=4, context=8250), 8192).seconds
    q = 64 / 8000
    mean = mean_round(p, CAL, load, 8192)
    assert mean.seconds == q * mixed + (1 - q) * plain
    assert mean.memory_s < 0.4 * round_time(p, CAL, load, 8192).memory_s


def test_the_served_tpot_is_the_mean_of_the_rounds_the_engine_runs() -> None:
    # at a low rate the server's TPOT is that of decode-only rounds with the odd round
    # carrying a prompt, not one where every round reads every expert
    p = profile("qwen3-30b-a3b", "h100", 1)
    served = serve(p, CAL, isl=8000, osl=500, cap=64, chunk=8192, rate=0.2)
    n = served.concurrency
    spread = round_time(p, CAL, Load(decode=n, context=8250, prefill=0.2 * 8000 *
                                     served.tpot_s, prompt=8000,
                                     prompts=0.2 * served.tpot_s), 8192).seconds
    plain = round_time(p, CAL, Load(decode=n, context=8250), 8192).seconds
    assert served.tpot_s < 0.5 * spread
    assert plain <= served.tpot_s < 1.3 * plain


def test_a_dense_model_still_pays_for_its_prefill() -> None:
    p = profile("llama-3.1-8b", "h100", 1)
    load = Load(decode=32, context=8250, prefill=512, prompt=8000, prompts=32 / 500)
    plain = round_time(p, CAL, Load(decode=32, context=8250), 8192).seconds
    assert mean_round(p, CAL, load, 8192).seconds > plain


def test_graph_costs_apply_to_decode_only_steps_and_only_when_calibrated() -> None:
    # a decode-only step replays a CUDA graph: with graph costs in the calibration it pays
    # them instead of the eager per-layer and per-collective costs; a step carrying prefill
    # runs eagerly; the shipped constants carry none (the data did not support them)
    assert CAL.graph_layer_overhead_s is None and CAL.graph_collective_latency_s is None
    p = profile("gpt-oss-120b", "b200", 2)
    graphs = CAL.model_copy(update={"graph_layer_overhead_s": 0.0,
                                    "graph_collective_latency_s": 0.0})
    decode = Load(decode=1, context=2000)
    eager = round_time(p, CAL, decode, 8192)
    graphed = round_time(p, graphs, decode, 8192)
    assert graphed.overhead_s == CAL.step_overhead_s
    assert graphed.communication_s < eager.communication_s
    assert graphed.seconds < eager.seconds
    mixed = Load(decode=1, context=2000, prefill=500, prompt=500, prompts=1)
    assert round_time(p, graphs, mixed, 8192) == round_time(p, CAL, mixed, 8192)
