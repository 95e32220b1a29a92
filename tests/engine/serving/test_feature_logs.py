"""Replays of start-ups that ran with a serving feature on — speculative decoding, LoRA, the
vision encoder's budget, KV kept off the GPU — (engine-logs-features/records.json; its README
lists each source and what each replay checks). Every record is replayed as far as what it
quotes allows, or listed in NOT_REPLAYED with the reason; each says whether it chose or tuned
a rule (`in-sample`) or was only checked against one (`held-out`).

The pool replays cut the printed KV memory into blocks by the era's rules; the figures they
check are the engine's own rules (labelled `exact` and `engine rule`), so the band they are
held to is the printed figures' rounding: the KV memory's two decimals, the concurrency's two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import ModelFacts, model_facts
from llm_inventory.engine.serving.base import LaunchSettings, device_layers_by_index
from llm_inventory.engine.serving.paged import BlockPool
from llm_inventory.engine.speculative import Speculative, method_of
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.presets import load_preset
from tests.conftest import Invoke
from tests.reference import DATA

LOGS = DATA / "engine-logs-features"
GIB = 2**30
MIB = 2**20
REPLAYED = {"F01", "F02", "F03", "F05", "F06", "F07"}
NOT_REPLAYED: dict[str, str] = {
    "F04": "the encoder line is missed: vLLM 0.11 profiles Qwen3-VL with a video (151,250 "
           "tokens), the tool models images only (16,384); its one memory figure, model "
           "loading, cannot separate the LoRA buffers from the weights",
}
# vLLM's KV cache dtypes as the replay passes them (one byte for either fp8 format)
KV_DTYPES = {"fp8_e5m2": "fp8", "fp8_e4m3": "fp8", "fp8": "fp8", "auto": None}


def _records() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in json.loads((LOGS / "records.json").read_text())}


def _config(record: dict[str, Any]) -> Path:
    """The config file a record names (its `model_config`, before any note)."""
    return (LOGS / record["model_config"].split(" ")[0]).resolve()


def _facts(record: dict[str, Any]) -> ModelFacts:
    """The placement facts of one record's launch: its era, model, split, KV dtype, flags and
    features, on a device large enough that the pool replay, not the device, decides."""
    path = _config(record)
    spec = from_hf_config(json.loads(path.read_text()), path.name)
    flags = record["flags"]
    speculative = None
    if "speculative" in record:
        asked = record["speculative"]
        speculative = Speculative(method=method_of(asked["method"]),
                                  num_speculative_tokens=asked["num_speculative_tokens"])
    engine_flags = {"enable_prefix_caching": True} if flags.get("enable_prefix_caching") else {}
    tp = record["tp"]
    request = PlacementRequest(
        device=custom_device(400 * GIB, resolve_device("h100")), count=tp, tp=tp, pp=1,
        engine=record["era"], context=flags["max_model_len"],
        kv_dtype=KV_DTYPES[record["kv_cache_dtype"]],
        max_num_batched_tokens=flags["max_num_batched_tokens"],
        max_num_seqs=flags["max_num_seqs"], speculative=speculative,
        engine_flags=engine_flags, limit=0)
    return model_facts(spec, request)


def _layout(record: dict[str, Any]) -> BlockPool:
    facts = _facts(record)
    layout = facts.pool_layout(record["tp"], 0, facts.layers)
    assert isinstance(layout, BlockPool) and layout.page > 0
    return layout


def test_every_record_is_replayed_or_says_why_not_and_says_how_it_was_used() -> None:
    records = _records()
    assert set(records) == REPLAYED | set(NOT_REPLAYED)
    for record in records.values():
        assert record["use"] in ("in-sample", "held-out")
        assert record["feature"] in ("speculative", "lora", "multimodal", "offload")
        assert record["source"]["url"].startswith("https://github.com/")
        assert record["quote"] and record["use_note"]
        serving.get(record["era"])  # an era the registry holds
    held = {r["id"] for r in records.values() if r["use"] == "held-out"}
    assert held & REPLAYED, "at least one held-out record is replayed"


# --- speculative decoding: MTP beside Gated DeltaNet state (vLLM V1) -------------------

def test_mtp_on_a_hybrid_model_prints_both_lines_from_one_block_count() -> None:
    """F01, F02 (in-sample; vLLM 0.22.0, Qwen3.6-27B at TP 2, MTP with 3 drafted tokens,
    prefix caching): some block count must print both quoted lines. The MTP layer's
    attention joins the 16 full-attention layers (groups of 17); each Gated DeltaNet group
    keeps 2 + 3 state pages a request; the conv window holds 3 + 3 positions, so the
    attention block is 1,600 tokens, not 1,568."""
    for rid in ("F01", "F02"):
        record = _records()[rid]
        figures = record["figures"]
        layout = _layout(record)
        assert layout.attention_block == 1600 and layout.need == 179, rid
        found = [blocks for blocks in range(1, 2000)
                 if (m := layout.measure(blocks * layout.page))[1] == figures["kv_tokens"]
                 and f"{m[2]:.2f}" == f"{figures['max_concurrency']:.2f}"]
        assert len(found) == 1, (rid, found)


def test_mtp_on_a_hybrid_model_replays_the_printed_pool() -> None:
    """F03 (held out; the same set-up, on a build whose engine line says 0.20.1 but which
    behaves as the 0.21 era: CUDA graphs profiled, the tokens printed as
    ⌊concurrency × max_model_len⌋): the printed 10.98 GiB, cut by the era's rules, gives the
    printed concurrency and tokens, and the padding vLLM warns of."""
    record = _records()["F03"]
    figures = record["figures"]
    layout = _layout(record)
    assert layout.tokens_from_concurrency  # the 0.21 era's print
    gib = figures["kv_cache_gib"]
    found = {layout.measure(int((gib + d) * GIB)) for d in (-0.005, 0.0, 0.00499)}
    assert {blocks for blocks, _, _ in found} == {423}
    assert {tokens for _, tokens, _ in found} == {figures["kv_tokens"]}
    assert {f"{c:.2f}" for _, _, c in found} == {f"{figures['max_concurrency']:.2f}"}
    # 48 Gated DeltaNet layers in groups of 17 (16 attention layers and the MTP layer)
    per_group = layout.page // layout.layer_page
    assert per_group == 17
    assert (layout.groups - 1) * per_group - 48 == figures["padding_layers"]


def test_mtp_start_up_through_launch_prints_the_logged_lines(invoke: Invoke) -> None:
    """F03 through `inventory launch -- <the logged command line>`: with the printed KV
    memory pinned (--kv-cache-memory-bytes), the tool's start-up prints the logged pool lines
    verbatim, and its CUDA graph estimate rounds to the logged 0.11 GiB. The graph estimate
    is part of the reserve; what it can be off by (under half of 0.01 GiB either way of the
    printed figure) is held to the reserve band the tool reports for this era and device."""
    record = _records()["F03"]
    figures = record["figures"]
    flags = record["flags"]
    run = invoke(
        "launch", "--engine-version", record["era"].split("@")[1], "-d", "rtx-3090",
        "--format", "json", "--",
        "vllm", "serve", str(_config(record)),
        "--tensor-parallel-size", str(record["tp"]),
        "--kv-cache-dtype", record["kv_cache_dtype"], "--enable-prefix-caching",
        "--max-num-batched-tokens", str(flags["max_num_batched_tokens"]),
        "--max-num-seqs", str(flags["max_num_seqs"]),
        "--max-model-len", str(flags["max_model_len"]),
        "--speculative-config", json.dumps(record["speculative"]),
        "--kv-cache-memory-bytes", str(int(figures["kv_cache_gib"] * GIB)))
    assert run.code == 0, run.stderr
    out = run.json()
    lines = out["startup"]
    for line in (f"Available KV cache memory: {figures['kv_cache_gib']:.2f} GiB",
                 f"GPU KV cache size: {figures['kv_tokens']:,} tokens",
                 f"Maximum concurrency for {flags['max_model_len']:,} tokens per request: "
                 f"{figures['max_concurrency']:.2f}x",
                 f"Estimated CUDA graph memory: {figures['cuda_graph_gib']:.2f} GiB total"):
        assert line in lines, (line, lines)
    per_device = out["plan"]["per_device"]
    assert per_device["kv_blocks"] == 423
    graph = per_device["reserve"]["cuda_graph_bytes"] / GIB
    assert abs(graph - figures["cuda_graph_gib"]) < 0.005
    reserve = out["trust"]["reserve"]
    assert reserve["kind"] == "calibrated" and reserve["extrapolated"]
    # the graph estimate's largest error the printed line allows, against the KV pool
    printed = figures["cuda_graph_gib"]
    worst = max(graph - (printed - 0.005), printed + 0.005 - graph)
    assert worst / figures["kv_cache_gib"] < reserve["band"]


def test_the_drafted_token_state_rule_is_vllm_v1s_and_touches_only_fixed_state() -> None:
    """The rule F01–F03 needed, on its own: any drafting method (n-gram too) gives each state
    group k more pages a request and widens the Gated DeltaNet conv window by k positions;
    attention-only models and vLLM V0 are unchanged."""
    base = dict(_records()["F03"], speculative={"method": "ngram", "num_speculative_tokens": 3})
    plain = {k: v for k, v in base.items() if k != "speculative"}
    with_ngram, without = _layout(base), _layout(plain)
    # ⌈262,144 ÷ 1,568⌉ + 3 × 2 pages without; ⌈262,144 ÷ 1,600⌉ + 3 × (2 + 3) with
    assert (without.attention_block, without.need) == (1568, 174)
    assert (with_ngram.attention_block, with_ngram.need) == (1600, 179)
    assert with_ngram.state_page - without.state_page == 3 * 2 * 5120  # fp16 conv channels
    assert with_ngram.groups == without.groups == 4  # n-gram adds no layer
    dense = dict(plain, model_config="../engine-logs/configs/Qwen--Qwen3-0.6B.json")
    drafted = dict(dense, speculative={"method": "ngram", "num_speculative_tokens": 3})
    assert _layout(dense) == _layout(drafted)
    v0 = serving.get("vllm@0.6")
    settings = _facts(dict(dense, era="vllm@0.6")).settings
    assert v0.speculative_settings(settings, Speculative(
        method="ngram", num_speculative_tokens=3)) == settings


# --- offload: llama.cpp -nkvo keeps the KV cache in host memory ---------------------------

def _nkvo_launch(invoke: Invoke, cells: int, *extra: str, memory: str = "6GiB") -> Any:
    run = invoke("launch", "--engine-version", "b5092", "--device-memory", memory,
                 "--format", "json", "--", "llama-server", "-m", "llama-4-scout", "-t", "11",
                 *extra, "--ctx-size", str(cells))
    assert run.code in (0, 1), run.stderr
    return run.json()


@pytest.mark.parametrize("index", [0, 1])
def test_nkvo_start_up_prints_the_logged_host_kv_buffer(invoke: Invoke, index: int) -> None:
    """F05 (held out; llama.cpp b5092, Llama-4-Scout, -ngl 11 -nkvo, 256,000 and 64,000
    cells) through `inventory launch`: the KV buffer the log printed, to the MiB, and all of
    it in host memory. The figures are the engine's own rule (exact): no band."""
    figures = _records()["F05"]["figures"]
    cells, mib = figures["kv_cells"][index], figures["host_kv_mib"][index]
    out = _nkvo_launch(invoke, cells, "-ngl", "11", "-nkvo")
    lines = out["startup"]
    assert any(line.endswith(f"CPU KV buffer size = {mib:.2f} MiB") for line in lines), lines
    kv = (f"KV self size  = {mib:.2f} MiB, K (f16): {figures['k_mib'][index]:.2f} MiB, "
          f"V (f16): {figures['v_mib'][index]:.2f} MiB")
    assert any(line.endswith(kv) for line in lines), lines
    assert out["plan"]["host"]["kv_bytes"] == int(mib * MIB)
    assert out["plan"]["per_device"]["kv_pool_bytes"] == 0
    assert out["plan"]["per_device"]["kv_capacity_tokens"] == cells
    assert "-nkvo" in out["command"]["understood"]


