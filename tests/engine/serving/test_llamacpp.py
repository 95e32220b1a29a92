"""llama.cpp's KV memory against what it printed (engine-logs/other-engines.json), exactly.

Every llama.cpp record is replayed with its model's config and the settings its log shows:
K, V and total MiB, cells and layers must equal the printed figures, and the lines we print
must read as llama.cpp's (whitespace aside: one record was re-typed). Then the rules one by
one: padding by era, split streams, sliding-window caches, quantized cache types, MLA by
build and fork, recurrent state, offload and the command line.
"""

from __future__ import annotations

import json
import re
from importlib.resources import files
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.engine.serving.base import EngineSettings, LaunchSettings, device_layers_by_index
from llm_inventory.engine.serving.ggml_types import GGML_TYPES, KV_CACHE_TYPES, row_bytes
from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp, at_build, kv_lines, layer_devices
from llm_inventory.engine.serving.llamacpp_rules import CellPool, Resolved, context_cells, swa_cells
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from llm_inventory.spec.presets import load_preset
from tests.reference import DATA

MIB = 2**20
LOGS = DATA / "engine-logs"
H100 = resolve_device("h100")


def _records() -> dict[str, dict[str, Any]]:
    rows = json.loads((LOGS / "other-engines.json").read_text())
    return {r["id"]: r for r in rows if r["engine"] == "llama.cpp"}


def _hf(path: str) -> ModelSpec:
    return from_hf_config(json.loads((DATA / path).read_text()), path)


# record → (model config, the engine its log format shows, its settings, where its KV lives)
REPLAYS: dict[str, tuple[Any, LlamaCpp, dict[str, Any], list[str]]] = {
    # "1/1 seqs" and the llama_kv_cache_unified prefix: b5913 to b6239
    "L01": (lambda: _hf("engine-logs/configs/Qwen--Qwen3-1.7B.json"), at_build(6000),
            {"ctx_size": 1024, "parallel": 1, "ubatch_size": 512, "n_gpu_layers": 0}, ["CPU"]),
    # "1 seqs": before b5913
    "L03": (lambda: _hf("models/Phi-3-mini-4k-instruct.json"), at_build(5300),
            {"ctx_size": 4096, "parallel": 1, "ubatch_size": 256, "batch_size": 256,
             "flash_attn": "off", "n_gpu_layers": 33}, ["CUDA0"]),
    "L05": (lambda: load_preset("qwen3-235b-a22b"), at_build(5300),
            {"ctx_size": 4096, "parallel": 1, "n_gpu_layers": 85}, ["CPU", "CUDA0", "CUDA1",
                                                                   "CUDA2"]),
    # ik_llama.cpp prints the older lines
    "L07": (lambda: _hf("engine-logs/configs/Qwen--Qwen3-0.6B.json"), get("ik_llama"),  # type: ignore[dict-item]
            {"ctx_size": 4096, "flash_attn": "off", "ubatch_size": 512, "n_gpu_layers": 0},
            ["CPU"]),
    # two GPUs whose free memory split the 61 layers 32/29 (-ts reproduces the split)
    "L09": (lambda: _hf("models/DeepSeek-V3.json"), get("ik_llama"),  # type: ignore[dict-item]
            {"ctx_size": 16384, "flash_attn": "on", "ubatch_size": 512, "n_gpu_layers": 99,
             "tensor_split": "0.51,0.49"}, ["CUDA0", "CUDA1"]),
}


def _settings(engine: LlamaCpp, flags: dict[str, Any], context: int = 4096) -> EngineSettings:
    return engine.settings(H100, LaunchSettings(context=context, kv_dtype="fp16", flags=flags))


