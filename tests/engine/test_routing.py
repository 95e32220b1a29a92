"""MoE routing: the chapter's batch, the closed form against the simulation, EP placement and
all-to-all bytes, and invariants."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.routing import (
    MAX_WORK,
    RoutingRequest,
    RoutingResult,
    even_split,
    expected_distinct_experts,
    expert_rank_counts,
    simulate_routing,
)
from llm_inventory.errors import InputError

# Mixtral-8x7B-v0.1 (its config.json: hidden 4096, intermediate 14336, 8 experts, top-2,
# 32 layers): one expert is gate + up + down = 3 × 4096 × 14336 = 176,160,768 parameters,
# 352,321,536 B = 336 MiB in BF16.
MIXTRAL_EXPERT_BYTES = 3 * 4096 * 14336 * 2

# The seed that routes the chapter's sixteen tokens exactly as the chapter counts them.
CHAPTER_SEED = 40603
CHAPTER_LOADS = [7, 5, 5, 4, 4, 3, 2, 2]


def route(**fields: object) -> RoutingResult:
    values: dict[str, object] = {"experts": 8, "top_k": 2, "tokens": 16, "steps": 50}
    values.update(fields)
    return simulate_routing(RoutingRequest.model_validate(values))


def test_chapter_batch_shape() -> None:
    """Sixteen decode tokens, eight experts, top-2: 32 assignments, two distinct each."""
    step = route(steps=1).step
    assert step.assignments == 32
    assert sum(step.loads) == 32
    assert len(step.loads) == 8
    assert step.choices is not None and len(step.choices) == 16
    for chosen in step.choices:
        assert len(chosen) == 2 and len(set(chosen)) == 2
        assert all(0 <= e < 8 for e in chosen)
    counted = Counter(e for chosen in step.choices for e in chosen)
    assert [counted[e] for e in range(8)] == step.loads
    assert step.mean_load == 4.0


def test_chapter_loads_reproduced_by_a_pinned_seed() -> None:
    """The chapter's 7, 5, 5, 4, 4, 3, 2, 2: expert 0 seven tokens, expert 7 two."""
    step = route(seed=CHAPTER_SEED, steps=1).step
    assert step.loads == CHAPTER_LOADS
    assert (step.busiest, step.busiest_expert) == (7, 0)
    assert step.straggler == 1.75
    assert step.distinct_experts == 8


def test_default_seed_is_pinned_and_uneven() -> None:
    step = route(seed=0).step
    assert step.loads == [1, 0, 6, 6, 5, 2, 5, 7]
    assert step.busiest == 7 and step.idle_experts == 1


def test_same_seed_same_routing_other_seed_other_routing() -> None:
    assert route(seed=7) == route(seed=7)
    assert route(seed=7).step.loads != route(seed=8).step.loads


def test_the_shown_step_is_the_first_simulated_one() -> None:
    assert route(seed=CHAPTER_SEED, steps=1).step == route(seed=CHAPTER_SEED, steps=30).step


def test_closed_form_spot_value() -> None:
    # 8 × (1 − 0.75^16) = 7.91981923…
    assert expected_distinct_experts(8, 2, 16) == pytest.approx(8 * (1 - 0.75**16), rel=1e-12)
    assert expected_distinct_experts(8, 2, 1) == pytest.approx(2.0)
    assert expected_distinct_experts(8, 2, 0) == 0.0
    assert expected_distinct_experts(8, 8, 3) == 8.0


@pytest.mark.parametrize(
    ("experts", "top_k", "batch", "steps"),
    [(8, 2, 16, 400), (256, 8, 64, 200), (128, 4, 512, 40), (64, 6, 8, 400), (160, 6, 32, 200)],
)
def test_closed_form_matches_simulation(experts: int, top_k: int, batch: int, steps: int) -> None:
    result = route(experts=experts, top_k=top_k, tokens=batch, steps=steps)
    expected = expected_distinct_experts(experts, top_k, batch)
    assert result.distinct_experts.expected == pytest.approx(expected, abs=1e-6)
    assert result.distinct_experts.simulated == pytest.approx(expected, rel=0.02)
    assert abs(result.distinct_experts.relative_difference) < 0.02


def test_large_batch_touches_every_expert() -> None:
    assert expected_distinct_experts(256, 8, 10_000) == pytest.approx(256, abs=1e-6)
    result = route(experts=64, top_k=2, tokens=2048, steps=5)
    assert result.distinct_experts.min == 64
    assert result.distinct_experts.simulated == 64


def test_skew_makes_the_busiest_expert_busier() -> None:
    uniform = route(experts=64, top_k=4, tokens=64, steps=100)
    skewed = route(experts=64, top_k=4, tokens=64, steps=100, skew=1.0)
    assert skewed.busiest.mean > uniform.busiest.mean
    assert skewed.straggler.p50 > uniform.straggler.p50
    assert skewed.distinct_experts.simulated < uniform.distinct_experts.simulated
    assert skewed.step.busiest_expert == 0  # expert 0 is the most popular


