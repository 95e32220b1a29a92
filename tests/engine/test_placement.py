"""Placement: every split, its legality and reasons, and the memory fit."""

from __future__ import annotations

import time

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.presets import load_preset


def plans(model: str, device: str, count: int, **pins: object) -> list[Plan]:
    request = PlacementRequest.model_validate(
        {"device": resolve_device(device), "count": count, "limit": 0, **pins})
    return plan_placement(load_preset(model), request).plans


def only(found: list[Plan], tp: int, pp: int = 1, ep: int = 1) -> Plan:
    matches = [p for p in found if (p.tp, p.pp, p.ep) == (tp, pp, ep) and p.disaggregation
               is None]
    assert matches, f"no plan tp{tp} pp{pp} ep{ep}"
    return matches[0]


def test_llama_70b_on_8_h100() -> None:
    found = plans("llama-3.1-70b", "h100-sxm", 8)
    one = only(found, 1)
    assert one.legal and not one.fits
    assert one.per_device is not None and one.per_device.kv_pool_bytes == 0
    three = only(found, 3)
    assert not three.legal
    assert any("64 attention heads" in r for r in three.reasons)
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
    refused = only(plans("mixtral-8x7b", "h100-sxm", 8, ep=3, tp=1, even_experts=True), 1, 1,
                   3)
    assert not refused.legal
    assert any("--even-experts" in r for r in refused.reasons)
    # The fullest rank sets the memory: 3 of 8 experts, not 8 / 3.
    assert uneven.per_device and even.per_device
    assert uneven.per_device.weight_bytes > even.per_device.weight_bytes


def test_reasons_for_dense_ep_deep_pp_and_cross_node_tp() -> None:
    found = plans("llama-3.1-8b", "h100-sxm", 16, per_node=8)
    dense_ep = [p for p in found if p.ep > 1]
    assert dense_ep and all(not p.legal for p in dense_ep)
    assert any("dense model" in r for p in dense_ep for r in p.reasons)
    cross = only(found, 16)
    assert any("spans nodes" in r for r in cross.reasons)
    allowed = only(plans("llama-3.1-8b", "h100-sxm", 16, per_node=8,
                         allow_cross_node_tp=True), 16)
    assert allowed.legal and any("spans nodes" in w for w in allowed.warnings)
    deep = only(plans("llama-3.1-8b", "h100-sxm", 40, pp=33, tp=1), 1, 33)
    assert any("exceeds the 32 layers" in r for r in deep.reasons)


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


def test_hybrid_models_count_groups_like_vllm() -> None:
    """gemma-2-9b at 8,192: a sliding group saves nothing; concurrency ≈ blocks / 1,025."""
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=1, tp=1, pp=1,
                               context=8192, gpu_memory_utilization=0.95, limit=0)
    plan = plan_placement(load_preset("gemma-2-9b"), request).plans[0]
    assert plan.per_device is not None
    blocks = plan.per_device.kv_blocks
    assert plan.max_concurrency == pytest.approx(blocks / 1025, rel=1e-3)
    assert plan.per_device.kv_capacity_tokens == blocks // 2 * 16


def test_large_search_is_fast() -> None:
    request = PlacementRequest(device=resolve_device("h200"), count=1024, limit=10)
    start = time.perf_counter()
    result = plan_placement(load_preset("deepseek-v3"), request)
    elapsed = time.perf_counter() - start
    assert result.candidates > 1000 and result.fitting > 0
    assert elapsed < 1.0, elapsed


def test_plans_are_sorted_fitting_first() -> None:
    found = plans("llama-3.1-70b", "h100-sxm", 8)
    keys = [(0 if p.fits else 1 if p.legal else 2) for p in found]
    assert keys == sorted(keys)
    fitting = [p for p in found if p.fits]
    assert [p.devices_per_replica for p in fitting] == sorted(
        p.devices_per_replica for p in fitting)


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
    refused = [p for p in dense.plans if p.disaggregation == "encoder"]
    assert refused and not any(p.legal for p in refused)
    assert any("no encoder" in r for p in refused for r in p.reasons)