def _pools(spec: ModelSpec, engine: LlamaCpp, settings: EngineSettings,
           devices: list[str]) -> list[tuple[str, CellPool]]:
    """Each device's caches, the layers split as llama.cpp splits them."""
    stack = spec.decoder
    assert stack is not None
    layers = engine.state_layers(spec, state_layers(spec), settings)
    per_layer = device_layers_by_index(layers, 1, "fp16", stack.layers)
    gpus = [d for d in devices if d != "CPU"]
    ranges = engine.stage_ranges(stack.layers, len(gpus), settings) or []
    out: list[tuple[str, CellPool]] = []
    on_gpu = {i for r in ranges for i in r}
    if "CPU" in devices:
        host = [x for i, row in enumerate(per_layer) if i not in on_gpu for x in row]
        out.append(("CPU", engine.pool_layout(host, settings)))  # type: ignore[arg-type]
    for name, r in zip(gpus, ranges, strict=True):
        mine = [x for i in r for x in per_layer[i]]
        out.append((name, engine.pool_layout(mine, settings)))  # type: ignore[arg-type]
    return out


def _kv_quote(record: dict[str, Any]) -> list[str]:
    keep = ("KV buffer size", ": size =", "KV self size")
    lines = [re.sub(r"^llama\[\d+\]: ", "", line) for line in record["quote"].splitlines()]
    return [_normal(line) for line in lines if any(k in line for k in keep)]


def _normal(line: str) -> str:
    """Whitespace aside: one record's lines were re-typed with their padding dropped."""
    return re.sub(r"\(\s+", "(", " ".join(line.split()))


@pytest.mark.parametrize("record_id", sorted(REPLAYS))
def test_every_record_replays_exactly(record_id: str) -> None:
    record = _records()[record_id]
    make_spec, engine, flags, devices = REPLAYS[record_id]
    spec = make_spec()
    settings = _settings(engine, flags)
    pools = _pools(spec, engine, settings, devices)
    figures = record["figures"]
    k = sum(c.k_bytes for _, pool in pools for c in pool.modules)
    v = sum(c.v_bytes for _, pool in pools for c in pool.modules)
    assert round((k + v) / MIB, 2) == figures["kv_mib"]
    if "k_mib" in figures:
        assert (round(k / MIB, 2), round(v / MIB, 2)) == (figures["k_mib"], figures["v_mib"])
    if "kv_cells" in figures:
        modules = [c for _, pool in pools for c in pool.modules]
        assert {c.cells for c in modules} == {figures["kv_cells"]}
        assert sum(c.layers for c in modules) == figures["kv_layers"]
    for name in ("cuda0", "cuda1"):
        if f"{name}_kv_mib" in figures:
            mine = dict(pools)[name.upper()]
            assert round(mine.total / MIB, 2) == figures[f"{name}_kv_mib"]
    printed = [_normal(line) for line in kv_lines(engine, pools, settings)]
    quoted = _kv_quote(record)
    if record_id == "L05":  # re-typed in a pull request: its size line alone
        printed = [line for line in printed if "size =" in line and "buffer" not in line]
    assert [line for line in printed if line in quoted] == quoted, (printed, quoted)


def test_the_mla_record_is_the_latent_alone() -> None:
    """61 layers × 16,384 cells × 576 f16 values: K only, nothing for V (ik_llama.cpp -mla 3,
    and llama.cpp from b7880); a b7000 build keeps a 512-wide V copy, a b5000 build full
    heads."""
    spec = _hf("models/DeepSeek-V3.json")
    flags = {"ctx_size": 16384, "flash_attn": "on", "parallel": 1}

    def total(engine: LlamaCpp) -> tuple[int, int]:
        pool = _pools(spec, engine, _settings(engine, flags), ["CPU"])[0][1]
        return (sum(c.k_bytes for c in pool.modules), sum(c.v_bytes for c in pool.modules))

    assert total(get("llamacpp")) == (61 * 16384 * 576 * 2, 0)  # type: ignore[arg-type]
    assert total(at_build(7000)) == (61 * 16384 * 576 * 2, 61 * 16384 * 512 * 2)
    assert total(at_build(5000)) == (61 * 16384 * 128 * 192 * 2, 61 * 16384 * 128 * 128 * 2)
    ik = get("ik_llama")
    assert total(ik) == (61 * 16384 * 576 * 2, 0)  # type: ignore[arg-type]
    pool = _pools(spec, ik, _settings(ik, {**flags, "mla_use": 1, "flash_attn": "off"}),  # type: ignore[arg-type]
                  ["CPU"])[0][1]
    assert sum(c.v_bytes for c in pool.modules) == 61 * 16384 * 512 * 2  # kv^T