def test_weighted_sampling_follows_the_popularity() -> None:
    """Top-1 with skew 1 over four experts: shares 1 : 1/2 : 1/3 : 1/4 (÷ 25/12)."""
    result = route(experts=4, top_k=1, tokens=1000, steps=1, skew=1.0)
    shares = [load / 1000 for load in result.step.loads]
    for share, weight in zip(shares, (1, 1 / 2, 1 / 3, 1 / 4), strict=True):
        assert share == pytest.approx(weight / (25 / 12), abs=0.04)


def test_without_replacement_inclusion_probabilities() -> None:
    """Two of three experts at skew 3: expert 0 holds 86 % of the popularity, so the second
    pick takes the walk over what is left. Successive sampling includes expert i with
    probability p_i + Σ_j≠i p_j p_i / (1 − p_j)."""
    weights = [1.0, 1 / 8, 1 / 27]
    p = [w / sum(weights) for w in weights]
    inclusion = [
        p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(3) if j != i) for i in range(3)
    ]
    result = route(experts=3, top_k=2, tokens=1000, steps=1, skew=3.0)
    for load, want in zip(result.step.loads, inclusion, strict=True):
        assert load / 1000 == pytest.approx(want, abs=0.04)


def test_top_k_equal_to_experts_picks_them_all() -> None:
    result = route(experts=4, top_k=4, tokens=5, steps=3, skew=2.0)
    assert result.step.loads == [5, 5, 5, 5]
    assert result.straggler.max == 1.0


def test_percentiles_are_nearest_rank() -> None:
    result = route(steps=200)
    spread = result.busiest
    assert spread.p50 <= spread.p99 <= spread.max
    assert result.straggler.p99 == spread.p99 / result.step.mean_load


# --- expert parallelism ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("experts", "ep", "counts"),
    [(8, 4, [2, 2, 2, 2]), (10, 4, [3, 3, 2, 2]), (256, 6, [43, 43, 43, 43, 42, 42]),
     (7, 7, [1] * 7), (8, 1, [8])],
)
def test_vllm_expert_placement(experts: int, ep: int, counts: list[int]) -> None:
    """vLLM's determine_expert_map: experts // ep each, one more for the first experts % ep."""
    assert expert_rank_counts(experts, ep) == counts


def test_ep_beyond_experts_is_refused() -> None:
    with pytest.raises(InputError) as error:
        expert_rank_counts(8, 9)
    assert error.value.field == "ep"


def test_devices_hold_blocks_and_their_loads_add_up() -> None:
    result = route(experts=10, top_k=2, tokens=13, ep=4, seed=3)
    devices = result.step.devices
    assert devices is not None
    assert [d.experts for d in devices] == [3, 3, 2, 2]
    assert [d.first_expert for d in devices] == [0, 3, 6, 8]
    assert [d.tokens for d in devices] == [4, 3, 3, 3]
    assert sum(d.load for d in devices) == result.step.assignments
    loads = result.step.loads
    assert [d.load for d in devices] == [sum(loads[0:3]), sum(loads[3:6]), sum(loads[6:8]),
                                         sum(loads[8:10])]


