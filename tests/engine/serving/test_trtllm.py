"""TensorRT-LLM's KV cache against what it printed (engine-logs/other-engines.json).

The one record whose model is known (Llama-3.1-8B FP8 on an RTX 5090, TensorRT-engine
path) is predicted from scratch, KV bytes and tokens within 3 %. Every record, known model
or not, replays the rule that turns the memory it reported free into blocks, tokens and the
GiB it printed. Then the PyTorch backend's caps, the max_seq_len shrink and the command line.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.engine.serving.base import EngineSettings, KvLayer, LaunchSettings
from llm_inventory.engine.serving.trtllm import (
    RUNTIME_BYTES,
    TensorRtLlm,
    TokenPool,
    extra_options,
    parse_trtllm_serve,
)
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

GIB = 2**30
MIB = 2**20
LOGS = DATA / "engine-logs"
ENGINE = get("trtllm")
assert isinstance(ENGINE, TensorRtLlm)


def _records() -> dict[str, dict[str, Any]]:
    rows = json.loads((LOGS / "other-engines.json").read_text())
    return {r["id"]: r for r in rows if r["engine"] == "tensorrt-llm"}


def _llama_8b() -> Any:
    path = LOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json"
    return from_hf_config(json.loads(path.read_text()), path.name)


def _settings(context: int, **flags: Any) -> EngineSettings:
    return ENGINE.settings(resolve_device("h100"), LaunchSettings(
        context=context, kv_dtype="fp16", flags=flags))


def test_the_known_model_is_predicted_within_three_percent() -> None:
    """T01: the engine built with fp8 weights and KV, max_batch_size 2048, max_num_tokens
    1024, max_seq_len 2048, 32 tokens per block; the GPU's total as the runtime reported
    it (31.84 GiB)."""
    record = _records()["T01"]
    figures = record["figures"]
    device = resolve_device("rtx-5090").model_copy(
        update={"memory_bytes": int(figures["total_gpu_memory_gib"] * GIB)})
    flags = record["flags"]
    result = plan_placement(_llama_8b(), PlacementRequest(
        device=device, count=1, tp=1, pp=1, engine="trtllm@0.19", context=flags["max_seq_len"],
        dtype="fp8", kv_dtype="fp8", max_num_seqs=flags["max_batch_size"],
        max_num_batched_tokens=flags["max_num_tokens"], block_size=flags["tokens_per_block"],
        gpu_memory_utilization=flags["kv_cache_free_gpu_mem_fraction"],
        engine_flags={"backend": "tensorrt"}))
    plan = result.plans[0]
    assert plan.per_device is not None
    kv_gib = plan.per_device.kv_pool_bytes / GIB
    assert abs(kv_gib / figures["kv_cache_gib"] - 1) < 0.03
    assert abs(plan.per_device.kv_capacity_tokens / figures["kv_tokens"] - 1) < 0.03
    assert plan.per_device.kv_bytes_per_token == 65536
    printed = [line.split("] ", 1)[1] for line in record["quote"].splitlines()]
    ours = [line.split("] ", 1)[1] for line in plan.startup]
    assert ours[2:] == [printed[3], printed[4] + "."]  # tokens per block, allocation
    assert ours[1].startswith("Number of blocks in KV cache primary pool: ")
    assert ours[0].startswith("Memory usage when calculating max tokens in paged kv cache: "
                              "total: 31.84 GiB, available: ")


@pytest.mark.parametrize("record_id, per_token", [
    ("T01", 65536),  # Llama-3.1-8B, fp8 KV
    ("T03", 262144),  # the documented start-up: a 32-layer MHA 7B with 8-bit KV (implied)
])
def test_the_free_memory_rule_gives_the_printed_blocks(record_id: str, per_token: int) -> None:
    """0.9 × "available" ÷ bytes per token → ⌈tokens ÷ tokens per block⌉ blocks; tokens and
    GiB from the blocks. "available" is printed to 0.01 GiB: the printed blocks lie between
    those of the lowest and the highest value it rounds from."""
    figures = _records()[record_id]["figures"]
    block = figures["tokens_per_block"]
    pool = TokenPool(page=per_token * block, fixed=0, per_token=per_token,
                     tokens_per_block=block, max_seq_len=block, beam=1, ceil_blocks=True,
                     max_tokens=None)
    low = pool.blocks(int(0.9 * (figures["available_gib"] - 0.005) * GIB))
    high = pool.blocks(int(0.9 * (figures["available_gib"] + 0.005) * GIB))
    assert low <= figures["primary_blocks"] <= high
    assert high - low <= 0.9 * 0.01 * GIB / pool.page + 1
    capacity = pool.capacity(figures["primary_blocks"] * block * per_token)
    assert capacity.tokens == figures["kv_tokens"]
    assert round(pool.allocated(capacity.blocks * pool.page) / GIB, 2) == figures["kv_cache_gib"]


def test_the_runtime_share_comes_from_the_documented_start_up() -> None:
    """T03 prints every allocation: what total − available leaves beyond the engine, the
    execution context, the runtime buffers and the decoder is the runtime's own share."""
    f = _records()["T03"]["figures"]
    printed = (f["engine_size_mib"] + f["execution_context_mib"] + f["runtime_buffers_mb"]
               + f["decoder_mb"]) * MIB
    share = (f["total_gpu_memory_gib"] - f["available_gib"]) * GIB - printed
    assert abs(share / RUNTIME_BYTES - 1) < 0.01


