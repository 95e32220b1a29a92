"""SGLang's KV accounting against its real start-ups (engine-logs/other-engines.json).

Each SGLang record whose model config is known is replayed from its config and flags:
- from the catalog device (L4, H100): the free memory at init is estimated, so the bound
  holds the estimate too;
- from the log's own free memory ("Load weight begin", or "Load weight end" + its "mem
  usage"), on the GPU class the record names: the context cost is set to what the log shows,
  which tests the pool rule, the default fraction, the cell size and the weights.
Predicted tokens and K/V bytes must be within 3 % of the printed figures (1 % when replayed
from the log's free memory).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.serving.base import KvLayer, LaunchSettings
from llm_inventory.engine.serving.sglang_rules import (
    InitModel,
    SglangCapacity,
    SglangEngine,
    SglangSettings,
    prefill_graph_sizes,
)
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device, MemoryBasis, custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config

GIB = 2**30
LOGS = Path(__file__).resolve().parents[2] / "data" / "engine-logs"

# record id: (config file, release the log's format and defaults place it in, catalog device,
# flags the log shows set on the command line). SG12 names no model and is not replayed.
CASES: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    # 0.4.x, TP 4 on 4×L4; 0.85 is printed in server_args (the TP ≥ 4 default of the era)
    "SG01": ("Qwen--QwQ-32B.json", "0.4.5", "l4", {"chunked_prefill_size": 2048}),
    # ~0.4.9 on a 24 GB-class card with 22.39 GiB free before loading (an RTX 4090 class:
    # no 22 GiB card has that much free)
    "SG03": ("meta-llama--Llama-3.1-8B-Instruct.json", "0.4.9", "rtx-4090", {}),
    # ~0.4.10 on an RTX 5080 (nvidia-smi 16,303 MiB, in the same file)
    "SG04": ("Qwen--Qwen3-0.6B.json", "0.4.10", "rtx-5080", {}),
    # ~0.4.4 on an H100 80GB, FA3 backend
    "SG07": ("meta-llama--Llama-3.1-8B-Instruct.json", "0.4.4", "h100-sxm", {}),
    # a 2026 build on a ~180 GB B200-class GPU, prefill CUDA graphs on
    "SG10": ("Qwen--Qwen3-8B.json", "0.5.15", "b200", {}),
}
PREDICTED = ("SG01", "SG07")  # clean servers whose GPU is in the catalog


def _records() -> dict[str, dict[str, Any]]:
    data = json.loads((LOGS / "other-engines.json").read_text())
    return {r["id"]: r for r in data if r["engine"] == "sglang"}


def _device(name: str) -> Device:
    if name == "rtx-5080":  # not in the catalog: nvidia-smi's total from the record
        return custom_device(16303 * 2**20).model_copy(
            update={"memory_basis": MemoryBasis.DRIVER, "intra_node_link": None})
    return resolve_device(name)


def _free_before_load(figures: dict[str, float]) -> float:
    if "load_begin_avail_gb" in figures:
        return figures["load_begin_avail_gb"]
    return figures["load_end_avail_gb"] + figures["weights_mem_usage_gb"]


@pytest.fixture
def engine_with() -> Iterator[Any]:
    """Register an SGLang era with its own init model (unregistered afterwards)."""
    added: list[SglangEngine] = []

    def make(version: str, init: InitModel) -> SglangEngine:
        engine = type(serving.get(f"sglang@{version}"))(init)
        assert isinstance(engine, SglangEngine)
        added.append(serving.register(engine))  # type: ignore[arg-type]
        return engine

    yield make
    for engine in added:
        serving.unregister(engine)


def _replay(record: dict[str, Any], engine: str, device: Device, flags: dict[str, Any],
            config: str) -> Plan:
    spec = from_hf_config(json.loads((LOGS / "configs" / config).read_text()), config)
    figures = record["figures"]
    tp = record["tp"]
    request = PlacementRequest(device=device, count=tp, tp=tp, pp=1, ep=1,
                               context=figures.get("context_len") or spec.max_context,
                               engine=engine, engine_flags=flags, limit=0)
    result = plan_placement(spec, request)
    assert result.engine == "sglang"
    return next(p for p in result.plans
                if p.disaggregation is None and (p.tp, p.pp, p.ep) == (tp, 1, 1))


def _printed_tokens(plan: Plan) -> tuple[int, float, float]:
    """(#tokens, K GB, V GB) from the plan's own "KV Cache is allocated" line."""
    line = next(x for x in plan.startup if x.startswith("KV Cache is allocated"))
    parts = line.replace(",", "").split()
    return int(parts[5]), float(parts[8]), float(parts[12])


def _check(record: dict[str, Any], plan: Plan, rel: float) -> None:
    figures = record["figures"]
    assert plan.per_device is not None
    tokens = plan.per_device.kv_capacity_tokens
    assert abs(tokens - figures["kv_tokens"]) <= rel * figures["kv_tokens"], (
        tokens, figures["kv_tokens"])
    printed_tokens, k, v = _printed_tokens(plan)
    assert printed_tokens == tokens
    assert abs(k - figures["k_size_gb"]) <= rel * figures["k_size_gb"] + 0.005, (k, figures)
    assert abs(v - figures["v_size_gb"]) <= rel * figures["v_size_gb"] + 0.005, (v, figures)
    kv = figures["k_size_gb"] + figures["v_size_gb"]
    assert abs(plan.per_device.kv_pool_bytes / GIB - kv) <= rel * kv + 0.01


@pytest.mark.parametrize("rid", PREDICTED)
def test_predicted_from_the_catalog_device(rid: str) -> None:
    config, version, device, flags = CASES[rid]
    record = _records()[rid]
    plan = _replay(record, f"sglang@{version}", _device(device), flags, config)
    _check(record, plan, 0.03)


@pytest.mark.parametrize("rid", sorted(CASES))
def test_replayed_from_the_logs_free_memory(rid: str, engine_with: Any) -> None:
    config, version, name, flags = CASES[rid]
    record = _records()[rid]
    device = _device(name)
    base = InitModel()
    dist = base.dist_single if record["tp"] == 1 else base.dist_pcie
    total = device.memory_bytes
    if device.memory_basis == MemoryBasis.DRIVER:
        total -= base.driver_extra_mib * 2**20  # the runtime's total, below nvidia-smi's
        device = device.model_copy(update={"memory_bytes": total,
                                           "memory_basis": MemoryBasis.RUNTIME})
    context = total - int(_free_before_load(record["figures"]) * GIB) - dist
    engine_with(version, base.model_copy(update={"context": context}))
    plan = _replay(record, "sglang", device, flags, config)
    _check(record, plan, 0.01)


def test_every_record_with_a_config_is_replayed() -> None:
    records = _records()
    assert set(CASES) | {"SG12"} == set(records)
    assert records["SG12"]["model_config"] is None


def test_startup_lines_in_sglangs_words() -> None:
    record = _records()["SG07"]
    config, version, device, flags = CASES["SG07"]
    plan = _replay(record, f"sglang@{version}", _device(device), flags, config)
    assert plan.startup[0].startswith("KV Cache is allocated. #tokens: ")
    assert plan.startup[0].endswith(" GB")
    tail = plan.startup[1]
    assert tail.startswith("max_total_num_tokens=") and "chunked_prefill_size=8192" in tail
    assert "max_running_requests=2049" in tail and tail.endswith("context_len=131072")


# --- the default fraction in each era ----------------------------------------------------

def _settings(version: str, device: str, **flags: Any) -> tuple[SglangEngine, SglangSettings]:
    engine = serving.get(f"sglang@{version}")
    assert isinstance(engine, SglangEngine)
    settings = engine.settings(resolve_device(device),
                               LaunchSettings(context=8192, kv_dtype="bf16", flags=flags))
    return engine, settings


@pytest.mark.parametrize(("version", "tp", "expected"), [
    ("0.4.3", 1, 0.88), ("0.4.3", 2, 0.87), ("0.4.5", 4, 0.85), ("0.4.5", 8, 0.81),
    ("0.4.5", 16, 0.79)])
def test_default_fraction_by_tp_size(version: str, tp: int, expected: float) -> None:
    engine, settings = _settings(version, "h200")  # the GPU does not matter in this era
    assert engine.fraction(settings, tp, 1) == expected


def test_default_fraction_by_gpu_size() -> None:
    # 0.4.6: the TP table up to 80 GiB, then a 13 GiB reserve
    engine, s = _settings("0.4.6", "h100-sxm")
    assert engine.fraction(s, 4, 1) == 0.85
    engine, s = _settings("0.4.6", "h200")
    assert engine.fraction(s, 4, 1) == pytest.approx((s.gpu_mem_mib - 13312) / s.gpu_mem_mib)
    # 0.4.7: 0.79 above 180,000 MiB
    engine, s = _settings("0.4.7", "mi300x")
    assert engine.fraction(s, 1, 1) == 0.79
    # 0.4.8–0.5.2: (9.5 + TP·PP/2) GiB on an 80 GB H100
    engine, s = _settings("0.4.9", "h100-sxm")
    gpu = s.gpu_mem_mib
    assert engine.fraction(s, 2, 1) == round((gpu - 10.5 * 1024) / gpu, 3)
    engine, s = _settings("0.5.2", "l4")
    assert engine.fraction(s, 4, 1) == round((s.gpu_mem_mib - 3.2 * 1024) / s.gpu_mem_mib, 3)


def test_default_fraction_by_reserve_formula() -> None:
    # 0.5.3 on an L40S (< 60 GiB): 512 + 4096 × 1.5 + 32 × 2 + 1/8 GiB
    engine, s = _settings("0.5.3", "l40s")
    gpu = s.gpu_mem_mib
    assert s.chunked_prefill_size == 4096
    assert engine.fraction(s, 1, 1) == round((gpu - (512 + 6144 + 64 + 128)) / gpu, 3)
    # TP 4 uses the larger CUDA-graph batch (160) and TP·PP/8 GiB
    assert engine.fraction(s, 4, 1) == round((gpu - (512 + 6144 + 320 + 512)) / gpu, 3)
    # the 10 GiB floor on an H100 does not bind (13,440 MiB), so TP·PP still counts
    engine, s = _settings("0.5.8", "h100-sxm")
    gpu = s.gpu_mem_mib
    assert engine.fraction(s, 1, 1) == round((gpu - 13440) / gpu, 3)
    # 0.5.10+: 8 MiB per prefill graph size, or 1.5 GiB for MLA models
    engine, s = _settings("0.5.15", "h100-sxm")
    graphs = len(prefill_graph_sizes(8192)) * 8
    assert engine.fraction(s, 1, 1) == round((gpu - 13440 - graphs) / gpu, 3)
    assert engine.fraction(s, 1, 1, mla=True) == round((gpu - 13440 - 1536) / gpu, 3)
    # 0.5.20+: 20–35 GiB cards prefill 4096 tokens and capture decode graphs up to 48
    engine, s = _settings("0.5.23", "rtx-4090")
    assert s.chunked_prefill_size == 4096
    _, old = _settings("0.5.19", "rtx-4090")
    assert old.chunked_prefill_size == 2048
    # an asked fraction is kept whatever the split
    engine, s = _settings("0.5.23", "h100-sxm", mem_fraction_static=0.7)
    assert engine.fraction(s, 8, 2) == 0.7


def test_prefill_graph_sizes() -> None:
    sizes = prefill_graph_sizes(16384)
    assert sizes[:3] == [4, 8, 12] and sizes[-1] == 16384 and len(sizes) == 74


# --- cell sizes --------------------------------------------------------------------------

def _layout(layers: list[KvLayer], **flags: Any) -> Any:
    engine, settings = _settings("0.5.23", "h100-sxm", **flags)
    return engine.pool_layout(layers, settings)


def test_gqa_cell() -> None:
    # Llama-3.1-8B on one rank: 32 layers × 8 heads × 128 × 2 (K and V) × 2 bytes
    layout = _layout([KvLayer(kind="full", bytes_per_token=8 * 128 * 2 * 2)] * 32)
    assert layout.page == 131_072
    cap = layout.capacity(131_072 * 1000 + 5)
    assert isinstance(cap, SglangCapacity)
    assert cap.tokens == 1000 and cap.k_bytes == cap.v_bytes == 1001 * 65_536


def test_mla_cell_has_no_two_and_is_not_split() -> None:
    # DeepSeek-V2-Lite: 27 layers × (512 + 64) × 2 bytes, the same on every TP rank
    layout = _layout([KvLayer(kind="mla", bytes_per_token=576 * 2, split_kv=False)] * 27)
    assert layout.page == 31_104 and layout.latent
    cap = layout.capacity(31_104 * 64)
    assert isinstance(cap, SglangCapacity)
    assert cap.tokens == 64 and cap.k_bytes == 65 * 31_104 and cap.v_bytes == 0
    engine, settings = _settings("0.5.23", "h100-sxm")
    lines = engine.startup_lines(cap, 31_104 * 64, settings)
    assert lines[0] == "KV Cache is allocated. #tokens: 64, KV size: 0.00 GB"


def test_hybrid_sliding_window_cell() -> None:
    # gpt-oss-20b-like: 12 full and 12 sliding layers of 8 heads × 64 × 2 × 2 bytes
    per = 8 * 64 * 2 * 2
    layers = [KvLayer(kind="full", bytes_per_token=per)] * 12 + [
        KvLayer(kind="sliding", window=128, bytes_per_token=per)] * 12
    layout = _layout(layers)
    assert layout.page == 12 * per + round(0.8 * 12 * per)
    cap = layout.capacity(layout.page * 10_000)
    assert isinstance(cap, SglangCapacity)
    assert cap.tokens == 10_000 and cap.swa_tokens == 8_000
    # the GPU-table era before 0.4.10 kept sliding layers whole
    engine, settings = _settings("0.4.9", "h100-sxm")
    assert engine.pool_layout(layers, settings).page == 24 * per
    # a ratio of 0.5 halves the sliding share
    assert _layout(layers, swa_full_tokens_ratio=0.5).page == 18 * per


def test_mamba_share_of_the_pool() -> None:
    per, state = 4 * 256 * 2 * 2, 3 * 2**20
    layers = [KvLayer(kind="full", bytes_per_token=per)] * 12 + [
        KvLayer(kind="mamba", fixed_bytes=state // 36, split_kv=False)] * 36
    layout = _layout(layers)
    pool = 100 * GIB
    cap = layout.capacity(pool)
    assert isinstance(cap, SglangCapacity)
    slots = int(pool * 0.9 / 1.9 // layout.fixed)
    assert cap.mamba_slots == slots
    assert cap.tokens == (pool - slots * layout.fixed) // layout.page
    # 0.5.3: 512 slots unless asked
    engine, settings = _settings("0.5.3", "h100-sxm")
    old = engine.pool_layout(layers, settings).capacity(pool)
    assert isinstance(old, SglangCapacity) and old.mamba_slots == 512


def test_page_size_and_max_total_tokens() -> None:
    layers = [KvLayer(kind="full", bytes_per_token=1000)]
    assert _layout(layers, page_size=64).measure(1000 * 1000)[1] == 960
    assert _layout(layers, max_total_tokens=300).measure(1000 * 1000)[1] == 300


def test_not_enough_memory() -> None:
    engine, settings = _settings("0.5.23", "h100-sxm", mem_fraction_static=0.5)
    layout = engine.pool_layout([KvLayer(kind="full", bytes_per_token=1000)], settings)
    cap = layout.capacity(-5)
    assert cap.tokens == 0
    assert engine.startup_error(cap, -5, settings) == (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.5")
    assert engine.startup_error(layout.capacity(10**9), 10**9, settings) is None


def test_unknown_engine_flag_is_refused() -> None:
    with pytest.raises(InputError, match="does not take 'gpu_memory_utilization'"):
        _settings("0.5.23", "h100-sxm", gpu_memory_utilization=0.9)
    with pytest.raises(InputError, match="page_size takes a whole number"):
        _settings("0.5.23", "h100-sxm", page_size="big")


# --- its command line --------------------------------------------------------------------

def test_parse_a_real_launch_command() -> None:
    engine = serving.get("sglang")
    assert ("python3", "-m", "sglang.launch_server") in engine.programs
    assert ("sglang", "serve") in engine.programs
    command = engine.parse_launch([
        "--model-path", "Qwen/Qwen3-235B-A22B", "--tp", "4", "--mem-fraction-static=0.85",
        "--context-length", "32768", "--chunked-prefill-size", "4096",
        "--max-running-requests", "128", "--page-size", "16", "--kv-cache-dtype", "fp8_e4m3",
        "--max-total-tokens", "400000", "--dp", "2", "--host", "0.0.0.0",
        "--enable-metrics", "--trust-remote-code"])
    assert command.engine == "sglang" and command.model == "Qwen/Qwen3-235B-A22B"
    assert (command.tp, command.dp, command.context) == (4, 2, 32768)
    assert command.memory_fraction == 0.85 and command.max_num_batched_tokens == 4096
    assert command.max_num_seqs == 128 and command.block_size == 16
    assert command.kv_dtype == "fp8_e4m3" and command.flags == {"max_total_tokens": 400000}
    assert command.ignored == ["--host 0.0.0.0", "--enable-metrics", "--trust-remote-code"]
    assert "--mem-fraction-static 0.85" in command.understood  # with its value, as vLLM's


def test_sglang_serve_takes_the_model_first() -> None:
    command = serving.get("sglang").parse_launch(["meta-llama/Llama-3.1-8B", "--tp-size", "2"])
    assert command.model == "meta-llama/Llama-3.1-8B" and command.tp == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["--model-path", "m", "--tp"], "--tp needs a value"),
    (["--model-path", "m", "--mem-fraction-static", "high"], "takes a number"),
    (["--model-path", "m", "--mem-fraction-static", "1.5"], r"in \(0, 1\]"),
    (["--model-path", "m", "--context-length", "0"], "at least 1"),
    (["--model-path", "m", "--kv-cache-dtype", "int3"], "is not one of"),
    (["--tp", "2"], "needs --model-path"),
])
def test_malformed_launch_commands_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        serving.get("sglang").parse_launch(argv)


def test_eras_are_registered_newest_first() -> None:
    labels = {v: serving.get(f"sglang@{v}").label for v in
              ("0.4.3", "0.4.6", "0.4.7", "0.4.9", "0.4.10", "0.5.3", "0.5.8", "0.5.15",
               "0.5.23")}
    assert labels["0.4.3"] == "SGLang 0.4.5" and labels["0.4.10"] == "SGLang 0.5.2"
    assert len(set(labels.values())) == 9
    assert serving.get("sglang").version == "0.5.23"
    with pytest.raises(InputError, match="predates"):
        serving.get("sglang@0.3.6")
    for engine in serving.all_eras():
        assert engine.rules and all(source for _, source in engine.rules)