def test_without_nkvo_the_same_buffer_sits_on_the_device(invoke: Invoke) -> None:
    """F05 with the flag off (every layer offloaded, on a device large enough for the bf16
    stand-in): the same 48,000 MiB, on the GPU, and nothing in host memory."""
    figures = _records()["F05"]["figures"]
    cells, mib = figures["kv_cells"][0], figures["host_kv_mib"][0]
    out = _nkvo_launch(invoke, cells, "-ngl", "99", memory="400GiB")
    assert any(line.endswith(f"CUDA0 KV buffer size = {mib:.2f} MiB")
               for line in out["startup"]), out["startup"]
    assert out["plan"]["per_device"]["kv_pool_bytes"] == int(mib * MIB)
    assert out["plan"]["host"]["kv_bytes"] == 0


# --- LoRA: vLLM V0 leaves the adapter stacks out of its KV budget -------------------------

def _f06_launch(invoke: Invoke, *extra: str) -> Any:
    record = _records()["F06"]
    flags = record["flags"]
    run = invoke("launch", "--engine-version", record["era"].split("@")[1], "-d", "h100-nvl",
                 "--device-memory", f"{record['figures']['total_gib']}GiB", "--format", "json",
                 "--", "vllm", "serve", "llama-3.1-70b",
                 "--tensor-parallel-size", str(record["tp"]),
                 "--gpu-memory-utilization", str(flags["gpu_memory_utilization"]),
                 "--max-model-len", str(flags["max_model_len"]), *extra)
    assert run.code == 0, run.stderr
    return run.json()