def test_older_and_pytorch_records_keep_blocks_times_tokens() -> None:
    """T06 (0.8: "Allocate N bytes", "Using N tokens") and T08 (PyTorch backend): tokens are
    whole blocks, bytes are tokens × the implied bytes per token of their model class."""
    t06, t08 = _records()["T06"]["figures"], _records()["T08"]["figures"]
    assert t06["kv_cache_bytes"] == t06["kv_tokens"] * 524288  # Llama-2-7B shape, fp16
    assert t06["kv_tokens"] % 64 == 0
    assert t08["kv_tokens"] % t08["tokens_per_block"] == 0
    blocks = t08["kv_tokens"] // t08["tokens_per_block"]
    per_token = 131072  # a Llama-3-8B-class model, bf16 KV
    pool = TokenPool(page=per_token * 64, fixed=0, per_token=per_token, tokens_per_block=64,
                     max_seq_len=131072, beam=1, ceil_blocks=False, max_tokens=None)
    assert round(pool.allocated(blocks * pool.page) / GIB, 2) == t08["kv_cache_gib"]


def test_the_pytorch_pool_is_capped_by_max_tokens_and_max_gpu_total_bytes() -> None:
    layers = [KvLayer(kind="full", bytes_per_token=4096)] * 32
    h100 = resolve_device("h100")
    shape = _shape()
    free = _settings(8192)
    reserve = ENGINE.reserve(shape, free)
    pool = ENGINE.pool_bytes(h100, free, shape, 16 * GIB, reserve)
    assert pool == int((h100.memory_bytes - 16 * GIB - reserve.reserve_bytes) * 0.9)
    capped = _settings(8192, max_gpu_total_bytes=10 * GIB)
    assert ENGINE.pool_bytes(h100, capped, shape, 16 * GIB, reserve) == 10 * GIB
    layout = ENGINE.pool_layout(layers, _settings(8192, max_tokens=50_000))
    assert isinstance(layout, TokenPool)
    assert layout.capacity(pool).tokens == -(-50_000 // 32) * 32  # ⌈tokens ÷ 32⌉ blocks (1.1+)
    engine_path = ENGINE.pool_layout(layers, _settings(8192, backend="tensorrt",
                                                       max_tokens=50_000))
    assert engine_path.capacity(pool).tokens == -(-50_000 // 32) * 32  # ⌈ ⌉ on the engine path


def _shape() -> Any:
    from llm_inventory.engine.serving.base import StageShape

    return StageShape(tp=1, pp=1, ep=1, stage=0, first_stage=True, last_stage=True,
                      has_layers=True, vocab=128256, hidden=4096, widest_per_token=51200,
                      moe_workspace_per_token=0, activation_bits=16, heads=32, head_dim=128,
                      layers=32)


def test_one_sequence_too_long_shrinks_max_seq_len() -> None:
    """It starts anyway: the window and max_seq_len shrink to what the blocks hold; with
    --fail_fast_on_attention_window_too_large it stops instead."""
    spec = _llama_8b()
    device = resolve_device("rtx-4090")
    request = PlacementRequest(device=device, count=1, tp=1, pp=1, engine="trtllm",
                               context=131072)
    plan = plan_placement(spec, request).plans[0]
    assert plan.fits_context is False and plan.per_device is not None
    held = plan.per_device.kv_capacity_tokens
    assert plan.longest_context == held
    assert f"[TRT-LLM] [W] Adjusted max_seq_len to {held}" in plan.startup
    assert f"TensorRT-LLM 1.2 starts anyway: max_seq_len shrinks to {held:,}" in " ".join(
        plan.warnings)
    assert plan.startup[-1].startswith(f"[TRT-LLM] [I] max_seq_len={held}, ")
    settings = _settings(131072)
    cap = ENGINE.pool_layout([KvLayer(kind="full", bytes_per_token=131072)], settings).capacity(
        held * 131072)
    assert ENGINE.startup_error(cap, held * 131072, settings) is None
    strict = _settings(131072, fail_fast_on_attention_window_too_large=True)
    error = ENGINE.startup_error(cap, held * 131072, strict)
    assert error is not None and error.startswith(
        "RuntimeError: Attention window too large to fit even a single sequence")
    # the engine path prints its own warning
    engine_path = plan_placement(spec, request.model_copy(
        update={"engine_flags": {"backend": "tensorrt"}})).plans[0]
    assert any("maxSequenceLen is reduced to maxAttentionWindow" in line
               for line in engine_path.startup)


def test_the_fraction_must_stay_below_one() -> None:
    with pytest.raises(InputError, match="free_gpu_memory_fraction") as error:
        ENGINE.settings(resolve_device("h100"), LaunchSettings(
            context=4096, kv_dtype="fp16", memory_fraction=1.0))
    assert error.value.field == "gpu_memory_utilization"
    with pytest.raises(InputError, match="engine_flags"):
        _settings(4096, page_size=16)
    with pytest.raises(InputError, match="backend"):
        _settings(4096, backend="onnx")


def test_the_command_line_is_read() -> None:
    assert ("trtllm-serve", "serve") in ENGINE.programs
    cmd = ENGINE.parse_launch(
        "meta-llama/Llama-3.1-8B-Instruct --backend pytorch --tp_size 2 --pp_size 1 "
        "--max_batch_size 64 --max_num_tokens 4096 --max_seq_len 32768 "
        "--kv_cache_free_gpu_memory_fraction 0.85 --host 0.0.0.0 --port 8000 "
        "--trust_remote_code".split())
    assert (cmd.model, cmd.tp, cmd.pp, cmd.context) == (
        "meta-llama/Llama-3.1-8B-Instruct", 2, 1, 32768)
    assert (cmd.max_num_seqs, cmd.max_num_batched_tokens, cmd.memory_fraction) == (64, 4096, 0.85)
    assert cmd.ignored == ["--host", "0.0.0.0", "--port", "8000", "--trust_remote_code"]
    # `trtllm-serve serve MODEL`, dashes and the short fraction option read the same
    again = parse_trtllm_serve("serve m --free-gpu-memory-fraction=0.5 --max-num-tokens 2048 "
                               "--backend trt --tokens-per-block 64".split())
    assert again.model == "m" and again.memory_fraction == 0.5
    assert again.flags == {"backend": "tensorrt", "tokens_per_block": 64}


@pytest.mark.parametrize("argv, field", [
    (["--tp_size", "2"], "launch"),
    (["m", "--max_batch_size"], "launch"),
    (["m", "--max_batch_size", "many"], "max_batch_size"),
    (["m", "--free_gpu_memory_fraction", "1.5"], "free_gpu_memory_fraction"),
    (["m", "--backend", "onnx"], "backend"),
])
def test_a_malformed_command_line_is_refused(argv: list[str], field: str) -> None:
    with pytest.raises(InputError) as error:
        ENGINE.parse_launch(argv)
    assert error.value.field == field


def test_extra_llm_api_options_override_the_command_line() -> None:
    cmd = ENGINE.parse_launch("m --extra_llm_api_options opts.yaml --max_batch_size 8".split())
    assert cmd.flags == {"extra_llm_api_options": "opts.yaml"}
    cmd = extra_options(cmd, {"kv_cache_config": {"free_gpu_memory_fraction": 0.7,
                                                  "tokens_per_block": 64, "dtype": "fp8",
                                                  "max_gpu_total_bytes": 2**34},
                              "max_batch_size": 32})
    assert (cmd.memory_fraction, cmd.kv_dtype, cmd.max_num_seqs) == (0.7, "fp8", 32)
    assert cmd.flags == {"tokens_per_block": 64, "max_gpu_total_bytes": 2**34}
    with pytest.raises(InputError):
        extra_options(cmd, {"kv_cache_config": [1]})
    assert extra_options(cmd, {"kv_cache_free_gpu_memory_fraction": 0.6}).memory_fraction == 0.6
    with pytest.raises(InputError, match="free_gpu_memory_fraction"):
        extra_options(cmd, {"kv_cache_config": {"free_gpu_memory_fraction": 1.2}})


def test_launch_and_placement_agree(invoke: Any) -> None:
    run = invoke("launch", "--device", "h100", "--format", "json", "--", "trtllm-serve",
                 "serve", "meta-llama/Llama-3.1-8B-Instruct", "--backend", "tensorrt",
                 "--max_seq_len", "32768", "--kv_cache_free_gpu_memory_fraction", "0.85",
                 "--max_batch_size", "256")
    assert run.code == 0, run.stderr
    launched = run.json()
    placed = invoke("placement", "llama-3.1-8b", "--device", "h100", "--count", "1",
                    "--context", "32768", "--gpu-memory-utilization", "0.85",
                    "--max-num-seqs", "256", "--engine", "trtllm", "--engine-arg",
                    "backend=tensorrt", "--format", "json")
    assert placed.code == 0, placed.stderr
    plan = placed.json()["plans"][0]
    for key in ("kv_pool_bytes", "kv_capacity_tokens", "weight_bytes", "reserve_bytes"):
        assert launched["plan"]["per_device"][key] == plan["per_device"][key]
    assert launched["startup"] == plan["startup"]
    assert launched["startup"][0].startswith("[TensorRT-LLM][INFO] Memory usage when "
                                             "calculating max tokens in paged kv cache: total: "
                                             "79.19 GiB")


@pytest.mark.parametrize(("version", "backend"), [
    ("0.12", "tensorrt"), ("0.19", "tensorrt"), ("0.21", "tensorrt"),  # --backend default None
    ("1.0", "pytorch"), ("1.2", "pytorch"), (None, "pytorch")])
def test_the_default_backend_by_release(version: str | None, backend: str) -> None:
    """Before 1.0 trtllm-serve ran the TensorRT engine unless --backend pytorch was given."""
    engine = get(f"trtllm@{version}" if version else "trtllm")
    settings = engine.settings(resolve_device("h100"), LaunchSettings(context=8192,
                                                                     kv_dtype="bf16"))
    assert settings.flags["backend"] == backend
    asked = engine.settings(resolve_device("h100"), LaunchSettings(
        context=8192, kv_dtype="bf16", flags={"backend": "pytorch"}))
    assert asked.flags["backend"] == "pytorch"
