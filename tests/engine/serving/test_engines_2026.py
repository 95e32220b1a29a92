"""The 2026 eras: vLLM 0.28's batch tier and Blackwell graphs, the packed sparse-MLA record
vLLM keeps for DeepSeek-V3.2 with an fp8 cache, TensorRT-LLM 1.1's whole blocks, and a
release newer than the newest modelled answered with a warning."""

from __future__ import annotations

import json

from llm_inventory.engine import serving
from llm_inventory.engine.engines import engine_detail
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.base import LaunchSettings, StageShape
from llm_inventory.engine.serving.trtllm import TokenPool
from llm_inventory.engine.serving.vllm_graphs import capture_sizes
from llm_inventory.engine.serving.vllm_v21 import VllmV21
from llm_inventory.engine.serving.vllm_v28 import VllmV28
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.conftest import Invoke
from tests.reference import DATA


def _settings(engine: str, device: str):  # type: ignore[no-untyped-def]
    return serving.get(engine).settings(resolve_device(device),
                                        LaunchSettings(context=8192, kv_dtype="bf16"))


def test_the_160_gib_tier_doubles_the_batched_tokens_from_0_28() -> None:
    """`get_batch_defaults` (v0.28.0): ≥ 160 GiB takes 16384; 0.27 and smaller GPUs keep
    8192 (≥ 70 GiB) or 2048."""
    assert isinstance(serving.get("vllm@0.28.1"), VllmV28)
    assert not isinstance(serving.get("vllm@0.27.1"), VllmV28)
    assert _settings("vllm@0.28", "b200").max_num_batched_tokens == 16384
    assert _settings("vllm@0.28", "mi300x").max_num_batched_tokens == 16384  # raw capacity
    assert _settings("vllm@0.27", "b200").max_num_batched_tokens == 8192
    assert _settings("vllm@0.28", "h100").max_num_batched_tokens == 8192
    assert _settings("vllm@0.28", "l4").max_num_batched_tokens == 2048
    asked = serving.get("vllm@0.28").settings(resolve_device("b200"), LaunchSettings(
        context=8192, kv_dtype="bf16", max_num_batched_tokens=4096))
    assert asked.max_num_batched_tokens == 4096


def test_blackwell_captures_graphs_up_to_1024_from_0_28() -> None:
    assert capture_sizes(1024, 16384, 1024)[-1] == 1024
    assert capture_sizes(1024, 16384)[-1] == 512
    shape = StageShape(tp=1, pp=1, ep=1, stage=0, first_stage=True, last_stage=True,
                       has_layers=True, layers=32, vocab=128256, hidden=4096,
                       widest_per_token=14336, activation_bits=16, moe_workspace_per_token=0)
    pinned = LaunchSettings(context=8192, kv_dtype="bf16", max_num_batched_tokens=8192)
    new, old = serving.get("vllm@0.28"), serving.get("vllm@0.27")
    b200 = resolve_device("b200")
    graphs_new = new.reserve(shape, new.settings(b200, pinned)).cuda_graph_bytes
    graphs_old = old.reserve(shape, old.settings(b200, pinned)).cuda_graph_bytes
    assert graphs_new > graphs_old  # 32 more piecewise and FULL graphs
    h100 = resolve_device("h100")
    assert new.reserve(shape, new.settings(h100, pinned)).cuda_graph_bytes == \
        old.reserve(shape, old.settings(h100, pinned)).cuda_graph_bytes


