"""Placement: every split, its legality and reasons, and the memory fit."""

from __future__ import annotations

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.placement import (
    PlacementRequest,
    PlacementResult,
    Plan,
    plan_placement,
)
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.presets import load_preset


def result(model: str, device: str, count: int, **pins: object) -> PlacementResult:
    request = PlacementRequest.model_validate(
        {"device": resolve_device(device), "count": count, "limit": 0, **pins})
    return plan_placement(load_preset(model), request)


def plans(model: str, device: str, count: int, **pins: object) -> list[Plan]:
    return result(model, device, count, **pins).plans


def refused(found: PlacementResult, split: str) -> list[str]:
    """The reasons a split is refused (each reason is listed once, with its splits)."""
    return [r.reason for r in found.refused if split in r.splits]


def only(found: list[Plan], tp: int, pp: int = 1, ep: int = 1) -> Plan:
    matches = [p for p in found if (p.tp, p.pp, p.ep) == (tp, pp, ep) and p.disaggregation
               is None]
    assert matches, f"no plan tp{tp} pp{pp} ep{ep}"
    return matches[0]


def test_llama_70b_on_8_h100() -> None:
    # vLLM 0.19, the release the start-up logs calibrate (from 0.21 CUDA graphs are
    # subtracted up front and TP 2 no longer holds one 8,000-token request).
    searched = result("llama-3.1-70b", "h100-sxm", 8, engine="vllm@0.19")
    found = searched.plans
    one = only(found, 1)
    assert one.legal and not one.fits
    assert one.per_device is not None and one.per_device.kv_pool_bytes == 0
    assert one.why == "the weights leave no room for the KV cache"
    # Illegal splits are not plans: each reason is said once, with the splits it rules out.
    assert not [p for p in found if p.tp == 3]
    assert any("64 attention heads" in r for r in refused(searched, "tp3 pp1"))
    assert all(p.legal for p in found)
    for tp in (2, 4, 8):
        plan = only(found, tp)
        assert plan.legal and plan.fits, (tp, plan.reasons)
        assert plan.per_device is not None and plan.per_device.kv_capacity_tokens > 0
    capacities = [only(found, tp).per_device.kv_capacity_tokens  # type: ignore[union-attr]
                  for tp in (2, 4, 8)]
    assert capacities == sorted(capacities)


def test_deepseek_v3_fp8_fits_8_h200_and_bf16_does_not() -> None:
    fp8 = plan_placement(load_preset("deepseek-v3"), PlacementRequest(
        device=resolve_device("h200"), count=8, limit=0))
    assert fp8.fitting > 0
    bf16 = plan_placement(load_preset("deepseek-v3"), PlacementRequest(
        device=resolve_device("h200"), count=8, dtype="bf16", limit=0))
    assert bf16.fitting == 0
    assert bf16.legal > 0


def test_mixtral_expert_parallel() -> None:
    even = only(plans("mixtral-8x7b", "h100-sxm", 8, ep=8, tp=1), 1, 1, 8)
    assert even.legal and even.experts_per_rank == [1] * 8
    assert not any("evenly" in w for w in even.warnings)
    uneven = only(plans("mixtral-8x7b", "h100-sxm", 8, ep=3, tp=1), 1, 1, 3)
    assert uneven.legal
    assert uneven.experts_per_rank == [3, 3, 2]
    assert any("3/3/2" in w for w in uneven.warnings)
    strict = result("mixtral-8x7b", "h100-sxm", 8, ep=3, tp=1, even_experts=True)
    assert not [p for p in strict.plans if p.ep == 3]
    assert any("--even-experts" in r for r in refused(strict, "tp1 pp1 ep3"))
    # The fullest rank sets the memory: 3 of 8 experts, not 8 / 3.
    assert uneven.per_device and even.per_device
    assert uneven.per_device.weight_bytes > even.per_device.weight_bytes


def test_reasons_for_dense_ep_deep_pp_and_cross_node_tp() -> None:
    searched = result("llama-3.1-8b", "h100-sxm", 16, per_node=8)
    assert not [p for p in searched.plans if p.ep > 1]  # a dense model offers no EP split
    assert any("dense model" in r for r in refused(searched, "ep"))
    assert any("spans nodes" in r for r in refused(searched, "tp16 pp1"))
    allowed = only(plans("llama-3.1-8b", "h100-sxm", 16, per_node=8,
                         allow_cross_node_tp=True), 16)
    assert allowed.legal and any("spans nodes" in w for w in allowed.warnings)
    deep = result("llama-3.1-8b", "h100-sxm", 40, pp=33, tp=1)
    assert any("exceeds the 32 layers" in r for r in refused(deep, "tp1 pp33"))
    # A pinned dimension filters the candidates.
    pinned = plans("llama-3.1-8b", "h100-sxm", 8, tp=2)
    assert pinned and {p.tp for p in pinned} == {2}


