"""`inventory pack`: several models on one node, each checked by its engine's accounting."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Invoke

THREE = ["llama-3.1-8b:8k:8", "qwen3-8b:8k:8", "mistral-7b:8k:8"]


def _placement(invoke: Invoke, instance: dict[str, Any], device: str, utilization: float,
               ) -> dict[str, Any]:
    run = invoke("placement", instance["model"], "-d", device, "-n", "1", "--tp", "1",
                 "--pp", "1", "--context", str(instance["context"]), "--concurrency",
                 str(instance["concurrency"]), "--gpu-memory-utilization", f"{utilization}",
                 "--used", str(instance["others_bytes"]), "-f", "json")
    assert run.code == 0, run.stderr
    plan: dict[str, Any] = run.json()["plans"][0]
    return plan


def test_three_8b_models_share_one_h100_by_vllms_own_accounting(invoke: Invoke) -> None:
    run = invoke("pack", *THREE, "-d", "h100-sxm", "-n", "1", "-f", "json")
    assert run.code == 0, run.stderr
    result = run.json()
    assert result["fits"] and len(result["instances"]) == 3
    memory = result["device_memory_bytes"]
    held = 0
    for order, instance in enumerate(result["instances"]):
        assert instance["devices"] == [0] and instance["shared"]
        assert instance["start_order"] == order and instance["others_bytes"] == held
        fraction = instance["memory_fraction"]
        # started after the others, at its fraction, vLLM starts and holds its requests …
        plan = _placement(invoke, instance, "h100-sxm", fraction)
        assert plan["fits"] and plan["startup_error"] is None
        # … and one hundredth less does not hold them (the fraction is the smallest)
        assert not _placement(invoke, instance, "h100-sxm", round(fraction - 0.01, 2))["fits"]
        held += instance["footprint_bytes"]
    assert held <= memory
    assert result["free_bytes"] == [memory - held]


def test_a_model_with_no_room_left_exits_1(invoke: Invoke) -> None:
    run = invoke("pack", *THREE, "gemma-2-9b:8k:8", "-d", "h100-sxm", "-n", "1", "-f", "json")
    assert run.code == 1
    result = run.json()
    assert not result["fits"] and len(result["unplaced"]) == 1
    assert "no device has room left" in result["unplaced"][0]
    assert "find no room" in run.stderr


def test_a_large_model_gets_devices_of_its_own(invoke: Invoke) -> None:
    run = invoke("pack", "llama-3.1-70b:8k:8", "llama-3.1-8b:8k:8", "-d", "h100-sxm", "-n",
                 "4", "-f", "json")
    assert run.code == 0, run.stderr
    big, small = run.json()["instances"]
    assert big["model"] == "llama-3.1-70b" and not big["shared"] and len(big["devices"]) > 1
    assert small["devices"][0] not in big["devices"]


def test_sglang_keeps_a_device_each(invoke: Invoke) -> None:
    run = invoke("pack", "llama-3.1-8b:8k:8", "qwen3-8b:8k:8", "-d", "h100-sxm", "-n", "2",
                 "-e", "sglang", "-f", "json")
    assert run.code == 0, run.stderr
    devices = [i["devices"] for i in run.json()["instances"]]
    assert sorted(devices) == [[0], [1]]
    assert not any(i["shared"] for i in run.json()["instances"])


def test_the_table_reads_at_80_columns(invoke: Invoke) -> None:
    from typer.testing import CliRunner

    from llm_inventory.cli.app import app

    result = CliRunner(env={"COLUMNS": "80", "NO_COLOR": "1"}).invoke(
        app, ["pack", *THREE, "-d", "h100-sxm", "-n", "1"], catch_exceptions=False)
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "…" not in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["llama-3.1-8b:8k:8:1"], "expected MODEL[:CONTEXT[:CONCURRENCY]]"),
    (["llama-3.1-8b:8q"], "context: unknown suffix"),
    (["llama-3.1-8b:8k:none"], "concurrency: expected a whole number"),
    ([":8k"], "expected MODEL"),
    (["no-such-model"], "no-such-model"),
])
def test_bad_input_is_one_line(invoke: Invoke, args: list[str], message: str) -> None:
    run = invoke("pack", *args, "-d", "h100-sxm", "-n", "1")
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.splitlines()) == 1
