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


def test_a_server_that_takes_requests_in_one_at_a_time_spreads_a_burst() -> None:
    # 200 short requests sent at once to a server that takes each in for 5 ms: the i-th
    # first token comes after the i-th request reached the engine, and the run lasts at
    # least the 200 admissions; with no admission time the burst is as before
    from hypothesis import given, settings
    from hypothesis import strategies as st

    p = profile()

    @settings(max_examples=8, deadline=None)
    @given(st.integers(min_value=1, max_value=200), st.sampled_from([0.0, 1e-3, 5e-3]))
    def check(users: int, admission: float) -> None:
        spread = closed_loop(p, CAL, isl=128, osl=4, cap=256, chunk=8192, users=users,
                             requests=users, admission_s=admission)
        at_once = closed_loop(p, CAL, isl=128, osl=4, cap=256, chunk=8192, users=users,
                              requests=users)
        for i, ttft in enumerate(spread.ttft_s):
            assert ttft >= (i + 1) * admission - 1e-12
        assert users / spread.requests_per_s + spread.ttft_s[0] >= users * admission - 1e-9
        if admission == 0:
            assert spread == at_once

    check()


def test_each_sequence_a_step_carries_costs_the_host_its_overhead() -> None:
    from llm_inventory.engine.timing.step import Load, round_time

    p = profile()
    busy = CAL.model_copy(update={"sequence_overhead_s": 50e-6})
    for batch in (1, 8, 256):
        load = Load(decode=batch, context=1000)
        extra = round_time(p, busy, load, 8192).seconds - round_time(p, CAL, load, 8192).seconds
        assert abs(extra - 50e-6 * batch) < 1e-12