def test_pins_the_devices_cannot_hold_are_bad_input() -> None:
    with pytest.raises(InputError, match="tp 8 needs 8 devices"):
        result("llama-3.1-8b", "h100-sxm", 4, tp=8)


def test_uneven_pipeline_follows_vllm() -> None:
    plan = only(plans("llama-3.1-70b", "h100-sxm", 3, pp=3, tp=1), 1, 3)
    assert plan.legal
    assert [s.layers for s in plan.stages] == [27, 27, 26]
    assert any("27/27/26" in w for w in plan.warnings)


def test_kv_and_placement_agree() -> None:
    """`inventory kv --model M --tp T` and placement give the same bytes per token."""
    spec = load_preset("llama-3.1-70b")
    for tp in (1, 2, 4, 8):
        kv = size_state(StateRequest(layers=state_layers(spec), tokens=1, tp=tp))
        plan = only(plans("llama-3.1-70b", "h100-sxm", 8, tp=tp), tp)
        assert plan.per_device is not None
        assert plan.per_device.kv_bytes_per_token == kv.per_device.bytes_per_token


def test_longest_context_when_one_request_does_not_fit() -> None:
    device = custom_device(24 * 2**30, resolve_device("l4"))
    request = PlacementRequest(device=device, count=1, context=131072, tp=1, pp=1, limit=0)
    plan = plan_placement(load_preset("llama-3.1-8b"), request).plans[0]
    assert plan.legal and not plan.fits and plan.fits_context is False
    assert plan.longest_context is not None and 0 < plan.longest_context < 131072
    per_token = 131072  # Llama-3.1-8B: 32 layers × 4,096 B
    assert plan.per_device is not None
    assert plan.longest_context <= plan.per_device.kv_pool_bytes // per_token + 16


def test_concurrency_requirement() -> None:
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=1, tp=1, pp=1,
                               context=8192, concurrency=1000, limit=0)
    plan = plan_placement(load_preset("llama-3.1-8b"), request).plans[0]
    assert plan.legal and not plan.fits
    assert plan.max_concurrency is not None and 50 < plan.max_concurrency < 70


@pytest.mark.parametrize("engine", ["vllm@0.19", "vllm@0.21"])
def test_hybrid_models_count_groups_like_vllm(engine: str) -> None:
    """gemma-2-9b at 8,192: a sliding group saves nothing; concurrency ≈ blocks / 1,025.
    0.19 prints blocks ÷ groups × 16 tokens, 0.21 ⌊concurrency × max_model_len⌋."""
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=1, tp=1, pp=1,
                               context=8192, gpu_memory_utilization=0.95, limit=0,
                               engine=engine)
    plan = plan_placement(load_preset("gemma-2-9b"), request).plans[0]
    assert plan.per_device is not None and plan.max_concurrency is not None
    blocks = plan.per_device.kv_blocks
    assert plan.max_concurrency == pytest.approx(blocks / 1025, rel=1e-3)
    if engine == "vllm@0.19":
        assert plan.per_device.kv_capacity_tokens == blocks // 2 * 16
    else:
        assert plan.per_device.kv_capacity_tokens == int(blocks / 1025 * 8192)


def test_large_searches_are_bounded_by_construction() -> None:
    """Candidates are divisor sets, not ranges over devices: 16 times the devices adds a few
    shapes, not 16 times as many (timings live in benchmarks/, not here)."""
    small = plan_placement(load_preset("deepseek-v3"), PlacementRequest(
        device=resolve_device("h200"), count=1024))
    large = plan_placement(load_preset("deepseek-v3"), PlacementRequest(
        device=resolve_device("h200"), count=16384, limit=10))
    assert small.fitting > 0 and small.shown == small.legal  # every plan, unless limited
    assert 1000 < small.candidates < 3000
    assert large.candidates < 2 * small.candidates
    assert large.shown == 10


