"""The roofline is a bound: no calibrated time is ever faster than it.

A grid of models × devices × batch × context × split, drawn by hypothesis: every plan the
placement search returns carries its calibrated TTFT and TPOT and the bound beside them
(datasheet peaks at 100 %); the bound is never above the estimate.
"""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.roofline import Efficiency
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.spec.presets import load_preset

MODELS = ("llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v2-lite", "gemma-2-9b", "mixtral-8x7b",
          "qwen3-next-80b-a3b", "gpt-oss-20b", "llama-3.1-70b")
DEVICES = ("h100-sxm", "h200", "a100-80gb", "b200", "l40s", "rtx-4090", "mi300x", "l4")


@cache
def _spec(name: str) -> ModelSpec:
    return load_preset(name)


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), device=st.sampled_from(DEVICES),
       batch=st.integers(1, 1024), context=st.sampled_from([512, 4096, 32768, 131072]),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       ep=st.sampled_from([1, 2, 8]), prompt=st.integers(1, 16384))
def test_no_calibrated_time_beats_the_bound(model: str, device: str, batch: int,
                                            context: int, tp: int, pp: int, ep: int,
                                            prompt: int) -> None:
    spec = _spec(model)
    devices = max(tp, ep) * pp
    result = plan_placement(spec, PlacementRequest(
        device=resolve_device(device), count=devices, context=context, batch=batch,
        prompt_tokens=min(prompt, context), limit=0))
    for plan in result.plans:
        t = plan.timing
        if t is None or t.roofline_tpot_s is None or t.roofline_ttft_s is None:
            continue
        assert t.roofline_tpot_s <= t.tpot_s * (1 + 1e-9), (plan.tp, plan.pp, plan.ep, t)
        assert t.roofline_ttft_s <= t.ttft_s * (1 + 1e-9), (plan.tp, plan.pp, plan.ep, t)


def test_the_h100_decode_step_sits_above_its_bound() -> None:
    """Llama-3.1-8B on one H100 at 32 sequences: the calibrated step (its bandwidth at the
    fitted 94 % of peak plus overheads) once came out below a bound taken at 80 %."""
    result = plan_placement(_spec("llama-3.1-8b"), PlacementRequest(
        device=resolve_device("h100-sxm"), count=1, context=8192, batch=32, limit=1))
    t = result.plans[0].timing
    assert t is not None and t.roofline_tpot_s is not None
    assert t.roofline_tpot_s < t.tpot_s
    assert t.trust.startswith("calibrated")
    assert Efficiency().bound


def test_a_fraction_below_one_is_an_estimate_not_a_bound() -> None:
    from llm_inventory.engine.inventory import InventoryRequest, build_inventory

    spec = _spec("llama-3.1-8b")
    device = resolve_device("h100-sxm")
    bound = build_inventory(spec, InventoryRequest(device=device))
    assert bound.timing is not None and bound.timing.trust == "bound"
    assert bound.trust["timing"].kind == "bound"
    slower = build_inventory(spec, InventoryRequest(
        device=device, efficiency=Efficiency(compute=0.5, bandwidth=0.8, link=0.7)))
    assert slower.timing is not None and slower.timing.trust == "estimate"
    assert slower.trust["timing"].kind == "estimate"
    assert slower.timing.tpot_s > bound.timing.tpot_s
