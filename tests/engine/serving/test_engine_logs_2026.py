"""Replays of the 2026 start-up records (engine-logs-2026/records.json; its README lists
each source): every record is replayed as far as what it quotes allows, or listed in
NOT_REPLAYED with the reason, and each says whether it was used to choose a rule."""

from __future__ import annotations

import json
from typing import Any

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.base import LaunchSettings
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

LOGS = DATA / "engine-logs-2026"
# N06-N08: test_hybrid_logs.py; N09-N15: test_vllm_030_logs.py
REPLAYED = {"N01", "N02", "N04", "N05", "N06", "N07", "N08", "N09", "N10", "N11", "N12", "N13",
            "N14", "N15"}
NOT_REPLAYED = {
    "N03": "no 0.26 era is modelled and the 122B config is not held; it documents what the "
           "0.21 era misses for hybrid GDN models from 0.26",
}


def _records() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in json.loads((LOGS / "records.json").read_text())}


def test_every_record_is_replayed_or_says_why_not_and_says_how_it_was_used() -> None:
    records = _records()
    assert set(records) == REPLAYED | set(NOT_REPLAYED)
    for record in records.values():
        assert record["use"] in ("in-sample", "held-out")
        url = record["source"]["url"]  # N12: the copy found names no repository
        assert url.startswith("https://github.com/") if url else record["source"]["found_by"]
        assert record["quote"] and record["use_note"]
        serving.get(record["era"])  # an era the registry holds


def test_n01_sparse_mla_pages_in_blocks_of_64_with_a_132_byte_indexer_key() -> None:
    """GLM-5-FP8 on vLLM 0.21: the indexer cache's shape is [blocks, 64, 132]."""
    figures = _records()["N01"]["figures"]
    path = DATA / "configs-2026/GLM-5.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    for kv in ("fp8", "bf16"):
        plan = plan_placement(spec, PlacementRequest(
            device=resolve_device("b200"), count=8, tp=8, pp=1, engine="vllm@0.21",
            dtype="fp8", kv_dtype=kv)).plans[0]  # the FP8 checkpoint's weights
        fit = plan.per_device
        assert fit is not None and fit.kv_blocks
        assert fit.kv_capacity_tokens // fit.kv_blocks == figures["block_size"]
        latent = {"fp8": 656, "bf16": 1152}[kv]  # the fp8_ds_mla record, or bf16 latent
        assert fit.kv_bytes_per_token == 78 * (latent + figures["indexer_bytes_per_token"])


def test_n02_the_160_gib_tier_takes_amd_too() -> None:
    figures = _records()["N02"]["figures"]
    for device in ("mi300x", "b200"):
        for era, tokens in (("vllm@0.27", figures["max_num_batched_tokens_before"]),
                            ("vllm@0.28", figures["max_num_batched_tokens_after"])):
            settings = serving.get(era).settings(resolve_device(device), LaunchSettings(
                context=8192, kv_dtype="bf16"))
            assert settings.max_num_batched_tokens == tokens, (device, era)


def test_n04_dense_models_reserve_no_graph_memory_on_0_25() -> None:
    """Llama-3.1-70B FP8 at TP 8 on 8 × L40S: 0.23 subtracts a graph estimate, 0.25.1 none."""
    record = _records()["N04"]
    path = LOGS / record["model_config"]
    spec = from_hf_config(json.loads(path.read_text()), path.name)
    graphs = {}
    for era in ("vllm@0.23", "vllm@0.25.1", "vllm@0.26"):
        plan = plan_placement(spec, PlacementRequest(
            device=resolve_device("l40s"), count=8, tp=8, pp=1, engine=era,
            dtype="fp8")).plans[0]
        assert plan.per_device is not None and plan.per_device.reserve is not None
        graphs[era] = plan.per_device.reserve.cuda_graph_bytes
    assert graphs["vllm@0.25.1"] == record["figures"]["cuda_graph_reserve_gib_0_25_1"]
    assert graphs["vllm@0.23"] > 0 and graphs["vllm@0.26"] == graphs["vllm@0.23"]


def test_n05_a_0_29_fit_check_needs_what_it_printed_and_estimates_its_length() -> None:
    """MiniMax-M2.7 at TP 2 on two GB10s, vLLM 0.29: 126,976 B a token a rank, 23.25 GiB for
    196,608 tokens; the estimated maximum length 190,272 is the 0.29 era's for a pool
    inside the printed 22.5 GiB's rounding (the pool itself is taken as printed: the GB10,
    the AWQ weights and the reserve are not replayed)."""
    import re

    from llm_inventory.spec.devices import custom_device

    record = _records()["N05"]
    f = record["figures"]
    path = LOGS / record["model_config"]
    spec = from_hf_config(json.loads(path.read_text()), path.name)
    gib = 2**30
    device = custom_device(400 * gib, resolve_device("h100"))  # room for any weights
    estimates = set()
    for hundredths in range(-5, 5):  # the printed 22.5 GiB: [22.495, 22.505) GiB
        pool = int((f["kv_pool_gib"] + hundredths / 1000) * gib)
        plan = plan_placement(spec, PlacementRequest(
            device=device, count=2, tp=2, pp=1, engine=record["era"],
            context=record["flags"]["max_model_len"],
            engine_flags={"kv_cache_memory": pool})).plans[0]
        assert plan.per_device is not None and plan.per_device.kv_bytes_per_token == 126_976
        error = plan.startup_error
        assert error is not None
        assert f"({f['kv_needed_gib']:.2f} GiB KV cache is needed" in error
        found = re.search(r"estimated maximum model length is (\d+)", error)
        assert found is not None
        estimates.add(int(found.group(1)))
    assert f["estimated_max_model_len"] in estimates
