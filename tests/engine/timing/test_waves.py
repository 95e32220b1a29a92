"""Closed loops as benchmark clients run them: users who start together, in waves."""

from __future__ import annotations

from functools import cache

from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import model_facts
from llm_inventory.engine.timing.profile import WorkProfile, work_profile
from llm_inventory.engine.timing.serving import prefill_alone, serve
from llm_inventory.engine.timing.waves import closed_loop
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model

CAL = default_calibration()


@cache
def profile() -> WorkProfile:
    facts = model_facts(load_model("llama-3.1-70b"), PlacementRequest(
        device=resolve_device("h100"), count=4, context=8000))
    found = work_profile(facts, 4, 1, 1)
    assert found is not None
    return found


def test_one_wave_waits_for_its_own_prefill() -> None:
    # 16 users send 4,000-token prompts together; a step takes 8,192 tokens, so the
    # prompts leave the prefill two per step: the last waits for ~8 steps of prefill and
    # the mean for about half of the wave's, not one prompt's M/D/1 wait
    p = profile()
    users, isl = 16, 4000
    waves = closed_loop(p, CAL, isl=isl, osl=200, cap=64, chunk=8192, users=users,
                        requests=users)
    first = prefill_alone(p, CAL, isl, 8192)
    wave = users * first  # the prompts' prefill, one after another
    assert waves.ttft_s[-1] >= 0.8 * wave
    assert waves.mean_ttft_s >= 0.4 * wave
    assert waves.ttft_s[0] < 2.5 * first  # its step carries the next prompt too


def test_closed_loop_percentiles_come_from_the_schedule() -> None:
    p = profile()
    served = serve(p, CAL, isl=4000, osl=200, cap=64, chunk=8192, concurrency=16,
                   requests=16)
    assert served.ttft_p50_s is not None and served.ttft_p99_s is not None
    assert served.ttft_p99_s > 1.5 * served.ttft_p50_s  # not copies of the mean
    # and the mean is the wave's, far above one prompt alone
    assert served.ttft_s > 3 * prefill_alone(p, CAL, 4000, 8192)


def test_one_user_is_one_prompt_alone() -> None:
    p = profile()
    waves = closed_loop(p, CAL, isl=2000, osl=100, cap=64, chunk=8192, users=1)
    alone = prefill_alone(p, CAL, 2000, 8192) + CAL.server_overhead_s
    assert all(abs(t - alone) <= 1e-9 * alone for t in waves.ttft_s)


def test_a_steady_window_sees_staggered_users() -> None:
    # after the first wave the users' finishes are as staggered as their first tokens:
    # a window that skips the first wave waits less than one that counts it
    p = profile()
    counted = closed_loop(p, CAL, isl=4000, osl=300, cap=64, chunk=8192, users=32,
                          requests=128)
    steady = closed_loop(p, CAL, isl=4000, osl=300, cap=64, chunk=8192, users=32,
                         requests=160, warmup=32)
    assert steady.mean_ttft_s < counted.mean_ttft_s
    assert len(steady.ttft_s) == 128


def test_users_past_the_pool_queue_for_a_slot() -> None:
    p = profile()
    small = closed_loop(p, CAL, isl=1000, osl=200, cap=8, chunk=8192, users=64,
                        requests=256, warmup=64)
    large = closed_loop(p, CAL, isl=1000, osl=200, cap=64, chunk=8192, users=64,
                        requests=256, warmup=64)
    assert small.running <= 8 + 1e-9
    assert small.mean_ttft_s > 3 * large.mean_ttft_s


def test_a_huge_loop_is_bounded() -> None:
    p = profile()
    waves = closed_loop(p, CAL, isl=100, osl=10, cap=1e9, chunk=8192, users=10_000_000)
    assert 0 < len(waves.ttft_s) <= 4096