def test_compute_buffers_are_an_estimate_close_to_the_logs() -> None:
    """CPU compute buffers of the Qwen3 records (logits of 512 tokens × 151,936 f32 and the
    attention output) exactly; the Phi-3 CUDA buffer within 15 %."""
    cases = [("L01", 300.75, 0.001), ("L07", 300.75, 0.001), ("L03", 150.0, 0.15)]
    for record_id, printed, bound in cases:
        make_spec, engine, flags, _ = REPLAYS[record_id]
        spec = make_spec()
        result = plan_placement(spec, PlacementRequest(
            device=H100, count=1, tp=1, pp=1, engine=f"llamacpp@{engine.build}"
            if engine.fork == "upstream" else "ik_llama", context=flags["ctx_size"],
            engine_flags={**flags, "n_gpu_layers": -1}))
        stage = result.plans[0].stages[0]
        compute = stage.reserve_bytes - 300 * MIB
        assert abs(compute / MIB - printed) <= bound * printed, (record_id, compute / MIB)


# --- the rules, one by one ------------------------------------------------------------------


def _r(build: int, n_ctx: int, n_seq: int = 1, unified: bool = False, fa: bool = True,
       fork: str = "upstream") -> Resolved:
    return Resolved(build=build, fork=fork, n_ctx=n_ctx, n_seq=n_seq, unified=unified,
                    n_ubatch=512, flash_attn=fa, type_k="f16", type_v="f16", swa_full=False)


def test_cells_are_padded_by_era() -> None:
    assert context_cells(_r(7880, 5000)) == (5120, 1, 5120)  # 256 whatever the kernel
    assert context_cells(_r(7880, 5000, fa=False)) == (5120, 1, 5120)
    assert context_cells(_r(6000, 5000, fa=False)) == (5024, 1, 5024)  # 32 without FA
    assert context_cells(_r(6000, 5000)) == (5120, 1, 5120)  # 256 with it
    assert context_cells(_r(4000, 4100, fa=False)) == (4128, 1, 4128)


def test_a_split_cache_gives_every_sequence_its_stream() -> None:
    # b7000+: n_ctx padded first, then n_ctx / n_seq per stream, padded again
    assert context_cells(_r(7880, 32768, n_seq=4)) == (8192, 4, 32768)
    assert context_cells(_r(7880, 10000, n_seq=3)) == (3584, 3, 10752)
    assert context_cells(_r(7880, 32768, n_seq=4, unified=True)) == (32768, 1, 32768)
    # b5913+: ceil(n_ctx / n_seq) per stream
    assert context_cells(_r(6000, 10000, n_seq=3, fa=False)) == (3360, 3, 10080)
    # before streams: one cache, the sequences share it
    assert context_cells(_r(5300, 10000, n_seq=3, fa=False)) == (10016, 1, 10016)


def test_sliding_layers_get_a_window_sized_cache() -> None:
    r = _r(7880, 32768)
    assert swa_cells(r, 32768, 4096) == 4608  # pad(4096 + 512, 256)
    assert swa_cells(_r(7880, 32768, n_seq=4, unified=True), 32768, 1024) == 4608
    assert swa_cells(_r(7880, 2048), 2048, 4096) == 2048
    assert swa_cells(Resolved(**{**_r(7880, 32768).__dict__, "swa_full": True}), 32768,
                     4096) == 32768
    assert swa_cells(_r(6000, 32768, fa=False), 32768, 4096) == 4608  # min(n, pad(.., 32))
    assert swa_cells(_r(5000, 32768), 32768, 4096) == 32768  # no SWA cache yet
    # Gemma 2 9B: 21 sliding layers at 4,096 + 512 cells, 21 full at the context
    spec = load_preset("gemma-2-9b")
    engine = get("llamacpp")
    settings = _settings(engine, {"ctx_size": 32768, "parallel": 1})  # type: ignore[arg-type]
    pool = _pools(spec, engine, settings, ["CPU"])[0][1]  # type: ignore[arg-type]
    sizes = {c.role: (c.cells, c.layers) for c in pool.modules}
    assert sizes == {"base": (32768, 21), "swa": (4608, 21)}
    lines = kv_lines(engine, [("CUDA0", pool)], settings)  # type: ignore[arg-type]
    assert lines[0] == "llama_kv_cache_iswa: creating non-SWA KV cache, size = 32768 cells"
    assert lines[3].startswith("llama_kv_cache_iswa: creating     SWA KV cache, size = 4608")