def test_a_newer_release_is_answered_by_the_newest_era_with_a_warning(
        invoke: Invoke) -> None:
    engine = serving.get("vllm@0.34")
    assert isinstance(engine, VllmV28) and engine.version == "0.34"
    assert engine.release_warning is not None and "newer than the newest release " \
        "modelled (0.33)" in engine.release_warning
    assert serving.get("vllm@0.28").release_warning is None
    assert serving.get("vllm@0.33").release_warning is None
    assert serving.get("vllm").release_warning is None
    assert serving.get("vllm@0.25").release_warning is None
    assert serving.get("trtllm@1.3").release_warning is not None
    assert engine_detail("vllm@0.40").warning is not None
    run = invoke("engines", "vllm@0.40")
    assert run.code == 0 and "newer than the newest release" in run.stderr
    assert "newer than the newest release" not in run.stdout
    data = invoke("engines", "vllm@0.40", "--format", "json").json()
    assert "0.33" in data["warning"]
    plan = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "-e", "vllm@0.34",
                  "--format", "json").json()
    assert any("newer than the newest release" in note for note in plan["notes"])
    # another release's rules only estimate its pool, and what is known to change is said
    assert plan["trust"]["kv_pool"]["kind"] == "estimate"
    assert "extensible KV cache" in plan["trust"]["kv_pool"]["basis"]
    assert "may have changed" in str(serving.get("vllm@0.35").release_warning)
    assert "extensible KV cache" in str(serving.get("vllm@0.34.2").release_warning)
    inside = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "-e", "vllm@0.33",
                    "--format", "json").json()
    assert inside["trust"]["kv_pool"]["kind"] == "engine rule"
    chosen = invoke("recommend", "llama-3.1-8b", "-d", "h100", "-n", "1", "-e", "vllm@0.34",
                    "--isl", "1000", "--osl", "100", "--format", "json").json()
    assert chosen["trust"]["batch_limit"]["kind"] == "estimate"


def test_deepseek_v32_with_an_fp8_cache_keeps_fp8_ds_mla_in_blocks_of_64() -> None:
    """61 layers × (656 B record + 132 B indexer key) = 48,068 B per token on every rank
    (the latent is not split by TP); blocks of 64 tokens."""
    path = DATA / "configs-2026/DeepSeek-V3.2.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    for era in ("vllm@0.19", "vllm@0.25", "vllm"):
        result = plan_placement(spec, PlacementRequest(
            device=resolve_device("h200"), count=8, tp=8, pp=1, engine=era, kv_dtype="fp8"))
        fit = result.plans[0].per_device
        assert fit is not None
        assert fit.kv_bytes_per_token == 61 * 788
        assert fit.kv_capacity_tokens % 64 == 0 and fit.kv_capacity_tokens // fit.kv_blocks \
            == 64
    bf16 = plan_placement(spec, PlacementRequest(
        device=resolve_device("h200"), count=8, tp=8, pp=1, kv_dtype="bf16")).plans[0]
    assert bf16.per_device is not None and bf16.per_device.kv_bytes_per_token == 61 * 1284


def test_trtllm_1_1_rounds_the_token_budget_up_to_whole_blocks() -> None:
    """`KVCacheManager.calculate_max_num_blocks`: ⌈86,711 ÷ 32⌉ = 2,710 blocks, 86,720
    tokens; the 1.0 era keeps its floor."""
    per_token = 131072
    pool = 86_711 * per_token + per_token // 2
    for engine, tokens in (("trtllm", 86_720), ("trtllm@1.2", 86_720),
                           ("trtllm@1.0", 86_688)):
        settings = serving.get(engine).settings(resolve_device("h100"), LaunchSettings(
            context=8192, kv_dtype="fp16"))
        layout = serving.get(engine).pool_layout(
            [serving.KvLayer(kind="full", bytes_per_token=per_token)], settings)
        assert isinstance(layout, TokenPool)
        assert layout.capacity(pool).tokens == tokens, engine
    assert isinstance(serving.get("vllm@0.21"), VllmV21)


def test_kv_cache_memory_is_the_pool_as_given() -> None:
    """`--kv-cache-memory-bytes` (argparse takes the prefix `--kv-cache-memory` too): the
    pool is that many bytes, the utilization not applied."""
    from llm_inventory.engine.serving.vllm_launch import parse_vllm
    from llm_inventory.errors import InputError

    command = parse_vllm(["meta-llama/Llama-3.1-8B", "--kv-cache-memory", "8GiB"])
    assert command.flags == {"kv_cache_memory": 8 * 2**30}
    assert parse_vllm(["m", "--kv-cache-memory-bytes=1000000"]).flags["kv_cache_memory"] \
        == 1_000_000
    for bad in ("0", "lots", "-5"):
        try:
            parse_vllm(["m", "--kv-cache-memory", bad])
        except InputError as exc:
            assert "kv_cache_memory" in str(exc.field) or "kv" in str(exc)
        else:
            raise AssertionError(bad)
    path = DATA / "models/Llama-3.1-8B.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    for era in ("vllm@0.19", "vllm"):
        for fraction in (0.5, 0.9):
            plan = plan_placement(spec, PlacementRequest(
                device=resolve_device("h100"), count=1, tp=1, engine=era,
                gpu_memory_utilization=fraction,
                engine_flags={"kv_cache_memory": 8 * 2**30})).plans[0]
            assert plan.per_device is not None
            assert plan.per_device.kv_pool_bytes == 8 * 2**30
            assert plan.per_device.kv_capacity_tokens == 8 * 2**30 // 131072 // 16 * 16


