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


def _llama_8b() -> ModelSpec:
    return _spec("models/Llama-3.1-8B.json")


def test_0_29_holds_the_null_block_back_from_the_fit_check_and_auto_fit() -> None:
    """`get_kv_cache_configs` (v0.29.0, vllm#47272): the admission check and `--max-model-len
    auto` see the pool less one block; the blocks and tokens printed do not change. An 8 GiB
    pool of Llama-3.1-8B (128 KiB a token, blocks of 16): 4,096 blocks, 65,536 tokens on
    0.28 and 0.29; auto-fit 65,536 on 0.28, 65,520 (4,095 blocks) on 0.29."""
    spec = _llama_8b()
    flags: dict[str, object] = {"kv_cache_memory": 8 * 2**30}
    longest, pools = {}, {}
    for era in ("vllm@0.28", "vllm@0.29", "vllm@0.33"):
        request = PlacementRequest(device=resolve_device("h100"), count=1, tp=1,
                                   context=131072, engine=era, engine_flags=flags)
        plan = plan_placement(spec, request).plans[0]
        assert plan.startup_error is not None and plan.per_device is not None
        longest[era] = plan.longest_context
        pools[era] = (plan.per_device.kv_blocks, plan.per_device.kv_capacity_tokens)
        auto = plan_placement(spec, request.model_copy(update={
            "engine_flags": {**flags, "max_model_len_auto": True}})).plans[0]
        assert auto.startup_error is None
        assert any(f"max_model_len becomes {longest[era]:,}" in w for w in auto.warnings)
    assert longest == {"vllm@0.28": 65536, "vllm@0.29": 65520, "vllm@0.33": 65520}
    assert pools["vllm@0.28"] == pools["vllm@0.29"] == (4096, 65536)
    # a pool of exactly one request's blocks at 65,536: 0.28 starts, 0.29 stops and quotes
    # one block (2 MiB) less than the pool
    exact = {"kv_cache_memory": 8 * 2**30}
    for era, starts in (("vllm@0.28", True), ("vllm@0.29", False)):
        plan = plan_placement(spec, PlacementRequest(
            device=resolve_device("h100"), count=1, tp=1, context=65536, engine=era,
            engine_flags=exact)).plans[0]
        assert (plan.startup_error is None) is starts, era
        if not starts:
            assert plan.startup_error is not None
            assert "larger than the available KV cache memory (8.00 GiB)" in \
                plan.startup_error  # 8 GiB − 2 MiB, printed to two places
            assert "estimated maximum model length is 65520" in plan.startup_error


def test_0_29_keeps_0_28s_pool_for_a_model_that_fits() -> None:
    spec = _llama_8b()
    old = _plan(spec, "h100", "vllm@0.28", context=8192).per_device
    new = _plan(spec, "h100", "vllm@0.29", context=8192).per_device
    assert old is not None and new is not None
    assert (old.kv_pool_bytes, old.kv_blocks, old.kv_capacity_tokens) == \
        (new.kv_pool_bytes, new.kv_blocks, new.kv_capacity_tokens)


def test_0_30_keeps_sparse_mla_in_nvfp4_ds_mla_on_blackwell() -> None:
    """352 B of record (256 e2m1 + 64 fp8 rope + 32 e4m3 scales) + 132 B indexer key, 61
    layers, blocks of 64; compute capability 10.x only; other MLA models still refuse
    nvfp4; before 0.30 no MLA model keeps one."""
    from llm_inventory.errors import InputError

    v32 = _spec("configs-2026/DeepSeek-V3.2.json")
    for era in ("vllm@0.30", "vllm@0.32", "vllm"):
        plan = plan_placement(v32, PlacementRequest(
            device=resolve_device("b200"), count=8, tp=8, engine=era,
            kv_dtype="nvfp4")).plans[0]
        fit = plan.per_device
        assert fit is not None and fit.kv_bytes_per_token == 61 * (352 + 132)
        assert fit.kv_capacity_tokens // fit.kv_blocks == 64
    refused = ((v32, "h200", "vllm@0.30", "nvfp4_ds_mla) only on compute capability 10.x"),
               (v32, "b200", "vllm@0.29", "no MLA cache in nvfp4"),
               (_spec("models/DeepSeek-V3.json"), "b200", "vllm@0.30",
                "no MLA cache in nvfp4"))
    for model, device, era, words in refused:
        try:
            plan_placement(model, PlacementRequest(device=resolve_device(device), count=8,
                                                   tp=8, engine=era, kv_dtype="nvfp4"))
        except InputError as exc:
            assert words in exc.message, exc.message
        else:
            raise AssertionError((device, era))