def test_v0_lora_start_up_pool_from_the_printed_kv_memory() -> None:
    """F06 (held out; vLLM 0.8.0rc2 V0, Llama-3.3-70B at TP 4, LoRA on): the printed
    36.07 GiB, cut into V0 blocks of 16 tokens, gives the printed 29,547 blocks inside the
    two-decimal rounding, and 3.61x at 131,072 tokens. LoRA's slots do not enter the
    blocks: V0's stacks are outside the pool (and the budget)."""
    record = _records()["F06"]
    figures = record["figures"]
    engine = serving.get(record["era"])
    spec = load_preset("llama-3.1-70b")
    assert spec.decoder is not None
    settings = engine.settings(resolve_device("h100-nvl"), LaunchSettings(
        context=record["flags"]["max_model_len"], kv_dtype="bf16"))
    per = device_layers_by_index(state_layers(spec), record["tp"], "bf16", spec.decoder.layers)
    layout = engine.pool_layout([layer for group in per for layer in group], settings)
    gib = figures["kv_cache_gib"]
    low, high = (layout.capacity(int((gib + d) * GIB)) for d in (-0.005, 0.005))
    assert low.blocks <= figures["kv_blocks"] <= high.blocks
    assert f"{layout.capacity(int(gib * GIB)).max_concurrency:.2f}" \
        == f"{figures['max_concurrency']:.2f}"