def test_max_model_len_auto_starts_at_the_longest_context_the_pool_holds() -> None:
    from llm_inventory.engine.serving.vllm_launch import parse_vllm

    assert parse_vllm(["m", "--max-model-len", "auto"]).flags == {"max_model_len_auto": True}
    assert parse_vllm(["m", "--max-model-len=-1"]).context is None
    path = DATA / "models/Llama-3.1-8B.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    flags = {"kv_cache_memory": 8 * 2**30}
    request = PlacementRequest(device=resolve_device("h100"), count=1, tp=1, context=131072,
                               engine="vllm@0.28", engine_flags=flags)
    fixed = plan_placement(spec, request).plans[0]
    assert fixed.startup_error is not None and fixed.longest_context == 65536
    auto = plan_placement(spec, request.model_copy(update={
        "engine_flags": {**flags, "max_model_len_auto": True}})).plans[0]
    assert auto.startup_error is None
    assert any("max_model_len becomes 65,536" in w for w in auto.warnings)


def test_ik_llama_command_lines_are_read_as_ik_llama() -> None:
    """Same program names as llama.cpp: a line with one of ik_llama.cpp's own flags, or run
    from an ik_llama folder, is its; a plain line stays upstream's."""
    from llm_inventory.engine.launch import match_program

    engine, rest = match_program(["llama-server", "-m", "x.gguf", "-c", "8192", "-fmoe"])
    assert engine.name == "ik_llama" and rest[0] == "-m"
    assert match_program(["./llama-server", "-m", "x.gguf", "-mla", "3"])[0].name == "ik_llama"
    assert match_program(["/opt/ik_llama.cpp/build/bin/llama-server", "-m", "x.gguf"])[0] \
        .name == "ik_llama"
    assert match_program(["llama-server", "-m", "x.gguf", "-c", "8192"])[0].name == "llamacpp"
    line = ["llama-server", "-m", "x.gguf", "--smart-expert-reduction=7,1"]
    assert match_program(line)[0].name == "ik_llama"
    assert match_program(["vllm", "serve", "m", "-fmoe"])[0].name == "vllm"


def test_0_25_drops_the_graph_reserve_for_dense_models_only() -> None:
    """Model Runner V2 (dense models, 0.25.1) subtracts no CUDA graphs; MoE and hybrid
    models stay on the V1 runner's estimate; 0.26 profiles graphs for all again."""
    from llm_inventory.engine.serving.vllm_v25 import VllmV25
    from llm_inventory.engine.serving.vllm_v26 import VllmV26

    assert isinstance(serving.get("vllm@0.25.1"), VllmV25)
    assert not isinstance(serving.get("vllm@0.25.0"), VllmV25)
    assert isinstance(serving.get("vllm@0.27.1"), VllmV26)
    assert isinstance(serving.get("vllm@0.28"), VllmV26)  # 0.28 builds on 0.26

    def graphs(model: str, era: str) -> int:
        path = DATA / model
        spec = from_hf_config(json.loads(path.read_text()), str(path))
        plan = plan_placement(spec, PlacementRequest(
            device=resolve_device("h100"), count=1, tp=1, pp=1, engine=era)).plans[0]
        assert plan.per_device is not None and plan.per_device.reserve is not None
        return plan.per_device.reserve.cuda_graph_bytes

    dense, moe, hybrid = ("models/Llama-3.1-8B.json", "models/Qwen3-30B-A3B.json",
                          "configs-2026/Qwen3.5-27B.json")
    assert graphs(dense, "vllm@0.25.1") == 0 < graphs(dense, "vllm@0.24")
    assert graphs(dense, "vllm@0.26") == graphs(dense, "vllm@0.24")
    for model in (moe, hybrid):
        assert graphs(model, "vllm@0.25.1") == graphs(model, "vllm@0.24") > 0