def _gb10(memory_gib: float = 119.7) -> object:
    return resolve_device("h100").model_copy(update={
        "id": "gb10-test", "compute_capability": "12.1",
        "memory_bytes": int(memory_gib * 2**30)})


def test_0_33_keeps_gb10_on_the_small_batch_defaults() -> None:
    """`get_batch_defaults` (v0.33.0): compute capability 12.1 below 160 GiB takes 2048
    tokens and 256 sequences; 0.28–0.32 gave it 8192 and 1024; an asked value stays."""
    from llm_inventory.spec.devices import Device

    device = _gb10()
    assert isinstance(device, Device)
    asked = LaunchSettings(context=8192, kv_dtype="bf16")
    for era, tokens, seqs in (("vllm@0.32", 8192, 1024), ("vllm@0.33", 2048, 256),
                              ("vllm", 2048, 256)):
        found = serving.get(era).settings(device, asked)
        assert (found.max_num_batched_tokens, found.max_num_seqs) == (tokens, seqs), era
    pinned = serving.get("vllm@0.33").settings(device, asked.model_copy(update={
        "max_num_batched_tokens": 4096}))
    assert pinned.max_num_batched_tokens == 4096 and pinned.max_num_seqs == 256
    h100 = serving.get("vllm@0.33").settings(resolve_device("h100"), asked)
    assert h100.max_num_batched_tokens == 8192
    spec = _llama_8b()
    pools = {}
    for era in ("vllm@0.32", "vllm@0.33"):
        plan = plan_placement(spec, PlacementRequest(device=device, count=1, tp=1,
                                                     engine=era)).plans[0]
        assert plan.per_device is not None
        pools[era] = plan.per_device.kv_pool_bytes
    assert pools["vllm@0.33"] > pools["vllm@0.32"]  # a smaller profiling forward


def test_the_new_eras_are_listed_and_answer_their_releases() -> None:
    from llm_inventory.engine.serving.vllm_v29 import VllmV29
    from llm_inventory.engine.serving.vllm_v30 import VllmV30
    from llm_inventory.engine.serving.vllm_v33 import VllmV33

    v029 = serving.get("vllm@0.29.0")
    assert isinstance(v029, VllmV29) and not isinstance(v029, VllmV30)
    v031 = serving.get("vllm@0.31.0")
    assert isinstance(v031, VllmV30) and not isinstance(v031, VllmV33)
    assert v031.version == "0.31.0"
    assert isinstance(serving.get("vllm"), VllmV33)
    for era in ("vllm@0.29", "vllm@0.31", "vllm@0.33"):
        engine = serving.get(era)
        assert engine.release_warning is None
        assert all(source for _, source in engine.rules)
        assert any("v0.29.0" in source for _, source in engine.rules)
    assert serving.get("vllm@0.34").release_warning is not None


def test_the_160_gib_tier_still_takes_amd_through_0_33() -> None:
    """`get_batch_defaults` gates the top tier on raw capacity in every release read
    (v0.28.0 to v0.33.0): the MI300X and MI325X keep 16,384 batched tokens."""
    asked = LaunchSettings(context=8192, kv_dtype="bf16")
    for era in ("vllm@0.29", "vllm@0.31", "vllm@0.33"):
        for device in ("mi300x", "mi325x", "b200"):
            found = serving.get(era).settings(resolve_device(device), asked)
            assert found.max_num_batched_tokens == 16384, (era, device)