def test_chapter_step_all_to_all_bytes_by_hand() -> None:
    """Four ranks, two experts each, four tokens each; a vector is 4,096 × 2 B = 8 KiB."""
    result = route(seed=CHAPTER_SEED, steps=1, ep=4)
    step = result.step
    assert step.choices is not None and step.devices is not None
    assert step.hidden_state_bytes == 8192
    send = [0] * 4
    receive = [0] * 4
    for token, chosen in enumerate(step.choices):
        source = token // 4
        for rank in {e // 2 for e in chosen} - {source}:
            send[source] += 8192
            receive[rank] += 8192
    assert [d.dispatch_send_bytes for d in step.devices] == send
    assert [d.dispatch_recv_bytes for d in step.devices] == receive
    assert [d.combine_send_bytes for d in step.devices] == receive
    assert [d.combine_recv_bytes for d in step.devices] == send
    assert step.dispatch_bytes == step.combine_bytes == sum(send)
    assert [d.load for d in step.devices] == [12, 9, 7, 4]
    assert step.device_straggler == 12 / 8


def test_one_rank_sends_nothing() -> None:
    result = route(ep=1)
    devices = result.step.devices
    assert devices is not None and len(devices) == 1
    device = devices[0]
    assert (device.dispatch_send_bytes, device.dispatch_recv_bytes, device.combine_send_bytes,
            device.combine_recv_bytes) == (0, 0, 0, 0)
    assert result.step.dispatch_bytes == 0
    assert result.device_straggler is not None and result.device_straggler.max == 1.0


def test_a_token_sends_at_most_one_vector_per_remote_rank() -> None:
    result = route(experts=64, top_k=8, tokens=40, ep=8, hidden=7168, dtype="fp8")
    step = result.step
    assert step.devices is not None and step.hidden_state_bytes == 7168
    sent = sum(d.dispatch_send_bytes for d in step.devices)
    assert sent == sum(d.dispatch_recv_bytes for d in step.devices)
    assert sent <= 40 * min(8, 7) * 7168
    assert sent % 7168 == 0


def test_without_ep_there_are_no_devices() -> None:
    result = route()
    assert result.ep is None and result.step.devices is None
    assert result.step.dispatch_bytes is None and result.device_straggler is None


def test_even_split_remainder_goes_first() -> None:
    assert even_split(13, 4) == [4, 3, 3, 3]
    assert even_split(3, 4) == [1, 1, 1, 0]


# --- weight reads --------------------------------------------------------------------------

def test_mixtral_decode_reads_almost_everything() -> None:
    """Sixteen tokens through Mixtral's 32 MoE layers read 99 % of the resident experts, not
    the two-expert active share."""
    result = route(expert_bytes=MIXTRAL_EXPERT_BYTES, moe_layers=32)
    weights = result.expert_weights
    assert weights is not None
    assert weights.active_bytes == 2 * MIXTRAL_EXPERT_BYTES * 32 == 22_548_578_304
    assert weights.resident_bytes == 8 * MIXTRAL_EXPERT_BYTES * 32 == 90_194_313_216
    read = round(expected_distinct_experts(8, 2, 16) * MIXTRAL_EXPERT_BYTES * 32)
    assert result.decode_expert_bytes == weights.read_bytes == read
    assert weights.read_fraction_of_resident == pytest.approx(0.99, abs=0.001)


def test_one_token_reads_the_active_share() -> None:
    result = route(tokens=1, expert_bytes=1000, moe_layers=10)
    weights = result.expert_weights
    assert weights is not None
    assert weights.read_bytes == weights.active_bytes == 20_000


def test_skewed_reads_use_the_simulation() -> None:
    result = route(experts=64, top_k=4, tokens=64, skew=1.0, expert_bytes=1_000_000)
    weights = result.expert_weights
    assert weights is not None
    assert weights.distinct_experts == result.distinct_experts.simulated
    assert "simulated" in weights.basis


def test_no_expert_bytes_no_weight_figures() -> None:
    result = route()
    assert result.decode_expert_bytes is None and result.expert_weights is None


# --- invariants ----------------------------------------------------------------------------

@given(
    experts=st.integers(1, 512),
    data=st.data(),
    batch=st.integers(0, 5000),
)
def test_closed_form_is_monotonic_and_bounded(experts: int, data: st.DataObject,
                                              batch: int) -> None:
    top_k = data.draw(st.integers(1, experts))
    now = expected_distinct_experts(experts, top_k, batch)
    later = expected_distinct_experts(experts, top_k, batch + 1)
    assert 0.0 <= now <= later <= experts
    assert now <= min(experts, batch * top_k)
    assert later >= now
    if batch:
        assert now >= top_k - 1e-9


@settings(max_examples=40, deadline=None)
@given(
    experts=st.integers(1, 40),
    data=st.data(),
    tokens=st.integers(1, 60),
    skew=st.floats(0.0, 4.0),
    seed=st.integers(0, 2**32),
)
def test_every_step_is_consistent(experts: int, data: st.DataObject, tokens: int, skew: float,
                                  seed: int) -> None:
    top_k = data.draw(st.integers(1, experts))
    ep = data.draw(st.integers(1, experts))
    result = route(experts=experts, top_k=top_k, tokens=tokens, skew=skew, seed=seed,
                   steps=3, ep=ep)
    step = result.step
    assert sum(step.loads) == tokens * top_k
    assert step.choices is not None
    assert all(len(set(chosen)) == top_k for chosen in step.choices)
    bound = min(experts, tokens * top_k)
    assert result.distinct_experts.max <= bound
    assert step.busiest <= tokens
    assert step.straggler >= 1.0 - 1e-9
    assert step.devices is not None
    assert sum(d.load for d in step.devices) == tokens * top_k
    assert sum(d.experts for d in step.devices) == experts


# --- refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"top_k": 9}, "top_k"),
        ({"ep": 9}, "ep"),
        ({"dtype": "fp9"}, "dtype"),
        ({"steps": MAX_WORK}, "steps"),
        ({"tokens": 10_000_000, "steps": 1}, "steps"),
    ],
)
def test_impossible_requests(fields: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as error:
        route(**fields)
    assert error.value.field == field


@pytest.mark.parametrize(
    ("experts", "top_k", "batch", "field"),
    [(0, 1, 1, "experts"), (8, 0, 1, "top_k"), (8, 9, 1, "top_k"), (8, 2, -1, "tokens")],
)
def test_closed_form_refusals(experts: int, top_k: int, batch: int, field: str) -> None:
    with pytest.raises(InputError) as error:
        expected_distinct_experts(experts, top_k, batch)
    assert error.value.field == field


@pytest.mark.parametrize("skew", [math.nan, math.inf, -0.5, 11.0])
def test_request_refuses_bad_skew(skew: float) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        RoutingRequest(experts=8, top_k=2, tokens=16, skew=skew)


def test_engine_module_is_pure() -> None:
    import subprocess
    import sys

    code = "import llm_inventory.engine.routing, sys; print('\\n'.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert not {m for m in loaded if m.split(".")[0] in {"typer", "rich", "click", "yaml"}}
