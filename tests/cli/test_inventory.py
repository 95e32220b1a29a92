"""`inventory inventory` and `inventory compare` through the runner."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke


def test_json_keys_scripts_rely_on(invoke: Invoke) -> None:
    data = invoke("inventory", "llama-3.1-70b", "--format", "json").json()
    assert data["parameters"]["total"] == 70_553_706_496
    assert data["parameters"]["active"] == 70_553_706_496
    assert data["weight_bytes"] == 2 * 70_553_706_496
    assert data["state"]["bytes_per_token"] == 327_680
    assert data["state"]["bytes_per_sequence"] == 2_621_440_000
    assert {s["name"] for s in data["stages"]} == {"prefill", "decode"}


def test_moe_active_and_expert_stage(invoke: Invoke) -> None:
    data = invoke("inventory", "mixtral-8x7b", "--batch", "64", "-f", "json").json()
    assert data["parameters"]["active"] < data["parameters"]["total"]
    assert "expert groups" in {s["name"] for s in data["stages"]}
    split = {s["name"]: s["available"] for s in data["splits"]}
    assert split["expert (EP)"] and not split["encoder disaggregation"]
    # A batch of 64 touches (nearly) every expert: decode reads the resident bytes.
    assert data["decode"]["experts_touched"] > 7.9


def test_decode_is_bandwidth_shaped_and_prefill_compute_shaped(invoke: Invoke) -> None:
    data = invoke("inventory", "llama-3.1-8b", "--prompt-tokens", "4096", "-f", "json").json()
    assert data["decode"]["arithmetic_intensity"] < 5
    assert data["prefill"]["arithmetic_intensity"] > 500


def test_table_sections(invoke: Invoke) -> None:
    run = invoke("inventory", "gemma-2-9b")
    assert run.code == 0
    for heading in ("1. Parameter bytes", "2. Persistent state", "3. Prefill and decode",
                    "4. Conditional communication", "5. Independently placeable stages"):
        assert heading in run.stdout
    assert "sliding (4,096)" in run.stdout


def test_compare_is_a_list(invoke: Invoke) -> None:
    run = invoke("compare", "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "-f", "json")
    assert run.code == 0
    data = run.json()
    assert [d["model"] for d in data] == ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"]
    table = invoke("compare", "llama-3.1-8b", "mixtral-8x7b")
    assert "llama-3.1-8b" in table.stdout and "mixtral-8x7b" in table.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["inventory", "nope"], "nope"),
        (["inventory", "llama-3.1-8b", "--context", "0x"], "--context"),
        (["inventory", "llama-3.1-8b", "--batch", "0"], "--batch"),
        (["inventory", "llama-3.1-8b", "--dtype", "fp9"], "--dtype"),
        (["inventory", "llama-3.1-8b", "--prompt-tokens", "9000"], "--prompt-tokens"),
        (["compare", "llama-3.1-8b"], "models"),
        (["inventory", "missing/folder"], "missing/folder"),
        (["inventory", "missing.yaml"], "missing.yaml"),
    ],
)
def test_bad_input(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke(*args)
    assert run.code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert flag in run.stderr


def test_compare_says_how_its_figures_were_obtained(invoke: Invoke) -> None:
    run = invoke("compare", "llama-3.1-8b", "qwen3-8b")
    assert run.code == 0
    assert "trust: parameters exact; state exact" in run.stdout