def test_plans_are_sorted_fitting_first() -> None:
    found = plans("llama-3.1-70b", "h100-sxm", 8)
    keys = [0 if p.fits else 1 for p in found]
    assert keys == sorted(keys)
    fitting = [p for p in found if p.fits]
    # The default: the highest estimated throughput of the deployment first.
    speed = [p.timing.tokens_per_s_per_replica * p.dp for p in fitting if p.timing]
    assert speed == sorted(speed, reverse=True)
    assert (fitting[0].tp, fitting[0].pp) == (8, 1)
    held = [p.total_concurrency or 0 for p in plans("llama-3.1-70b", "h100-sxm", 8,
                                                    sort="concurrency") if p.fits]
    assert held == sorted(held, reverse=True)
    by_devices = [p for p in plans("llama-3.1-70b", "h100-sxm", 8, sort="devices") if p.fits]
    assert [p.devices_per_replica for p in by_devices] == sorted(
        p.devices_per_replica for p in by_devices)
    # Near misses rank by the share of the workload they hold; no room at all comes last.
    misses = [p for p in found if not p.fits]
    assert misses[-1].per_device is not None and misses[-1].per_device.kv_pool_bytes == 0


def test_smallest_fit_answers_how_many_devices() -> None:
    searched = result("llama-3.1-70b", "h100-sxm", 8, concurrency=200, context=8000)
    assert searched.smallest is not None
    fitting = [p for p in searched.plans if p.devices_needed is not None]
    assert searched.smallest.devices == min(p.devices_needed or 0 for p in fitting
                                            if p.disaggregation is None)


def test_a_context_past_the_models_positions_is_refused() -> None:
    searched = result("qwen3-8b", "h100-sxm", 1, context=131072)
    assert searched.fitting == 0 and searched.smallest is None
    assert all(p.why and "refuses" in p.why for p in searched.plans)
    allowed = result("qwen3-8b", "h100-sxm", 1, context=131072, allow_long_context=True)
    assert allowed.fitting > 0


def test_seed_dense_70b_case() -> None:
    """The worked example: one 80 GB device cannot hold 140 GB of BF16 weights; four-way TP
    leaves 35 GB of weights and 625 MiB of state per 8,000-token sequence on each device."""
    from llm_inventory.spec.loader import load_model
    from tests.conftest import ROOT

    request = PlacementRequest(device=resolve_device("h100-sxm"), count=8, context=8000,
                               limit=0)
    result = plan_placement(load_model(str(ROOT / "examples" / "dense-70b.yaml")), request)
    assert result.model_weight_bytes == 140_000_000_000
    widths = {w.tp: w for w in result.widths}
    assert widths[1].legal and not widths[1].fits
    assert widths[4].fits
    assert widths[4].weight_bytes == 35_000_000_000
    assert widths[4].state_bytes_per_sequence == 655_360_000 == 625 * 2**20
    assert widths[4].max_concurrency is not None and widths[4].max_concurrency > 10
    assert not widths[3].legal


@pytest.mark.parametrize("model", ["flux-dev", "bge-large", "whisper-large-v3",
                                   "qwen2-vl-7b"])
def test_every_family_places_its_weights(model: str) -> None:
    from llm_inventory.engine.params import count_parameters

    request = PlacementRequest(device=resolve_device("h100-sxm"), count=1, tp=1, pp=1,
                               limit=0)
    result = plan_placement(load_preset(model), request)
    plan = next(p for p in result.plans if p.disaggregation is None)
    assert plan.legal and plan.fits
    weights = count_parameters(load_preset(model)).weight_bytes
    assert weights <= plan.stages[0].weight_bytes <= weights * 1.02


def test_encoder_models_offer_encoder_disaggregation() -> None:
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=4, limit=0)
    vlm = plan_placement(load_preset("qwen2-vl-7b"), request)
    assert any(p.disaggregation == "encoder" and p.legal for p in vlm.plans)
    dense = plan_placement(load_preset("llama-3.1-8b"), request)
    assert not [p for p in dense.plans if p.disaggregation == "encoder"]
    assert any("no encoder" in r for r in refused(dense, "enc"))


def test_kv_and_placement_agree_on_sliding_windows() -> None:
    """One window rule: gemma-2-9b at 8,000 tokens in blocks of 16, per sequence and in
    total, from `inventory kv` and from placement (both 2,083,651,584 B)."""
    spec = load_preset("gemma-2-9b")
    kv = size_state(StateRequest(layers=state_layers(spec), tokens=8000, block_size=16,
                                 sequences=3))
    found = plans("gemma-2-9b", "h100-sxm", 1, tp=1, pp=1, context=8000, block_size=16,
                  concurrency=3)
    plan = only(found, 1)
    assert plan.per_device is not None
    assert plan.per_device.state_bytes_per_sequence == kv.bytes_per_sequence == 2_083_651_584
    assert plan.per_device.workload_bytes == kv.total_bytes
