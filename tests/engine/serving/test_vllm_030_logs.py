"""vLLM 0.29-0.31 start-ups replayed from the device (engine-logs-2026/records.json N09-N15):
the paging of each printed pool, the budget identity vLLM prints, and the KV pool the tool
predicts from the launch alone against the one vLLM printed. None of these records chose a
rule or a constant; their errors measure the reserve of the eras that profile CUDA graphs
(`reserve_group` "vllm-graphs", `tests/reserve_records.py`)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.serving.bands import reserve_trust
from llm_inventory.spec.devices import Device, custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

GIB = 2**30
LOGS = DATA / "engine-logs-2026"
FROM_DEVICE = ("N09", "N10", "N11", "N12", "N13", "N14", "N15")

# The KV pool replayed from the launch, relative to the printed one (what the README
# table reports). A change of the reserve or of the weights moves these: update them and
# the README with the cause.
ERRORS = {"N09": -0.2665, "N10": +0.1162, "N11": +0.3709, "N12": +0.0043,
          "N13": +0.0892, "N14": -0.0900, "N15": +0.0781}

# What the device names are in the records (for the reserve bands' coverage).
DEVICE_NAMES = {"N09": "RTX 5060 Ti 16GB", "N10": "RTX 5060 Ti 16GB", "N11": "RTX 5060 Ti 16GB",
                "N12": "A100 80GB PCIe", "N13": "RTX 4070 Laptop", "N14": "RTX 4070 Laptop",
                "N15": "RTX 4070 Laptop"}


@cache
def records() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in json.loads((LOGS / "records.json").read_text())}


@cache
def _spec(config: str) -> ModelSpec:
    path = LOGS / config
    return from_hf_config(json.loads(path.read_text()), path.name)


def device(key: str) -> Device:
    """The record's card: the runtime's total memory on the catalog device of its family."""
    found = records()[key]["replay"]
    return custom_device(int(found["memory_gib"] * GIB), resolve_device(found["device"]))


def replay(key: str, pool: int | None = None) -> Plan:
    """The record's launch planned on its era; with `pool`, that KV memory instead of the
    budget (`--kv-cache-memory`), to replay the paging alone."""
    record = records()[key]
    found = record["replay"]
    flags = dict(found["engine_flags"])
    if pool is not None:
        flags["kv_cache_memory"] = pool
    return plan_placement(_spec(record["model_config"]), PlacementRequest(
        device=device(key), count=1, tp=1, engine=record["era"], context=found["context"],
        gpu_memory_utilization=found.get("gpu_memory_utilization"),
        max_num_seqs=found.get("max_num_seqs"),
        max_num_batched_tokens=found.get("max_num_batched_tokens"),
        engine_flags=flags)).plans[0]


def predicted_pool(key: str) -> int:
    plan = replay(key)
    assert plan.per_device is not None
    return plan.per_device.kv_pool_bytes


def test_the_records_are_held_out_and_name_their_source() -> None:
    for key in FROM_DEVICE:
        record = records()[key]
        assert record["use"] == "held-out"
        source = record["source"]
        assert source["url"] is None or source["url"].startswith("https://github.com/")
        assert source["url"] or source["found_by"]  # N12: the copy names no repository
        assert serving.era_of(serving.get(record["era"])) in ("vllm_v29", "vllm_v30")


@pytest.mark.parametrize("key", FROM_DEVICE)
def test_the_printed_pool_pages_into_the_printed_tokens(key: str) -> None:
    """The era's paging of a pool anywhere inside the printed GiB's rounding takes in the
    printed token count (an engine rule, exact)."""
    f = records()[key]["figures"]
    tokens = set()
    for hundredths in (-0.005, 0.0, 0.00499):
        plan = replay(key, int((f["kv_pool_gib"] + hundredths) * GIB))
        assert plan.per_device is not None and plan.max_concurrency is not None
        tokens.add(plan.per_device.kv_capacity_tokens)
    assert min(tokens) <= f["kv_tokens"] <= max(tokens)


@pytest.mark.parametrize("key", ["N09", "N10", "N11", "N12"])
def test_vllm_s_budget_balances_with_the_graph_estimate_inside_the_peak(key: str) -> None:
    """requested − consumed (weights + non-torch) − peak activation = the KV memory, to the
    printed rounding: from 0.29 the printed peak activation holds the CUDA-graph estimate,
    which the budget subtracts (`Worker.determine_available_memory`)."""
    f = records()[key]["figures"]
    left = f["requested_gib"] - f["consumed_gib"] - f["peak_activation_gib"]
    assert left == pytest.approx(f["kv_pool_gib"], abs=0.016)
    if "utilization_equivalent" in f:  # the graph estimate, from the equivalence line
        util = records()[key]["flags"]["gpu_memory_utilization"]
        estimate = (util - f["utilization_equivalent"]) * f["total_gib"]
        assert estimate == pytest.approx(f["cuda_graph_estimate_gib"], abs=0.005)
        assert estimate < f["peak_activation_gib"]


@pytest.mark.parametrize("key", FROM_DEVICE)
def test_the_pool_replayed_from_the_launch(key: str) -> None:
    """The pool the tool predicts from the launch alone, against the printed one; the error
    lies within the band the tool now quotes for that engine and card (`reserve_trust`)."""
    printed = records()[key]["figures"]["kv_pool_gib"] * GIB
    error = predicted_pool(key) / printed - 1
    assert error == pytest.approx(ERRORS[key], abs=5e-4)
    trust = reserve_trust(serving.get(records()[key]["era"]), device(key))
    assert trust.band is not None and abs(error) <= trust.band + 1e-4


def test_a_cold_compile_costs_the_pool_what_the_release_is_blamed_for() -> None:
    """N09 (0.30.0, compiled artifacts loaded), N10 (0.30.0, compiled at start-up) and N11
    (0.29.0, compiled at start-up): the cold start-ups of both releases print the same
    consumed and peak figures, 1.26 GiB above the warm one's; the graph estimate is the
    same 0.38 GiB in all three. The tool sees none of this: one reserve for all three."""
    warm, cold_030, cold_029 = (records()[k]["figures"] for k in ("N09", "N10", "N11"))
    for cold in (cold_030, cold_029):
        assert (cold["consumed_gib"], cold["peak_activation_gib"]) == (8.59, 1.09)
        extra = (cold["consumed_gib"] + cold["peak_activation_gib"]
                 - warm["consumed_gib"] - warm["peak_activation_gib"])
        assert extra == pytest.approx(1.26, abs=0.005)
        assert cold["cuda_graph_estimate_gib"] == warm["cuda_graph_estimate_gib"] == 0.38
    reserves = set()
    for key in ("N09", "N10", "N11"):
        plan = replay(key)
        assert plan.per_device is not None and plan.per_device.reserve is not None
        reserves.add(plan.per_device.reserve.reserve_bytes)
    assert len(reserves) == 1


def test_the_graph_estimate_is_twice_vllm_s_on_model_runner_v2() -> None:
    """On N09 and N11 (Qwen3-4B, 51 PIECEWISE and 35 FULL graphs, Model Runner V2) vLLM
    estimates 0.38 GiB of graphs; the tool, whose per-graph memory was fitted on 0.19's
    V1 runner, 0.80 GiB. Not refitted here: these records stay held out."""
    for key in ("N09", "N11"):
        plan = replay(key)
        assert plan.per_device is not None and plan.per_device.reserve is not None
        ours = plan.per_device.reserve.cuda_graph_bytes / GIB
        theirs = records()[key]["figures"]["cuda_graph_estimate_gib"]
        assert ours / theirs == pytest.approx(2.1, abs=0.05)


def test_enforce_eager_drops_the_graph_estimate_but_not_what_compiling_holds() -> None:
    """N13 and N14: the same launch with and without --enforce-eager. vLLM keeps 1.08 GiB
    more KV without graphs (no estimate, no torch.compile); the tool 0.64 GiB (its estimate)."""
    theirs = (records()["N14"]["figures"]["kv_pool_gib"]
              - records()["N13"]["figures"]["kv_pool_gib"])
    ours = (predicted_pool("N14") - predicted_pool("N13")) / GIB
    assert theirs == pytest.approx(1.08)
    assert ours == pytest.approx(0.637, abs=0.005)