def test_phi3_windows_are_disabled_as_llama_cpp_disables_them() -> None:
    spec = _hf("models/Phi-3-mini-4k-instruct.json")
    engine = at_build(7880)
    pool = _pools(spec, engine, _settings(engine, {"ctx_size": 4096}), ["CPU"])[0][1]
    assert [c.role for c in pool.modules] == ["base"]


def test_the_no_window_rule_reads_the_model_type_not_the_source_label() -> None:
    """The `mistral-7b` preset and the same config.json read as a file are one model:
    llama.cpp loads no window for Mistral (LLM_ARCH_LLAMA), so both cache every layer at
    the context (32 layers × 8,192 cells × 8 KV heads × 128 × 2 × f16 = 1,024 MiB)."""
    engine = at_build(7880)
    settings = _settings(engine, {"ctx_size": 8192, "parallel": 1})
    preset = load_preset("mistral-7b")
    data = json.loads((files("llm_inventory") / "data/presets/mistral-7b.json").read_text())
    from_file = from_hf_config(data, "config.json")
    relabelled = from_file.model_copy(update={"source": "my own notes"})
    for spec in (preset, from_file, relabelled):
        assert spec.model_type == "mistral"
        pool = _pools(spec, engine, settings, ["CPU"])[0][1]
        assert [(c.role, c.cells) for c in pool.modules] == [("base", 8192)]
        assert sum(c.k_bytes + c.v_bytes for c in pool.modules) == 1024 * MIB
    # a hand-written spec names no model type: its window is kept
    assert preset.model_copy(update={"model_type": None}).model_type is None


