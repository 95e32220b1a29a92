"""The time model's mechanisms, as properties: load, prompt length, batch bounds, regimes."""

from __future__ import annotations

from functools import cache

import pytest

from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import model_facts
from llm_inventory.engine.timing.profile import WorkProfile, work_profile
from llm_inventory.engine.timing.serving import (
    busy_ttft,
    offline,
    prefill_alone,
    serve,
    static_batch,
)
from llm_inventory.engine.timing.step import Load, ep_straggler, round_time
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model

CAL = default_calibration()


@cache
def profile(model: str = "llama-3.1-70b", tp: int = 4, ep: int = 1) -> WorkProfile:
    facts = model_facts(load_model(model), PlacementRequest(
        device=resolve_device("h100"), count=8, context=8000))
    found = work_profile(facts, tp, 1, ep)
    assert found is not None
    return found


def test_ttft_grows_with_concurrency_and_prompt_length() -> None:
    p = profile()
    at = [serve(p, CAL, isl=2000, osl=200, cap=64, chunk=8192, concurrency=c).ttft_s
          for c in (1, 8, 32, 64, 128)]
    assert at == sorted(at) and at[-1] > 5 * at[0]
    longer = [serve(p, CAL, isl=n, osl=200, cap=64, chunk=8192, concurrency=16).ttft_s
              for n in (500, 2000, 8000)]
    assert longer == sorted(longer)


def test_decode_steps_pay_for_the_prefill_riding_in_them() -> None:
    p = profile()
    alone = round_time(p, CAL, Load(decode=32, context=3000), 8192).seconds
    mixed = round_time(p, CAL, Load(decode=32, context=3000, prefill=4000, prompt=4000,
                                    prompts=1), 8192).seconds
    assert mixed > 1.5 * alone
    # past max_num_batched_tokens the round takes more steps
    split = round_time(p, CAL, Load(decode=32, context=3000, prefill=20000, prompt=20000),
                       8192)
    assert split.steps == 3


def test_the_batch_is_bounded_by_the_pool() -> None:
    p = profile()
    small = serve(p, CAL, isl=1000, osl=500, cap=8, chunk=8192, rate=50.0, requests=500)
    large = serve(p, CAL, isl=1000, osl=500, cap=256, chunk=8192, rate=50.0, requests=500)
    assert small.concurrency <= 8
    assert small.saturated
    assert large.capacity_requests_per_s > small.capacity_requests_per_s
    assert offline(p, CAL, isl=1000, osl=500, cap=256, chunk=8192) > \
        offline(p, CAL, isl=1000, osl=500, cap=8, chunk=8192)


def test_a_rate_past_capacity_never_reads_as_served() -> None:
    p = profile()
    served = serve(p, CAL, isl=2000, osl=500, cap=16, chunk=8192, rate=1000.0)
    assert served.saturated
    assert served.ttft_s == float("inf")
    assert served.requests_per_s == pytest.approx(served.capacity_requests_per_s)


def test_regimes_agree_where_they_meet() -> None:
    p = profile()
    # a lone prompt: TTFT from prefill_alone and from a busy engine with nothing decoding
    assert busy_ttft(p, CAL, isl=1000, decoding=0, context=1100, chunk=8192) == \
        pytest.approx(prefill_alone(p, CAL, 1000, 8192) + CAL.server_overhead_s)
    # static batching is slower per token than continuous batching at the same batch
    assert static_batch(p, CAL, 64, 128, 2048) > 0


def test_expert_parallel_pays_its_straggler() -> None:
    # uniform routing of 8 tokens over 128 experts on 8 ranks: the busiest rank is well
    # above the mean; with thousands of tokens the ranks even out
    assert ep_straggler(128, 8, 8, 8) > 1.3
    assert ep_straggler(128, 8, 4096, 8) < 1.1
    assert ep_straggler(128, 8, 8, 1) == 1.0


@pytest.mark.parametrize(("experts", "top_k", "tokens", "ep"), [
    (8, 2, 16, 4), (8, 2, 256, 8), (128, 8, 64, 8), (128, 8, 4096, 8), (256, 8, 64, 32),
    (256, 8, 1024, 64), (160, 6, 128, 16), (16, 1, 32, 4),
])
def test_the_straggler_closed_form_matches_the_routing_simulation(
        experts: int, top_k: int, tokens: int, ep: int) -> None:
    from llm_inventory.engine.routing import RoutingRequest, simulate_routing

    simulated = simulate_routing(RoutingRequest(experts=experts, top_k=top_k, tokens=tokens,
                                                ep=ep, steps=200, seed=1)).device_straggler
    assert simulated is not None
    assert ep_straggler(experts, top_k, tokens, ep) == pytest.approx(simulated.mean, rel=0.08)


def test_a_chunked_prefill_is_priced_per_chunk_size_not_per_chunk() -> None:
    """Full chunks cost the same; a 2^30-token prompt in chunks of 1 once looped 2^30 times."""
    p = profile()

    def chunk_by_chunk(isl: int, chunk: int) -> float:
        steps = -(-isl // chunk)
        return sum(round_time(p, CAL, Load(decode=0, context=1, prefill=min(chunk, isl - i * chunk),
                                           prompt=isl, prompts=int(i == steps - 1)),
                              chunk).seconds for i in range(steps))

    for isl, chunk in [(1000, 8192), (8192, 8192), (10_000, 512), (10_001, 7)]:
        assert prefill_alone(p, CAL, isl, chunk) == pytest.approx(chunk_by_chunk(isl, chunk))
    assert prefill_alone(p, CAL, 2**30, 1) > prefill_alone(p, CAL, 2**20, 1) > 0
