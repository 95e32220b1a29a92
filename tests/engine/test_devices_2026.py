"""The devices added for autumn 2026: their figures, placement on each, the working-set cap
of unified-memory devices, and which engines run where."""

from __future__ import annotations

import pytest

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.recommend import RecommendRequest
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import MemoryBasis, resolve_device
from llm_inventory.spec.presets import load_preset
from tests.conftest import Invoke

GIB = 1 << 30
MIB = 1 << 20


def test_catalog_figures() -> None:
    b300 = resolve_device("b300")
    assert b300.memory_marketing_bytes == 288_000_000_000
    assert b300.memory_basis is MemoryBasis.MARKETING and b300.memory_bytes == 288 * GIB
    assert b300.fp8_flops == 4_500_000_000_000_000  # HGX B300: 72 PFLOPS sparse / 8 / 2
    assert resolve_device("gb300").fp4_flops == 15_000_000_000_000_000  # NVL72 1,080 dense / 72
    assert resolve_device("mi355x").fp8_flops == 5_033_200_000_000_000
    assert resolve_device("h20").bf16_flops == 148_000_000_000_000
    assert resolve_device("rtx-5090").memory_marketing_bytes == 32_000_000_000
    spark = resolve_device("gb10")
    assert spark.id == "dgx-spark"
    assert round(spark.memory_bytes / GIB, 2) == 121.69  # the CUDA total vLLM prints
    assert spark.unified_memory_bytes == 128 * GIB
    # Metal's recommendedMaxWorkingSetSize, not the RAM
    assert resolve_device("m4-pro-64gb").memory_bytes == 49_152 * MIB
    assert round(resolve_device("m4-max-128gb").memory_bytes / GIB, 2) == 107.52
    ultra = resolve_device("m3-ultra-512gb")
    assert ultra.memory_basis is MemoryBasis.ESTIMATE and ultra.memory_bytes == 384 * GIB
    assert ultra.unified_memory_bytes == 512 * GIB


@pytest.mark.parametrize(("device", "engine"), [
    ("b300", "vllm"), ("gb300", "vllm"), ("h20", "vllm"), ("mi355x", "vllm"),
    ("mi355x", "sglang"), ("dgx-spark", "vllm"), ("dgx-spark", "llamacpp"),
    ("rtx-5090", "vllm"), ("m3-ultra-512gb", "llamacpp"), ("m4-max-128gb", "llamacpp"),
    ("m4-pro-64gb", "llamacpp"),
])
def test_placement_on_each_new_device(device: str, engine: str) -> None:
    dev = resolve_device(device)
    dtype = "Q4_K_M" if engine == "llamacpp" else "fp8"
    result = plan_placement(load_preset("llama-3.1-8b"), PlacementRequest(
        device=dev, count=1, engine=engine, context=8192, dtype=dtype))
    assert result.plans and result.plans[0].fits
    assert 0 < result.usable_bytes <= dev.memory_bytes


def test_unified_memory_plans_against_the_working_set_not_the_ram() -> None:
    """Llama-3.1-70B Q6_K (57.89 GB, 53.9 GiB) is under the 64 GB Mac's RAM but over the 48
    GiB Metal lets the GPU hold: it does not fit; on the 128 GB Mac (107.52 GiB) it does."""
    spec = load_preset("llama-3.1-70b")

    def fits(device: str) -> bool:
        dev = resolve_device(device)
        result = plan_placement(spec, PlacementRequest(
            device=dev, count=1, engine="llamacpp", context=4096, dtype="Q6_K"))
        assert result.usable_bytes <= dev.memory_bytes
        assert dev.unified_memory_bytes is not None
        assert result.usable_bytes < dev.unified_memory_bytes
        return any(p.fits for p in result.plans)

    assert not fits("m4-pro-64gb")
    assert fits("m4-max-128gb")


@pytest.mark.parametrize(("device", "engine"), [
    ("m4-max-128gb", "vllm"), ("m3-ultra-512gb", "sglang"), ("m4-pro-64gb", "trtllm"),
    ("mi355x", "trtllm"), ("mi300x", "trtllm"), ("mi325x", "trtllm"),
])
def test_engines_that_do_not_run_there_are_refused(device: str, engine: str) -> None:
    with pytest.raises(InputError) as info:
        plan_placement(load_preset("llama-3.1-8b"), PlacementRequest(
            device=resolve_device(device), count=1, engine=engine, context=4096))
    assert info.value.field == "engine"
    assert "does not run on" in info.value.message


def test_recommend_skips_engines_a_device_does_not_run() -> None:
    from llm_inventory.engine.recommend import recommend

    spec = load_preset("llama-3.1-8b")
    base = {"model_ref": "llama-3.1-8b", "workload": {"isl": 1000, "osl": 200}}
    with pytest.raises(InputError) as info:
        recommend(spec, RecommendRequest.model_validate(
            {**base, "devices": [resolve_device("m4-pro-64gb")], "engines": ["vllm"]}))
    assert info.value.field == "engine" and "m4-pro-64gb runs llamacpp" in info.value.message
    # a Mac beside a CUDA card: vLLM is evaluated on the card alone
    result = recommend(spec, RecommendRequest.model_validate(
        {**base, "devices": [resolve_device("m4-pro-64gb"), resolve_device("rtx-4090")],
         "engines": ["vllm"]}))
    assert result.plans and {p.device for p in result.plans} == {"rtx-4090"}


def test_cli_refuses_in_one_line(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "m4-max-128gb", "-n", "1")
    assert run.code == 2 and run.stdout == ""
    assert run.stderr.strip().count("\n") == 0 and "does not run on" in run.stderr
    shown = invoke("devices", "m4-max-128gb")
    assert "unified memory" in shown.stdout and "llamacpp" in shown.stdout
