"""Speculative decoding on the command line: placement's and recommend's options, launch's
engine flags, their JSON keys, and bad input as one line with exit 2."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke
from tests.reference import DATA

DRAFT = str(DATA / "engine-logs" / "configs" / "Qwen--Qwen3-0.6B.json")


def test_placement_json_carries_the_drafter(invoke: Invoke) -> None:
    run = invoke("placement", "qwen3-8b", "-d", "h100", "-n", "1", "--speculative",
                 "draft_model", "--draft-model", DRAFT, "--num-speculative-tokens", "4",
                 "--acceptance", "0.6", "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    s = data["plans"][0]["speculative"]
    assert s["method"] == "draft_model" and s["num_speculative_tokens"] == 4
    assert s["draft_kv_bytes_per_token"] == 114_688
    assert isinstance(s["draft_weight_bytes"], int) and s["draft_weight_bytes"] > 0
    assert s["accepted_tokens_per_step"] == pytest.approx((1 - 0.6 ** 5) / 0.4, abs=1e-4)
    assert data["trust"]["speculative_time"]["kind"] == "estimate"
    off = invoke("placement", "qwen3-8b", "-d", "h100", "-n", "1", "--format", "json").json()
    assert off["plans"][0]["speculative"] is None
    assert "speculative" not in off["trust"]


def test_placement_table_shows_the_drafter(invoke: Invoke) -> None:
    run = invoke("placement", "qwen3-8b", "-d", "h100", "-n", "1", "--speculative",
                 "eagle3", "--acceptance", "0.7", "--limit", "1")
    assert run.code == 0, run.stderr
    assert "▚ drafter" in run.stdout
    assert "speculative decoding (plan 1, eagle3, k = 3)" in run.stdout
    assert "resting on that rate" in run.stdout


@pytest.mark.parametrize(("args", "field"), [
    (["--draft-model", DRAFT], "draft_model"),
    (["--acceptance", "0.5"], "acceptance"),
    (["--speculative", "medusa"], "speculative"),
    (["--speculative", "draft_model"], "draft_model"),
    (["--speculative", "mtp"], "speculative"),
    (["--speculative", "ngram", "--draft-model", DRAFT], "draft_model"),
    (["--speculative", "eagle", "--acceptance", "1.5"], "acceptance"),
    (["--speculative", "draft_model", "--draft-model", "no-such-model"], "draft_model"),
])
def test_bad_speculative_options_are_one_line_and_exit_2(invoke: Invoke, args: list[str],
                                                         field: str) -> None:
    run = invoke("placement", "qwen3-8b", "-d", "h100", "-n", "1", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert field.replace("_", "-") in run.stderr or field in run.stderr


def test_launch_reads_speculative_config_and_no_longer_ignores_it(invoke: Invoke) -> None:
    run = invoke("launch", "-d", "h100", "--format", "json", "--", "vllm", "serve",
                 "Qwen/Qwen3-8B", "--speculative-config",
                 '{"method":"draft_model","model":"' + DRAFT + '","num_speculative_tokens":4}')
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["command"]["ignored"] == []
    assert data["command"]["speculative"]["method"] == "draft_model"
    assert data["plan"]["speculative"]["draft_kv_bytes_per_token"] == 114_688
    assert "not modelled" not in run.stderr


@pytest.mark.parametrize("config", ["{oops", '{"method":"eagle"}', "[]",
                                    '{"method":"draft_model","model":"nowhere/x",'
                                    '"num_speculative_tokens":2}'])
def test_launch_bad_speculative_config_is_one_line(invoke: Invoke, config: str) -> None:
    run = invoke("launch", "-d", "h100", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                 "--speculative-config", config)
    assert run.code == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_recommend_sizes_plans_with_the_drafter_and_writes_it(invoke: Invoke) -> None:
    args = ("recommend", "qwen3-8b", "-d", "h100", "--isl", "1000", "--osl", "200",
            "--concurrency", "8", "--limit", "1", "--format", "json")
    off = invoke(*args).json()
    on = invoke(*args, "--speculative", "draft_model", "--draft-model", DRAFT).json()
    assert "--speculative-config" in on["launch"]
    assert on["launch_kv_tokens"] < off["launch_kv_tokens"]
