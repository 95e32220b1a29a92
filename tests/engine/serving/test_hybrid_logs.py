"""Hybrid Gated DeltaNet pools replayed from the printed pool (engine-logs-2026/records.json
N06-N08): Qwen3.6-35B-A3B's tokens and concurrency as vLLM 0.24 and 0.26 printed them, for
every pool inside the printed figure's rounding. N06 and N07 are held out; N08 (MTP) chose
the rule that state groups keep a block per drafted token."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.speculative import Speculative
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.presets import load_preset
from tests.reference import DATA

GIB = 2**30


def _record(key: str) -> dict[str, Any]:
    records = json.loads((DATA / "engine-logs-2026" / "records.json").read_text())
    return next(r for r in records if r["id"] == key)


def _replay(record: dict[str, Any], pool: int) -> tuple[int, float]:
    flags = record["flags"]
    spec_config = flags.get("speculative_config")
    asked = (Speculative(method=spec_config["method"],
                         num_speculative_tokens=spec_config["num_speculative_tokens"])
             if spec_config else None)
    plan = plan_placement(load_preset(record["preset"]), PlacementRequest(
        device=custom_device(400 * GIB, resolve_device("h100")), count=1, tp=1,
        engine=record["era"], context=flags["max_model_len"], kv_dtype=flags["kv_cache_dtype"],
        max_num_seqs=flags["max_num_seqs"],
        max_num_batched_tokens=flags["max_num_batched_tokens"], speculative=asked,
        engine_flags={"kv_cache_memory": pool, "enable_prefix_caching": True})).plans[0]
    assert plan.per_device is not None and plan.max_concurrency is not None
    return plan.per_device.kv_capacity_tokens, plan.max_concurrency


@pytest.mark.parametrize(("key", "decimals"), [("N06", 2), ("N07", 2), ("N08", 1)])
def test_the_printed_tokens_lie_within_the_printed_pool_s_rounding(key: str,
                                                                   decimals: int) -> None:
    record = _record(key)
    f = record["figures"]
    half = 0.5 * 10 ** -decimals
    low = _replay(record, int((f["kv_pool_gib"] - half) * GIB))
    high = _replay(record, int((f["kv_pool_gib"] + half) * GIB) - 1)
    assert low[0] <= f["kv_tokens"] <= high[0]
    assert round(low[1], 2) <= f["max_concurrency"] <= round(high[1], 2)
    if record["use"] == "held-out":  # the held-out pools land within 0.1 % of what printed
        middle = _replay(record, int(f["kv_pool_gib"] * GIB))
        assert abs(middle[0] / f["kv_tokens"] - 1) < 1e-3


def test_without_the_drafted_state_blocks_the_mtp_launch_would_hold_more() -> None:
    """N08's concurrency needs the 3 extra state blocks per group and request: without
    speculative decoding the same pool holds 17.6 requests, not 15.49."""
    record = _record("N08")
    plain = dict(record, flags={k: v for k, v in record["flags"].items()
                                if k != "speculative_config"})
    _, concurrency = _replay(plain, int(record["figures"]["kv_pool_gib"] * GIB))
    assert concurrency > 17


def _concurrency(model: str, version: str, prefix_caching: bool, context: int = 32768) -> float:
    flags = {"enable_prefix_caching": prefix_caching}
    plan = plan_placement(load_preset(model), PlacementRequest(
        device=resolve_device("h100"), count=1, tp=1, engine=f"vllm@{version}",
        context=context, engine_flags=flags)).plans[0]
    assert plan.max_concurrency is not None
    return plan.max_concurrency


def test_classes_that_declare_mamba_prefix_caching_keep_a_state_at_every_block() -> None:
    """vLLM 0.21-0.27 cache a NemotronH model's state in mode "all" when prefix caching is
    on (a state page per attention block of the context, MambaSpec.max_memory_usage_bytes),
    a Qwen3.5 model's in mode "align" (two pages); 0.28 takes "align" for both."""
    nano = "nemotron-3-nano-30b-a3b"
    all_mode = _concurrency(nano, "0.24", True)
    assert all_mode < _concurrency(nano, "0.28", True) < _concurrency(nano, "0.24", False)
    # mode "all" keeps state pages in proportion to the context, as attention does: twice
    # the context halves the requests; in mode "align" the two state pages stay, so fewer
    # than half are lost
    assert _concurrency(nano, "0.24", True, 65536) == pytest.approx(all_mode / 2, rel=0.01)
    align = _concurrency(nano, "0.28", True)
    assert _concurrency(nano, "0.28", True, 65536) > align / 2 * 1.01
    qwen = "qwen3.5-27b"
    assert _concurrency(qwen, "0.24", True) == _concurrency(qwen, "0.28", True)
