"""Replays of start-ups that ran with a serving feature on — speculative decoding, LoRA, the
vision encoder's budget — (engine-logs-features/records.json; its README lists each source and
what each replay checks). Every record is replayed as far as what it quotes allows, or listed
in NOT_REPLAYED with the reason; each says whether it chose or tuned a rule (`in-sample`) or
was only checked against one (`held-out`).

The pool replays cut the printed KV memory into blocks by the era's rules; the figures they
check are the engine's own rules (labelled `exact` and `engine rule`), so the band they are
held to is the printed figures' rounding: the KV memory's two decimals, the concurrency's two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import ModelFacts, model_facts
from llm_inventory.engine.serving.paged import BlockPool
from llm_inventory.engine.speculative import Speculative, method_of
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.conftest import Invoke
from tests.reference import DATA

LOGS = DATA / "engine-logs-features"
GIB = 2**30
REPLAYED = {"F01", "F02", "F03"}
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
        assert record["feature"] in ("speculative", "lora", "multimodal")
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
