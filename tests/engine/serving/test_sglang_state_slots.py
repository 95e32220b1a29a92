"""SGLang on a hybrid model keeps each request's Mamba / linear-attention state in slots of
its own, taken from the pool before the tokens: the slots are shown as their own part of
the pool, with the --max-mamba-cache-size that holds the most requests at the context."""

from __future__ import annotations

import shlex

from llm_inventory.engine.launch import match_program, predict_launch
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset
from tests.conftest import Invoke

MODEL, CONTEXT = "qwen3.5-397b-a17b", 131072


def _plan(engine: str) -> object:
    request = PlacementRequest(device=resolve_device("h200"), count=8, tp=8, ep=1,
                               context=CONTEXT, engine=engine, limit=1)
    return plan_placement(load_preset(MODEL), request).plans[0]


def test_slots_are_their_own_part_of_the_pool_and_the_knob_reaches_more() -> None:
    plan = _plan("sglang")
    d = plan.per_device
    assert d.state_slots and d.state_slot_bytes
    assert 0 < d.state_slot_bytes < d.kv_pool_bytes
    assert d.state_slots_knob == "--max-mamba-cache-size"
    # the default gives about half the pool to slots: concurrency well under what the
    # same pool holds with the slots matched to the tokens
    assert d.state_slot_bytes > 0.3 * d.kv_pool_bytes
    assert d.state_slots_best_concurrency > 1.5 * plan.max_concurrency
    assert d.state_slots_best < d.state_slots
    # vLLM pages the state with the tokens: no slots apart
    assert _plan("vllm").per_device.state_slots is None
    # `inventory launch` with the knob set reads back the concurrency promised
    spec = load_preset(MODEL)
    era, rest = match_program(shlex.split(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B --tp 8 "
        f"--context-length {CONTEXT} --max-mamba-cache-size {d.state_slots_best}"))
    read = predict_launch(spec, era.parse_launch(rest), get("sglang"), resolve_device("h200"))
    assert abs(read.plan.max_concurrency - d.state_slots_best_concurrency) < 1e-3
    # neither one slot fewer nor one more holds more
    for n in (d.state_slots_best - 1, d.state_slots_best + 1):
        era, rest = match_program(shlex.split(
            "python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B --tp 8 "
            f"--context-length {CONTEXT} --max-mamba-cache-size {n}"))
        other = predict_launch(spec, era.parse_launch(rest), get("sglang"),
                               resolve_device("h200"))
        assert other.plan.max_concurrency <= read.plan.max_concurrency + 1e-9


def test_the_table_names_the_slots_and_the_knob(invoke: Invoke) -> None:
    out = invoke("placement", MODEL, "-d", "h200", "-n", "8", "--tp", "8", "--ep", "1",
                 "--context", str(CONTEXT), "-e", "sglang", "--limit", "1").stdout
    assert "state slots:" in out and "--max-mamba-cache-size" in out