def test_quantized_cache_types_use_ggml_blocks() -> None:
    assert row_bytes("q8_0", 1024) == 1024 // 32 * 34
    assert row_bytes("q4_0", 1024) == 1024 // 32 * 18
    assert row_bytes("q5_1", 1024) == 1024 // 32 * 24
    spec = _hf("engine-logs/configs/Qwen--Qwen3-1.7B.json")
    engine = at_build(7880)
    settings = _settings(engine, {"ctx_size": 4096, "cache_type_k": "q8_0",
                                  "cache_type_v": "q4_0", "flash_attn": "on", "parallel": 1})
    pool = _pools(spec, engine, settings, ["CPU"])[0][1]
    cache = pool.modules[0]
    assert cache.k_bytes == 28 * 4096 * (1024 // 32 * 34)
    assert cache.v_bytes == 28 * 4096 * (1024 // 32 * 18)
    line = kv_lines(engine, [("CUDA0", pool)], settings)[1]
    assert line.endswith("K (q8_0):  119.00 MiB, V (q4_0):   63.00 MiB")


def test_a_quantized_v_cache_needs_flash_attention() -> None:
    engine = at_build(7880)
    settings = _settings(engine, {"cache_type_v": "q8_0", "flash_attn": "off"})
    capacity = engine.pool_layout([], settings).capacity(0)
    assert engine.startup_error(capacity, 0, settings) == (
        "llama_init_from_model: V cache quantization requires flash_attn")
    with pytest.raises(InputError, match="cache_type_k"):
        _settings(engine, {"cache_type_k": "q3_k"})


def test_recurrent_state_is_per_sequence_in_f32() -> None:
    spec = load_preset("jamba-v0.1")
    engine = at_build(7880)
    one = _pools(spec, engine, _settings(engine, {"ctx_size": 4096, "parallel": 1}),
                 ["CPU"])[0][1]
    four = _pools(spec, engine, _settings(engine, {"ctx_size": 4096 * 4, "parallel": 4}),
                  ["CPU"])[0][1]
    state1 = [c for c in one.modules if c.role == "state"][0]
    state4 = [c for c in four.modules if c.role == "state"][0]
    assert state4.bytes == 4 * state1.bytes
    assert state1.layers == 28  # Jamba's Mamba layers; its 4 attention layers are in "base"
    assert [c.layers for c in one.modules if c.role == "base"] == [4]


def test_every_ggml_type_matches_the_gguf_package() -> None:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    theirs = {t.name.lower(): GGML_QUANT_SIZES[t] for t in GGMLQuantizationType
              if t in GGML_QUANT_SIZES}
    for name, sizes in GGML_TYPES.items():
        assert theirs[name] == sizes, name
    assert set(KV_CACHE_TYPES) <= set(GGML_TYPES)


def test_gguf_types_as_weight_dtypes() -> None:
    """--dtype q8_0 stores matmul weights at 34 bytes per 32 values."""
    from llm_inventory.engine.dtypes import weight_dtypes
    from llm_inventory.engine.weights import quantized_bits

    spec = _hf("engine-logs/configs/Qwen--Qwen3-1.7B.json")
    for name, block, size in (("q8_0", 32, 34), ("Q4_K_M", 256, 144), ("iq4_xs", 256, 136)):
        _, q = weight_dtypes(spec, name)
        assert q is not None
        assert quantized_bits((2048, 6144), 1, q) == 2048 * 6144 // block * size * 8


# --- offload ---------------------------------------------------------------------------------


def test_layers_go_to_gpus_as_load_tensors_assigns_them() -> None:
    # all 32 layers and the output on two equal GPUs: 33 slots split at 0.5
    devices = layer_devices(32, -1, [1.0, 1.0])
    assert devices.count(0) == 17 and devices.count(1) == 16 and devices[32] == 1
    # -ngl 10 of 32: the last ten layers, output on the CPU
    devices = layer_devices(32, 10, [1.0])
    assert devices[:22] == [None] * 22 and devices[22:32] == [0] * 10 and devices[32] is None
    # -ngl 33 offloads the output too
    assert layer_devices(32, 33, [1.0])[32] == 0
    # -ts 3,1
    assert layer_devices(32, -1, [3.0, 1.0]).count(0) == 25


def test_partial_offload_and_cpu_experts_show_the_host_share() -> None:
    spec = load_preset("qwen3-30b-a3b")
    base = {"ctx_size": 8192, "parallel": 1}

    def plan(**flags: Any) -> Any:
        result = plan_placement(spec, PlacementRequest(
            device=resolve_device("rtx-4090"), count=1, tp=1, pp=1, engine="llamacpp",
            context=8192, dtype="q4_k_m", engine_flags={**base, **flags}))
        return result.plans[0]

    full = plan()
    assert full.host is not None and full.host.layers == 0
    partial = plan(n_gpu_layers=24)
    assert partial.host is not None and partial.host.layers == 24
    assert partial.stages[0].layers == 24
    assert partial.host.kv_bytes == 24 * 8192 * 4 * 128 * 2 * 2
    assert partial.stages[0].weight_bytes < full.stages[0].weight_bytes
    experts = plan(n_cpu_moe=48)
    assert experts.host is not None
    assert experts.stages[0].weight_bytes + experts.host.weight_bytes == pytest.approx(
        full.stages[0].weight_bytes + full.host.weight_bytes, abs=1)
    assert experts.stages[0].weight_bytes < 3 * 2**30  # attention and embeddings only
    assert any("CPU KV buffer" in line for line in partial.startup)


def test_placement_splits_by_layer_only() -> None:
    spec = load_preset("qwen3-8b")
    result = plan_placement(spec, PlacementRequest(device=H100, count=2, engine="llamacpp",
                                                   context=8192))
    assert {(p.tp, p.pp) for p in result.plans} >= {(1, 1), (1, 2)}
    assert all(p.tp == 1 for p in result.plans)
    assert any("tensor parallelism" in r.reason for r in result.refused)
    plan = next(p for p in result.plans if p.pp == 2 and p.disaggregation is None)
    assert plan.fits and plan.per_device is not None
    assert plan.per_device.kv_capacity_tokens == 8192
    assert sum(s.kv_pool_bytes for s in plan.stages) == 36 * 8192 * 8 * 128 * 2 * 2
    assert result.engine == "llamacpp" and result.engine_version == "7880"


def test_a_cache_the_device_cannot_hold_fails_to_allocate() -> None:
    spec = load_preset("qwen3-8b")
    result = plan_placement(spec, PlacementRequest(
        device=resolve_device("rtx-4090"), count=1, tp=1, pp=1, engine="llamacpp",
        context=262144, engine_flags={"parallel": 1}))
    plan = result.plans[0]
    assert not plan.fits and plan.longest_context is not None
    assert 0 < plan.longest_context < 262144
    assert plan.per_device is not None and plan.per_device.kv_pool_bytes == 0


# --- the command line ------------------------------------------------------------------------


def test_the_command_line_is_read() -> None:
    engine = get("llamacpp")
    assert ("llama-server",) in engine.programs and ("./llama-server",) in engine.programs
    cmd = engine.parse_launch(
        "-m models/Qwen3-1.7B-Q4_K_M.gguf -c 32768 -ngl 99 -fa on -ctk q8_0 -ctv q8_0 "
        "-np 4 -ub 1024 --swa-full --n-cpu-moe 4 -ts 3,1 --host 0.0.0.0 --jinja".split())
    assert cmd.model == "models/Qwen3-1.7B-Q4_K_M.gguf" and cmd.dtype == "q4_k_m"
    assert cmd.context == 8192 and cmd.max_num_seqs == 4 and cmd.pp == 2
    assert cmd.flags == {"ctx_size": 32768, "n_gpu_layers": 99, "flash_attn": "on",
                         "cache_type_k": "q8_0", "cache_type_v": "q8_0", "parallel": 4,
                         "ubatch_size": 1024, "swa_full": True, "n_cpu_moe": 4,
                         "tensor_split": "3,1"}
    assert cmd.ignored == ["--host", "0.0.0.0", "--jinja"]
    # the old boolean -fa, long spellings, -hf with a quant tag
    cmd = engine.parse_launch("--model=x.gguf --ctx-size 4096 -fa --cache-type-k f16".split())
    assert cmd.flags["flash_attn"] == "on" and cmd.context == 4096
    cmd = engine.parse_launch(["-hf", "unsloth/Qwen3-8B-GGUF:Q8_0"])
    assert cmd.model == "unsloth/Qwen3-8B-GGUF:Q8_0" and cmd.dtype == "q8_0"


@pytest.mark.parametrize("argv, field", [
    (["-m", "x.gguf", "-c"], "launch"),
    (["-m", "x.gguf", "-c", "lots"], "-c"),  # the flag as the command spells it
    (["-m", "x.gguf", "-ctv", "q3_k"], "-ctv"),
    (["-c", "4096"], "launch"),
    (["-m", "x.gguf", "-ts", "a,b"], "-ts"),
])
def test_a_malformed_command_line_is_refused(argv: list[str], field: str) -> None:
    with pytest.raises(InputError) as error:
        get("llamacpp").parse_launch(argv)
    assert error.value.field == field


def test_settings_refuse_what_llama_cpp_does_not_take() -> None:
    engine = get("llamacpp")
    with pytest.raises(InputError, match="gpu_memory_utilization"):
        engine.settings(H100, LaunchSettings(context=4096, kv_dtype="fp16",
                                             memory_fraction=0.9))
    with pytest.raises(InputError, match="engine_flags"):
        engine.settings(H100, LaunchSettings(context=4096, kv_dtype="fp16",
                                             flags={"max_total_tokens": 5}))


def test_eras_are_picked_by_build() -> None:
    """`llamacpp@BUILD` is that build: its era's rules, its own defaults and lines."""
    assert get("llamacpp").label == "llama.cpp b7880"
    assert get("llamacpp@b7000").label == "llama.cpp b7000"
    b6500 = get("llamacpp@6500")
    assert isinstance(b6500, LlamaCpp) and (b6500.label, b6500.build) == ("llama.cpp b6500", 6500)
    assert get("llamacpp@5400").label == "llama.cpp b5400"
    assert get("ik_llama@3760").label == "ik_llama.cpp b3760"
    with pytest.raises(InputError, match="predates"):
        get("llamacpp@2000")
    spec = _hf("engine-logs/configs/Qwen--Qwen3-1.7B.json")
    prefixes = {}
    for build in (5600, 6000, 6500):
        engine = get(f"llamacpp@{build}")
        assert isinstance(engine, LlamaCpp)
        settings = _settings(engine, {"ctx_size": 1024, "parallel": 1})
        line = kv_lines(engine, _pools(spec, engine, settings, ["CPU"]), settings)[-1]
        prefixes[build] = line.split(": size")[0], "1/1 seqs" in line
    assert prefixes == {5600: ("llama_kv_cache_unified", False),
                        6000: ("llama_kv_cache_unified", True),
                        6500: ("llama_kv_cache", True)}


def test_a_gguf_model_is_placed_by_its_own_tensors(tmp_path: Any) -> None:
    """Every byte of the file lands on a GPU or in host RAM: the embeddings on the host,
    the output with the offloaded layers when -ngl covers it, the rest by layer."""
    from llm_inventory.spec.loader import load_model
    from tests.checkpoint.gguf_files import llama_gguf

    tensors = llama_gguf(tmp_path / "tiny.gguf", layers=4)
    spec = load_model(str(tmp_path / "tiny.gguf"))
    assert spec.checkpoint is not None
    embedding = 128 * 64 * 2  # token_embd, f16
    assert tensors["token_embd.weight"][1] == [128, 64]
    for ngl, host_layers in ((-1, 0), (4, 0), (2, 2)):
        plan = plan_placement(spec, PlacementRequest(
            device=H100, count=1, tp=1, pp=1, engine="llamacpp", context=4096,
            engine_flags={"n_gpu_layers": ngl})).plans[0]
        assert plan.host is not None and plan.host.layers == host_layers
        assert plan.stages[0].weight_bytes + plan.host.weight_bytes == spec.checkpoint.total_bytes
        assert plan.host.weight_bytes >= embedding
    full = plan_placement(spec, PlacementRequest(
        device=H100, count=1, tp=1, pp=1, engine="llamacpp", context=4096)).plans[0]
    assert full.host is not None and full.host.weight_bytes == embedding


def test_launch_and_placement_agree(invoke: Any) -> None:
    run = invoke("launch", "--device", "rtx-4090", "--format", "json", "--", "llama-server",
                 "-m", "qwen3-8b", "-c", "32768", "-np", "1", "-ngl", "99", "-fa", "on",
                 "-ctk", "q8_0", "-ctv", "q8_0", "--port", "8080")
    assert run.code == 0, run.stderr
    launched = run.json()
    placed = invoke("placement", "qwen3-8b", "--device", "rtx-4090", "--count", "1",
                    "--context", "32768", "--engine", "llamacpp", "--format", "json",
                    "--engine-arg", "parallel=1", "--engine-arg", "n_gpu_layers=99",
                    "--engine-arg", "flash_attn=on", "--engine-arg", "cache_type_k=q8_0",
                    "--engine-arg", "cache_type_v=q8_0")
    assert placed.code == 0, placed.stderr
    plan = placed.json()["plans"][0]
    for key in ("kv_pool_bytes", "kv_capacity_tokens", "weight_bytes", "reserve_bytes"):
        assert launched["plan"]["per_device"][key] == plan["per_device"][key]
    assert launched["startup"] == plan["startup"]
    assert launched["plan"]["per_device"]["kv_pool_bytes"] == 36 * 32768 * 2 * (1024 // 32 * 34)
    assert "--port" in " ".join(launched.get("ignored", [])) or "--port" in run.stderr