def test_llamacpp_fit_lowers_a_context_the_command_leaves_out() -> None:
    """`--fit` (b7880 era): with no -c, n_ctx drops to what leaves 1024 MiB free; -c N,
    -c 0 and --fit off keep the asked context and its out-of-memory stop."""
    from llm_inventory.engine.launch import match_program, predict_launch
    from llm_inventory.spec.presets import load_preset

    spec = load_preset("llama-3.1-8b")
    device = resolve_device("rtx-4090")

    def launch(*args: str):  # type: ignore[no-untyped-def]
        engine, rest = match_program(["llama-server", "-m", "llama-3.1-8b", *args])
        return predict_launch(spec, engine.parse_launch(rest), engine, device)

    fitted = launch()
    assert fitted.startup_error is None
    lowered = fitted.plan.longest_context
    assert lowered is not None and 4096 <= lowered < 131072
    assert any(f"--fit lowers n_ctx to {lowered:,}" in w for w in fitted.plan.warnings)
    wide = launch("-fitt", "4096")  # a wider margin leaves a shorter context
    assert wide.plan.longest_context is not None
    assert lowered - wide.plan.longest_context == 3 * 1024 * 2**20 // (32 * 8 * 128 * 2 * 2)
    for args in (("-c", "131072"), ("-c", "0"), ("--fit", "off")):
        kept = launch(*args)
        assert kept.startup_error is not None and "out of memory" in kept.startup_error
        assert not any("--fit" in w for w in kept.plan.warnings)
    older = serving.get("llamacpp@7000").settings(device, LaunchSettings(
        context=8192, kv_dtype="f16"))
    assert older.flags["fit"] is False
    from llm_inventory.errors import InputError
    for bad in (("--fit", "maybe"), ("-fitt", ""), ("-fitc", "x")):
        try:
            launch(*bad)
        except InputError:
            pass
        else:
            raise AssertionError(bad)


def test_nvfp4_kv_is_taken_from_the_0_21_era_on_blackwell_only() -> None:
    """vLLM's packed nvfp4 cache: head_size ÷ 2 + head_size ÷ 16 bytes a head (Llama-3.1-8B:
    32 layers × K and V × 8 heads × 72 = 36,864 B a token); compute capability 10.x only,
    no MLA, none before the 0.21 era."""
    from llm_inventory.engine.serving.vllm_launch import parse_vllm
    from llm_inventory.errors import InputError
    from llm_inventory.units import bytes_for

    assert bytes_for(128, "nvfp4") == 72 and bytes_for(1, "nvfp4") == 2
    path = DATA / "models/Llama-3.1-8B.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    plan = plan_placement(spec, PlacementRequest(
        device=resolve_device("b200"), count=1, tp=1, kv_dtype="nvfp4")).plans[0]
    assert plan.per_device is not None and plan.per_device.kv_bytes_per_token == 36_864
    v32 = DATA / "configs-2026/DeepSeek-V3.2.json"
    refused = ((spec, "h100", "vllm", "compute capability 10.x"),
               (spec, "b200", "vllm@0.19", "not a KV cache dtype"),
               (from_hf_config(json.loads(v32.read_text()), str(v32)), "b200", "vllm@0.28",
                "no MLA cache in nvfp4"))
    for model, device, era, words in refused:
        try:
            plan_placement(model, PlacementRequest(device=resolve_device(device), count=8,
                                                   engine=era, kv_dtype="nvfp4"))
        except InputError as exc:
            assert words in exc.message, exc.message
        else:
            raise AssertionError((device, era))
    assert parse_vllm(["m", "--kv-cache-dtype", "nvfp4"]).kv_dtype == "nvfp4"
    assert parse_vllm(["m", "--kv-cache-dtype", "fp8_ds_mla"]).kv_dtype == "fp8"
