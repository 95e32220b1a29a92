"""The memory fit against what vLLM 0.19 really allocated at start-up (engine-logs/runs.json).

Every run whose model shapes can be obtained is replayed with its launch settings: predicted
weights per device within 1 %, KV pool within 3 %, KV capacity in tokens and maximum
concurrency within 3 % of what the engine printed. The reserve (activation peak, non-torch
memory) is an estimate; these bounds are what it is held to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec, Quantization
from tests.reference import DATA, engine_runs, model_config

GIB = 2**30
LOGS = DATA / "engine-logs"
FOUND = DATA / "engine-configs"  # configs found for runs whose log entry names none
# transformers' GemmaConfig() defaults are Gemma-7B's shapes (its docstring says so), as the
# shared reference set does for Jamba-v0.1; no copy of the gated hub file was found.
SUBSTITUTES = {"google/gemma-7b": DATA / "transformers-defaults" / "gemma.json"}

# Quantized builds whose config files were not found: the base model's shapes, and the scheme
# as the model names and cards state it (assumed, so kept apart): FP8-dynamic = FP8 weights
# with per-channel scales; w8a8 = INT8 weights with per-channel scales; w4a16 = GPTQ 4-bit,
# group 128 (vLLM converts it to gptq_marlin); lm_head left unquantized in all three.
ASSUMED: dict[str, tuple[str, Quantization]] = {
    "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": (
        "Llama-3.1-70B-Instruct",
        Quantization(method="fp8 (per-channel)", bits=8, per_channel=True, scale_bits=16,
                     ignore=["lm_head"])),
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8": (
        "Llama-3.1-8B",
        Quantization(method="int8 (per-channel)", bits=8, per_channel=True, scale_bits=16,
                     ignore=["lm_head"])),
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": (
        "Llama-3.1-8B",
        Quantization(method="gptq", bits=4, group_size=128, scale_bits=16, zero_point=True,
                     zero_point_bits=4, act_order_index=True, ignore=["lm_head"])),
}


def _config_path(run: dict[str, Any]) -> Path | None:
    name = run.get("config") or run.get("config_substitute")
    if name:
        return (LOGS / name).resolve()
    found = FOUND / (run["model"].replace("/", "--") + ".json")
    if found.is_file():
        return found
    return SUBSTITUTES.get(run["model"])


def _runs() -> list[Any]:
    """The runs replayed from a config file (the rest from ASSUMED, see below)."""
    return [pytest.param(run, path, id=run["id"]) for run in engine_runs()
            if (path := _config_path(run)) is not None]


def _dtype(name: str) -> str:
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[name]


def replay(run: dict[str, Any], spec: ModelSpec) -> Plan:
    """The plan our engine gives for a run's exact launch settings."""
    model_dtype = _dtype(run["dtype"])
    spec = spec.model_copy(update={"dtype": model_dtype})
    request = PlacementRequest(
        engine="vllm@0.19",  # the release these start-ups ran
        device=resolve_device(run["gpu"]),
        count=run["tp"] * run["pp"],
        tp=run["tp"], pp=run["pp"], ep=1,
        context=run["max_model_len"],
        gpu_memory_utilization=run["gpu_memory_utilization"],
        max_num_batched_tokens=run["max_num_batched_tokens"],
        block_size=run["block_size"],
        dtype="fp8" if run["quantization"] == "fp8" else None,
        kv_dtype=model_dtype if run["kv_cache_dtype"] == "auto" else run["kv_cache_dtype"],
        limit=0,
    )
    result = plan_placement(spec, request)
    return next(p for p in result.plans
                if p.disaggregation is None and (p.tp, p.pp, p.ep) == (run["tp"], run["pp"], 1))


def _close(ours: float, theirs: float, rel: float, printed: float = 0.005) -> bool:
    """Within `rel` of the engine's figure, allowing for its two-decimal rounding."""
    return abs(ours - theirs) <= rel * theirs + printed


def _check(run: dict[str, Any], plan: Plan) -> None:
    actual = run["actual"]
    stage0 = plan.stages[0]
    assert plan.legal, plan.reasons
    assert _close(stage0.weight_bytes / GIB, actual["weights_gib"], 0.01), (
        stage0.weight_bytes / GIB, actual["weights_gib"])
    assert _close(stage0.kv_pool_bytes / GIB, actual["kv_cache_gib"], 0.03), (
        stage0.kv_pool_bytes / GIB, actual["kv_cache_gib"])
    assert plan.per_device is not None
    assert _close(plan.per_device.kv_capacity_tokens, actual["kv_tokens"], 0.03, 16), (
        plan.per_device.kv_capacity_tokens, actual["kv_tokens"])
    assert plan.max_concurrency is not None
    assert _close(plan.max_concurrency, actual["max_concurrency"], 0.03), (
        plan.max_concurrency, actual["max_concurrency"])


@pytest.mark.parametrize(("run", "path"), _runs())
def test_engine_start_up(run: dict[str, Any], path: Path) -> None:
    # An importer that stops reading a model type fails here: no run is skipped.
    data = json.loads(path.read_text())
    _check(run, replay(run, from_hf_config(data, path.name)))


@pytest.mark.parametrize("run", [pytest.param(r, id=r["id"]) for r in engine_runs()
                                 if r["model"] in ASSUMED])
def test_engine_start_up_with_assumed_quantization(run: dict[str, Any]) -> None:
    base, scheme = ASSUMED[run["model"]]
    spec = from_hf_config(model_config(base), base).model_copy(update={"quantization": scheme})
    _check(run, replay(run, spec))


def test_most_runs_are_replayed() -> None:
    """Guard against the calibration quietly dropping its data: every run is replayed, from
    its config or from its base model with the assumed scheme."""
    replayable = [r for r in engine_runs() if _config_path(r) is not None]
    assert len(replayable) >= 26
    assert [r["id"] for r in engine_runs()
            if _config_path(r) is None and r["model"] not in ASSUMED] == []
