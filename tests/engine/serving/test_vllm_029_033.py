"""vLLM from 0.29 to 0.33 and the ROCm platform: each rule read from the release's source
(`vllm_v29.py`, `vllm_v30.py`, `vllm_v33.py`; `vllm_v21.py`/`vllm_v26.py` for ROCm)."""

from __future__ import annotations

import json

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.base import LaunchSettings
from llm_inventory.engine.serving.runtimes import platform
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA


def _spec(path: str) -> ModelSpec:
    file = DATA / path
    return from_hf_config(json.loads(file.read_text()), str(file))


def _plan(spec: ModelSpec, device: str, engine: str, **asked: object):  # type: ignore[no-untyped-def]
    return plan_placement(spec, PlacementRequest(
        device=resolve_device(device), count=1, tp=1, engine=engine, **asked)).plans[0]


def test_the_platform_is_the_vendors() -> None:
    assert platform(resolve_device("mi300x")) == "rocm"
    assert platform(resolve_device("mi325x")) == "rocm"
    assert platform(resolve_device("h100")) == "cuda"
    assert platform(custom_device(80 * 2**30)) == "cuda"  # no vendor named: CUDA
    assert platform(resolve_device("gaudi3")) == "intel"


def test_rocm_profiles_no_graphs_before_0_26_and_does_from_0_26() -> None:
    """`Worker.determine_available_memory`: `current_platform.is_cuda()` in 0.21–0.25,
    `is_cuda_alike()` (CUDA or ROCm) from 0.26.0 (vllm#44825). The same model on an MI300X
    loses no graph estimate on 0.21 and 0.25.1, the CUDA one on 0.26 and later; an H200 is
    unchanged."""
    spec = _spec("models/Llama-3.1-8B.json")
    for era, rocm_graphs in (("vllm@0.21", False), ("vllm@0.24", False),
                             ("vllm@0.26", True), ("vllm@0.28", True), ("vllm", True)):
        amd = _plan(spec, "mi300x", era)
        nvidia = _plan(spec, "h200", era)
        assert amd.per_device is not None and nvidia.per_device is not None
        assert amd.per_device.reserve is not None and nvidia.per_device.reserve is not None
        graphs = amd.per_device.reserve.cuda_graph_bytes
        assert (graphs > 0) is rocm_graphs, era
        assert any("CUDA graph" in line for line in amd.startup) is rocm_graphs, era
        if rocm_graphs and era != "vllm@0.28" and era != "vllm":  # same batch defaults
            assert graphs == nvidia.per_device.reserve.cuda_graph_bytes
    amd_21 = _plan(spec, "mi300x", "vllm@0.21").per_device
    amd_26 = _plan(spec, "mi300x", "vllm@0.26").per_device
    assert amd_21 is not None and amd_26 is not None and amd_26.reserve is not None
    assert amd_21.kv_pool_bytes - amd_26.kv_pool_bytes == amd_26.reserve.cuda_graph_bytes
    rules = " ".join(rule for rule, _ in serving.get("vllm@0.21").rules)
    assert "CUDA only" in rules and "ROCm" in " ".join(
        rule for rule, _ in serving.get("vllm@0.26").rules)


def test_rocm_settings_name_the_platform_and_cuda_ones_do_not() -> None:
    asked = LaunchSettings(context=8192, kv_dtype="bf16")
    engine = serving.get("vllm@0.24")
    assert engine.settings(resolve_device("mi300x"), asked).flags["platform"] == "rocm"
    assert "platform" not in engine.settings(resolve_device("h100"), asked).flags
