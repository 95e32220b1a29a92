"""vLLM's accounting eras against what those releases printed.

- V0 (0.2–0.10): every V0 start-up of engine-logs/other-engines.json whose model config is
  known is replayed with its launch settings: KV bytes and tokens within 3 % of the printed
  figures (tokens: blocks × 16 where blocks were printed, else the printed KV bytes over the
  per-token bytes the rules give), CPU blocks exactly.
- 0.21: vLLM 0.19 start-ups (runs.json) print the CUDA-graph estimate 0.21 subtracts up front
  (`cuda_graph_estimated_gib`); the 0.21 pool is held to the printed 0.19 pool minus that
  estimate (a derived figure), and our graph estimate to vLLM's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.serving.base import KvLayer
from llm_inventory.engine.serving.vllm import VllmV1
from llm_inventory.engine.serving.vllm_graphs import capture_sizes
from llm_inventory.engine.serving.vllm_v0 import VllmV0, aligned_bytes
from llm_inventory.engine.serving.vllm_v21 import VllmV21
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.presets import load_preset
from tests.engine.test_calibration import ASSUMED, _config_path, _dtype
from tests.reference import DATA, engine_runs, model_config

GIB = 2**30
LOGS = DATA / "engine-logs"


def _records() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in json.loads((LOGS / "other-engines.json").read_text())}


# Each V0 record with a known config: (config, device, the release it ran, model dtype,
# launch settings the log shows). DeepSeek-R1's shapes are DeepSeek-V3's (one architecture);
# DeepSeek-Coder-V2-Lite-Instruct's those of DeepSeek-V2-Lite (see the data README).
V0_POINTS: dict[str, tuple[str, str, str, str, dict[str, Any]]] = {
    "V01": ("engine-logs/configs/deepseek-ai--DeepSeek-V2-Lite.json", "a100-40gb", "0.7.1",
            "fp16", {"context": 8192, "max_num_seqs": 16}),
    "V02": ("engine-logs/configs/Qwen--Qwen2.5-Math-1.5B.json", "l40s", "0.7.2", "bf16",
            {"context": 4096}),
    "V05": ("models/DeepSeek-V3.json", "h200", "0.7.3", "bf16",
            {"context": 128000, "max_num_batched_tokens": 32000, "max_num_seqs": 1024}),
    "V07": ("engine-logs/configs/meta-llama--Llama-2-7b-hf.json", "h100-sxm", "0.8.1", "fp16",
            {"context": 4096}),
    "V08": ("engine-logs/configs/meta-llama--Llama-2-7b-hf.json", "a100-80gb", "0.2.4", "fp16",
            {"context": 4096}),
}


def replay_v0(rid: str) -> tuple[dict[str, Any], Plan]:
    record = _records()[rid]
    config, device_id, version, dtype, settings = V0_POINTS[rid]
    spec = from_hf_config(json.loads((DATA / config).read_text()), config)
    spec = spec.model_copy(update={"dtype": dtype})
    device = resolve_device(device_id)
    printed = record["figures"].get("total_gpu_memory_gib")
    if printed:  # the total the runtime reported in that log
        device = custom_device(int(printed * GIB), device)
    tp = record["tp"]
    result = plan_placement(spec, PlacementRequest(
        device=device, count=tp, tp=tp, pp=1, ep=1, engine=f"vllm@{version}", limit=0,
        kv_dtype=dtype, gpu_memory_utilization=record["flags"]["gpu_memory_utilization"],
        **settings))
    assert result.engine_version == version
    plan = next(p for p in result.plans if p.disaggregation is None and p.tp == tp
                and p.pp == 1 and p.ep == 1)
    return record, plan


def _within(ours: float, theirs: float, rel: float, printed: float = 0.0) -> bool:
    return abs(ours - theirs) <= rel * theirs + printed


@pytest.mark.parametrize("rid", ["V01", "V02", "V05", "V08"])
def test_v0_start_ups(rid: str) -> None:
    record, plan = replay_v0(rid)
    figures = record["figures"]
    d = plan.per_device
    assert d is not None
    if "kv_cache_gib" in figures:
        assert _within(d.kv_pool_bytes / GIB, figures["kv_cache_gib"], 0.03, 0.005), (
            d.kv_pool_bytes / GIB, figures["kv_cache_gib"])
    blocks = figures.get("gpu_blocks")
    tokens = blocks * 16 if blocks else int(figures["kv_cache_gib"] * GIB
                                           / d.kv_bytes_per_token)
    assert _within(d.kv_capacity_tokens, tokens, 0.03, 16), (d.kv_capacity_tokens, tokens)
    if "cpu_blocks" in figures and rid != "V07":
        assert f"# CPU blocks: {figures['cpu_blocks']}" in plan.startup[2]


def test_v0_lora_launch_is_replayed_with_its_printed_reserve() -> None:
    """V07 ran with LoRA adapters on (that deployment's launch flags, not in the log), which
    the estimate does not model: its accounting is checked with the printed reserve, and the
    estimate's miss is bounded."""
    record, plan = replay_v0("V07")
    f, d = record["figures"], plan.per_device
    assert d is not None
    pool = (f["budget_gib"] - f["weights_gib"] - f["non_torch_gib"]
            - f["activation_peak_gib"]) * GIB
    assert abs(int(pool // (16 * d.kv_bytes_per_token)) - f["gpu_blocks"]) <= 2
    assert _within(d.kv_pool_bytes / GIB, f["kv_cache_gib"], 0.04)


def test_mla_entries_are_padded_to_256_bytes_in_v0_only() -> None:
    """DeepSeek-V3/R1: 576 latent elements, 1,152 B per layer in bf16, 1,280 B in V0; the
    padding counts model-dtype elements, so an fp8 cache pays 640 B."""
    latent = KvLayer(kind="mla", bytes_per_token=1152)
    assert aligned_bytes(latent, "bf16", "bf16") == 1280
    assert aligned_bytes(KvLayer(kind="mla", bytes_per_token=576), "fp8", "bf16") == 640
    assert aligned_bytes(KvLayer(kind="full", bytes_per_token=1152), "bf16", "bf16") == 1152
    record, plan = replay_v0("V05")
    assert plan.per_device is not None and plan.per_device.kv_bytes_per_token == 61 * 1280
    # the printed figures imply 78,083 B per token
    implied = record["figures"]["kv_cache_gib"] * GIB / (record["figures"]["gpu_blocks"] * 16)
    assert abs(implied - 61 * 1280) < 10
    spec = load_preset("deepseek-r1")
    request = PlacementRequest(device=resolve_device("h200"), count=8, tp=8, limit=1)
    v1 = plan_placement(spec, request.model_copy(update={"engine": "vllm@0.19"}))
    assert v1.plans[0].per_device is not None
    assert v1.plans[0].per_device.kv_bytes_per_token == 61 * 1152


def test_v0_prints_its_own_lines_and_stops_in_its_words() -> None:
    record, plan = replay_v0("V05")
    assert plan.startup[0].startswith("the current vLLM instance can use total_gpu_memory "
                                      "(139.81GiB) x gpu_memory_utilization (0.85) = 118.84GiB")
    assert plan.startup[2].startswith("# cuda blocks: ")
    assert plan.startup[3].startswith("Maximum concurrency for 128000 tokens per request: ")
    old = serving.get("vllm@0.6")
    assert isinstance(old, VllmV0) and old.version == "0.6"
    spec = load_preset("llama-3.1-8b")
    long = plan_placement(spec, PlacementRequest(
        device=resolve_device("l4"), count=1, context=131072, engine="vllm@0.8"))
    stop = long.plans[0].startup_error
    assert stop is not None and "is larger than the maximum number of tokens that can be " \
        "stored in KV cache" in stop
    assert long.plans[0].longest_context is not None
    assert f"({long.plans[0].per_device.kv_capacity_tokens})" in stop  # type: ignore[union-attr]


def test_eras_and_defaults() -> None:
    assert isinstance(serving.get("vllm"), VllmV21)
    assert serving.get("vllm").version == "0.33"
    assert type(serving.get("vllm@0.19")) is VllmV1
    v020 = serving.get("vllm@0.20.2")  # the 0.11–0.20 era, answering as 0.20.2
    assert isinstance(v020, VllmV1) and not isinstance(v020, VllmV21)
    assert v020.version == "0.20.2"
    assert isinstance(serving.get("vllm@0.10"), VllmV0)
    assert isinstance(serving.get("vllm@0.25"), VllmV21)
    assert serving.get("vllm@0.25").version == "0.25"
    # one default for library and CLI: the newest modelled release
    assert PlacementRequest(device=resolve_device("h100"), count=1).engine == "vllm"


def test_capture_sizes_follow_vllm() -> None:
    sizes = capture_sizes(1024, 8192)
    assert sizes[:4] == [1, 2, 4, 8] and sizes[-1] == 512 and len(sizes) == 51
    assert capture_sizes(256, 2048)[-1] == 512
    assert capture_sizes(8, 8192)[-1] == 16
    assert capture_sizes(1024, 128)[-1] == 128


def _replay_021(run: dict[str, Any]) -> Plan | None:
    path = _config_path(run)
    if path is not None:
        spec = from_hf_config(json.loads(path.read_text()), path.name)
    elif run["model"] in ASSUMED:
        base, scheme = ASSUMED[run["model"]]
        spec = from_hf_config(model_config(base), base).model_copy(
            update={"quantization": scheme})
    else:
        return None
    dtype = _dtype(run["dtype"])
    spec = spec.model_copy(update={"dtype": dtype})
    result = plan_placement(spec, PlacementRequest(
        device=resolve_device(run["gpu"]), count=run["tp"] * run["pp"], tp=run["tp"],
        pp=run["pp"], ep=1, context=run["max_model_len"], engine="vllm@0.21",
        gpu_memory_utilization=run["gpu_memory_utilization"],
        max_num_batched_tokens=run["max_num_batched_tokens"], block_size=16,
        dtype="fp8" if run["quantization"] == "fp8" else None,
        kv_dtype=dtype if run["kv_cache_dtype"] == "auto" else run["kv_cache_dtype"],
        limit=0))
    return next(p for p in result.plans if p.disaggregation is None
                and (p.tp, p.pp, p.ep) == (run["tp"], run["pp"], 1))


@pytest.mark.parametrize("run", [pytest.param(r, id=r["id"]) for r in engine_runs()])
def test_021_subtracts_the_graph_estimate(run: dict[str, Any]) -> None:
    plan = _replay_021(run)
    if plan is None:
        return  # no config for this model: runs.json's own README says so
    actual = run["actual"]
    estimate = actual["cuda_graph_estimated_gib"]
    d = plan.per_device
    assert d is not None
    graphs = d.reserve.cuda_graph_bytes / GIB
    assert abs(graphs - estimate) <= 1.0, (graphs, estimate)
    derived = actual["kv_cache_gib"] - estimate
    assert _within(plan.stages[0].kv_pool_bytes / GIB, derived, 0.03, 0.01)
    tokens = actual["kv_tokens"] * derived / actual["kv_cache_gib"]
    assert _within(d.kv_capacity_tokens, tokens, 0.03, 16)
    line = next(x for x in plan.startup if x.startswith("CUDA graph memory profiling"))
    util = run["gpu_memory_utilization"]
    delta = d.reserve.cuda_graph_bytes / resolve_device(run["gpu"]).memory_bytes
    assert f"--gpu-memory-utilization={util:.4f} is equivalent to " \
        f"--gpu-memory-utilization={round(util - delta, 4):.4f}" in line


def test_most_runs_replay_on_021() -> None:
    assert sum(1 for r in engine_runs() if _replay_021(r) is not None) >= 26


def test_enforce_eager_drops_the_graph_reserve() -> None:
    spec = load_preset("llama-3.1-8b")
    # one utilization for both eras (their defaults differ: 0.92 from 0.21, 0.90 before)
    request = PlacementRequest(device=resolve_device("h100"), count=1, limit=1,
                               engine="vllm@0.21", gpu_memory_utilization=0.92)
    graphs = plan_placement(spec, request).plans[0]
    eager = plan_placement(spec, request.model_copy(
        update={"engine_flags": {"enforce_eager": True}})).plans[0]
    v019 = plan_placement(spec, request.model_copy(update={"engine": "vllm@0.19"})).plans[0]
    assert graphs.per_device is not None and eager.per_device is not None
    assert v019.per_device is not None
    assert eager.per_device.kv_pool_bytes == v019.per_device.kv_pool_bytes
    assert graphs.per_device.kv_pool_bytes == (
        v019.per_device.kv_pool_bytes - graphs.per_device.reserve.cuda_graph_bytes)
    assert not any("CUDA graph" in line for line in eager.startup)
