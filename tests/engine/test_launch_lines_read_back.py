"""Every launch line `placement --launch` prints reads back through `inventory launch` to the
plan it came from: the same split and engines, the same pool and concurrency."""

from __future__ import annotations

import shlex

import pytest

from llm_inventory.engine.launch import match_program, predict_launch
from llm_inventory.engine.launch_lines import model_path, with_launch_lines
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset

CASES = [
    ("llama-3.1-8b", "h100", 4, "vllm", {}),
    ("llama-3.1-8b", "h100", 4, "sglang", {}),
    ("llama-3.1-8b", "h100", 2, "trtllm", {}),
    ("llama-3.1-8b", "rtx-4090", 2, "llamacpp", {}),
    ("qwen3-30b-a3b", "h100", 4, "vllm", {"kv_dtype": "fp8"}),
    ("qwen3-30b-a3b", "h100", 4, "sglang", {}),
    ("deepseek-v2-lite", "h100", 4, "sglang", {}),
    ("deepseek-v2-lite", "h100", 4, "vllm", {"context": 32768}),
]


@pytest.mark.parametrize(("model", "device", "count", "engine", "extra"), CASES)
def test_placement_lines_read_back_to_their_plans(model: str, device: str, count: int,
                                                  engine: str, extra: dict[str, object]) -> None:
    spec = load_preset(model)
    dev = resolve_device(device)
    request = PlacementRequest(device=dev, count=count, engine=engine, limit=12, **extra)
    result = with_launch_lines(plan_placement(spec, request), request, model)
    checked = 0
    for plan in result.plans:
        if not plan.fits:
            continue
        servers = [line for line in plan.launch if "router" not in line.split()[0]
                   and not line.startswith(("vllm-router", "python -m sglang_router"))]
        if not servers:
            assert engine == "trtllm" and plan.ep > plan.tp or plan.disaggregation, plan
            continue
        assert len(servers) == (2 if plan.disaggregation == "prefill/decode" else 1)
        for line in servers:
            era, rest = match_program(shlex.split(line))
            command = era.parse_launch(rest)
            assert command.model == model_path(model)[0]
            read = predict_launch(spec, command, get(f"{engine}@{result.engine_version}"), dev)
            got = read.plan
            assert (got.tp, got.pp, got.ep) == (plan.tp, plan.pp, plan.ep), line
            assert read.count == plan.devices_per_replica
            assert got.engines // max(1, got.dp) == plan.engines // max(1, plan.dp)
            assert read.context == result.context
            d, e = got.per_device, plan.per_device
            assert d is not None and e is not None
            assert d.kv_capacity_tokens == e.kv_capacity_tokens, line
            assert got.max_concurrency == plan.max_concurrency, line
            checked += 1
    assert checked, "no fitting plan was read back"


def test_a_preset_is_named_by_its_hub_id_a_gguf_by_its_path() -> None:
    assert model_path("llama-3.1-8b") == ("meta-llama/Llama-3.1-8B", False)
    assert model_path("models/x-Q4_K_M.gguf") == ("models/x-Q4_K_M.gguf", True)
    assert model_path("org/name") == ("org/name", False)