def test_v0_lora_start_up_through_launch_holds_the_printed_lines(invoke: Invoke) -> None:
    """F06 through `inventory launch -- vllm serve … --enable-lora` on the printed 79.33 GiB:
    the weights line within the 1 % the held-out weights replays hold, the 3,276 CPU blocks
    of V0's 4 GiB swap, and the KV memory inside the reserve band the tool quotes for this
    era and device (V0's, doubled: no start-up of release 0.8 in its records)."""
    figures = _records()["F06"]["figures"]
    out = _f06_launch(invoke, "--enable-lora")
    per_device = out["plan"]["per_device"]
    weights = per_device["weight_bytes"] / GIB
    assert abs(weights - figures["weights_gib"]) / figures["weights_gib"] < 0.01
    assert any(line.endswith(f"# CPU blocks: {figures['cpu_blocks']}")
               for line in out["startup"]), out["startup"]
    reserve = out["trust"]["reserve"]
    assert reserve["kind"] == "calibrated" and reserve["extrapolated"]
    error = per_device["kv_pool_bytes"] / GIB / figures["kv_cache_gib"] - 1
    assert abs(error) < reserve["band"], (error, reserve["band"])
    lora = per_device["lora"]
    assert lora["max_loras"] == 1 and lora["max_lora_rank"] == 16 and not lora["in_budget"]
    assert lora["device_bytes"] > 0


def test_v0_lora_leaves_the_pool_as_without_it(invoke: Invoke) -> None:
    """F06's launch with LoRA off: V0's rule puts the stacks outside the budget, so every
    pool figure is as with it (the record cannot tell this from an in-budget rule: 0.2 GiB
    of rank-16 stacks is 0.5 % of the pool, inside the band)."""
    with_lora = _f06_launch(invoke, "--enable-lora")["plan"]["per_device"]
    without = _f06_launch(invoke)["plan"]["per_device"]
    assert without["lora"] is None
    for key in ("weight_bytes", "reserve_bytes", "kv_pool_bytes", "kv_blocks"):
        assert with_lora[key] == without[key], key


# --- the encoder budget: vLLM V1 profiles one image of Qwen3-VL ------------------------------

def test_qwen3_vl_encoder_budget_line_through_launch(invoke: Invoke) -> None:
    """F07 (held out; vLLM 0.14.0rc1, Qwen3-VL-2B, the comment's command line): the encoder
    line as logged, word for word. The line depends on the processor's largest image (the
    qwen3-vl-8b preset's, the family's), the batched tokens, the sequences and the limits,
    not on the device: the stand-in's weights are placed on an L40S, where they fit."""
    record = _records()["F07"]
    figures = record["figures"]
    flags = record["flags"]
    limits = record["multimodal"]["limit_mm_per_prompt"]
    run = invoke("launch", "--engine-version", record["era"].split("@")[1], "-d", "l40s",
                 "--format", "json", "--", "python3", "-m", "vllm.entrypoints.openai.api_server",
                 "--model", "qwen3-vl-8b",
                 *[a for m, n in limits.items() for a in (f"--limit-mm-per-prompt.{m}", str(n))],
                 "--gpu-memory-utilization", str(flags["gpu_memory_utilization"]),
                 "--max-model-len", "8K", "--max-num-seqs", str(flags["max_num_seqs"]),
                 "--max-num-batched-tokens", "8K", "--dtype", flags["dtype"],
                 "--trust-remote-code", "--disable-cascade-attn", "--disable_log_stats")
    assert run.code == 0, run.stderr
    out = run.json()
    line = record["quote"].splitlines()[-1].split("] ", 1)[1]
    assert line in out["startup"], out["startup"]
    mm = out["plan"]["per_device"]["multimodal"]
    assert (mm["encoder_budget_tokens"], mm["profiled_items"]) \
        == (figures["encoder_budget_tokens"], figures["profiled_items"])
    assert out["command"]["multimodal"]["limit_per_prompt"] == limits
    assert not [t for t in out["command"]["ignored"] if "limit-mm" in t]
