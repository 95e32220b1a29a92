"""Devices and engines with no measurement of their own: whose constants they take, and that
the label says so (extrapolated, a wider band)."""

from __future__ import annotations

import pytest

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.timing.calibration import DeviceEfficiency, nearest_measured
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model

CAL = default_calibration()


@pytest.mark.parametrize(("device", "nearest"), [
    ("h100-pcie", "h100-sxm"),  # Hopper: nearest by bandwidth and FLOP/s
    ("h100-nvl", "gh200"),  # 3.9 TB/s: GH200's 4.0 is nearer than H100 SXM's 3.35
    ("a100-40gb", "a100-80gb"),  # the same part with less memory
    ("rtx-5090", "rtx-pro-6000"),  # the only measured compute capability 12
    ("mi300x", "h200"),  # no AMD device measured: the nearest of any vendor
    ("mi325x", "h200"),
])
def test_a_device_with_no_rows_borrows_from_its_generations_nearest(device: str,
                                                                    nearest: str) -> None:
    d = resolve_device(device)
    assert device not in CAL.devices
    assert CAL.borrowed_from(d) == nearest
    assert CAL.device_efficiency(d) == CAL.devices[nearest]


def test_a_measured_device_keeps_its_own() -> None:
    for device_id, eff in CAL.devices.items():
        assert CAL.borrowed_from(resolve_device(device_id)) is None
        assert CAL.device_efficiency(resolve_device(device_id)) == eff
        # the fit recorded the catalog figures the nearest device is found by
        assert eff.bandwidth_bytes_per_s and eff.bf16_flops and eff.vendor


def test_without_figures_to_compare_the_median_stands() -> None:
    bare = resolve_device("h100").model_copy(update={"id": "bare", "bf16_flops": None})
    assert CAL.borrowed_from(bare) is None
    assert CAL.device_efficiency(bare) == CAL.default
    assert nearest_measured(resolve_device("h100"), {}) is None
    unknown = {"x": DeviceEfficiency(compute=0.5, bandwidth=0.5)}  # no catalog figures
    assert nearest_measured(resolve_device("h100-pcie"), unknown) is None


def _timing(engine: str, device: str) -> dict[str, object]:
    found = plan_placement(load_model("llama-3.1-8b"), PlacementRequest(
        engine=engine, device=resolve_device(device), count=1, context=4096))
    return found.trust["timing"].model_dump()


def test_a_borrowed_band_is_never_narrower_than_its_lenders() -> None:
    # vLLM's own bands pass 100 % in some regimes: doubling must not cap them below that
    own = _timing("vllm@0.11", "h100-sxm")
    borrowed = _timing("vllm@0.11", "h100-pcie")
    assert float(str(own["band"])) > 0.5
    assert float(str(borrowed["band"])) == pytest.approx(2 * float(str(own["band"])))


def test_mi300x_is_timed_with_h200s_fractions_and_says_extrapolated() -> None:
    # TensorRT-LLM does not run on AMD: vLLM on both, the engine extrapolated on both
    own = _timing("vllm", "h200")
    borrowed = _timing("vllm", "mi300x")
    assert "no measurement on mi300x: h200's efficiencies" in str(borrowed["basis"])
    assert "no measurement on h200" not in str(own["basis"])
    assert borrowed["band"] == pytest.approx(2 * float(str(own["band"])))


def test_a_device_with_no_rows_doubles_the_band_of_its_lender() -> None:
    own = _timing("trtllm", "h100-sxm")
    borrowed = _timing("trtllm", "h100-pcie")
    assert not own["extrapolated"] and borrowed["extrapolated"]
    assert "no measurement on h100-pcie: h100-sxm's efficiencies" in str(borrowed["basis"])
    assert borrowed["band"] == pytest.approx(2 * float(str(own["band"])))


def test_an_engine_with_no_rows_says_whose_constants_it_takes() -> None:
    # llama.cpp has no run in the data at all
    own = _timing("trtllm", "h100")
    other = _timing("llamacpp", "h100")
    assert not own["extrapolated"]
    assert other["extrapolated"]
    assert "no measurement of llamacpp@" in str(other["basis"])
    assert f"{CAL.engine}'s constants" in str(other["basis"])
    assert CAL.measures("trtllm@1.0") and not CAL.measures("llamacpp")


def test_prefill_decode_has_no_rows_of_its_own_and_says_so() -> None:
    why = CAL.extrapolated("prefill/decode", None)
    assert any("no unseen row of the prefill/decode regime" in w for w in why)
    assert CAL.band("prefill/decode") == max(e.p90 for e in CAL.errors if e.held_out)
    assert not CAL.extrapolated("request rate", "h100-sxm", "trtllm")
