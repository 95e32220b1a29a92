"""Roofline timings: bounds named right on every device, monotone in batch and prompt."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.inventory import InventoryRequest, build_inventory
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.spec.devices import list_devices, resolve_device
from llm_inventory.spec.presets import load_preset

SPEC = load_preset("llama-3.1-8b")


def timing(device: str, batch: int = 1, prompt: int = 1000, context: int = 8000):  # type: ignore[no-untyped-def]
    request = InventoryRequest(device=resolve_device(device), batch=batch,
                               prompt_tokens=prompt, context=context)
    result = build_inventory(SPEC, request)
    assert result.timing is not None
    return result.timing


# A roofline needs a peak: devices whose vendor publishes no BF16 rate (Apple, GB10) have none.
PEAKED = [d.id for d in list_devices() if d.bf16_flops is not None]


@pytest.mark.parametrize("device", PEAKED)
def test_decode_is_bandwidth_bound_at_batch_one_everywhere(device: str) -> None:
    t = timing(device, batch=1)
    assert t.decode_bound == "memory bandwidth"
    assert t.decode_intensity < t.ridge_flops_per_byte


@pytest.mark.parametrize("device", PEAKED)
def test_prefill_is_compute_bound_at_long_prompts(device: str) -> None:
    t = timing(device, prompt=16_000, context=16_000)
    assert t.prefill_bound == "compute"


def test_no_roofline_without_a_published_peak() -> None:
    """No bound is made up where the vendor publishes no peak FLOP/s."""
    unpeaked = [d.id for d in list_devices() if d.bf16_flops is None]
    assert {"dgx-spark", "m4-max-128gb"} <= set(unpeaked)
    for device in unpeaked:
        request = InventoryRequest(device=resolve_device(device), batch=1, prompt_tokens=1000,
                                   context=8000)
        assert build_inventory(SPEC, request).timing is None


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 256), extra=st.integers(1, 256))
def test_decode_time_is_monotone_in_batch(batch: int, extra: int) -> None:
    small, large = timing("h100-sxm", batch=batch), timing("h100-sxm", batch=batch + extra)
    assert large.decode_step_s >= small.decode_step_s
    assert large.tokens_per_s_per_device >= small.tokens_per_s_per_device


@settings(max_examples=25, deadline=None)
@given(prompt=st.integers(1, 7000), extra=st.integers(1, 999))
def test_prefill_time_is_monotone_in_prompt(prompt: int, extra: int) -> None:
    assert timing("h100-sxm", prompt=prompt + extra).ttft_s >= timing(
        "h100-sxm", prompt=prompt).ttft_s


def test_fp8_weights_use_the_fp8_rate() -> None:
    request = InventoryRequest(device=resolve_device("h100-sxm"), dtype="fp8")
    t = build_inventory(SPEC, request).timing
    assert t is not None and t.peak_flops == resolve_device("h100-sxm").fp8_flops
    a100 = build_inventory(SPEC, InventoryRequest(device=resolve_device("a100-80gb"),
                                                  dtype="fp8")).timing
    assert a100 is not None and a100.peak_flops == resolve_device("a100-80gb").bf16_flops


def test_placement_plans_carry_timings() -> None:
    result = plan_placement(SPEC, PlacementRequest(device=resolve_device("h100-sxm"),
                                                   count=4, limit=0))
    timed = [p for p in result.plans if p.timing is not None]
    assert timed and all(p.legal for p in timed)
    by_tp = {p.tp: p.timing for p in timed if p.pp == 1 and p.disaggregation is None
             and p.ep == 1}
    # More TP ranks share one prompt's FLOPs: a shorter time to first token.
    assert by_tp[4].ttft_s < by_tp[2].ttft_s < by_tp[1].ttft_s  # type: ignore[union-attr]
