"""`inventory engines --diff A B MODEL -d DEV`: two releases on one split, the KV tokens
before and after and what moved them; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from tests.conftest import Invoke


def test_the_diff_names_the_tier_that_moved_the_tokens(invoke: Invoke) -> None:
    run = invoke("engines", "--diff", "vllm@0.27", "vllm@0.28", "llama-3.1-8b", "-d", "b200",
                 "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["schema_version"] == 1
    before, after = data["before"], data["after"]
    assert (before["max_num_batched_tokens"], after["max_num_batched_tokens"]) == (8192, 16384)
    assert data["kv_tokens_change"] == after["kv_tokens"] - before["kv_tokens"] < 0
    assert isinstance(after["kv_pool_bytes"], int)
    assert any(m.startswith("max_num_batched_tokens: 8,192 → 16,384") for m in data["moved"])
    assert any("get_batch_defaults" in r["source"] for r in data["rules_added"])
    assert (data["tp"], data["pp"]) == (1, 1)
    table = invoke("engines", "--diff", "vllm@0.27", "vllm@0.28", "llama-3.1-8b", "-d",
                   "b200")
    assert table.code == 0 and "KV tokens" in table.stdout and "vLLM 0.28" in table.stdout
    assert yaml.safe_load(invoke("engines", "--diff", "vllm@0.27", "vllm@0.28",
                                 "llama-3.1-8b", "-d", "b200", "--format", "yaml").stdout
                          )["after"]["kv_tokens"] == after["kv_tokens"]


def test_same_release_moves_nothing_and_a_newer_one_warns(invoke: Invoke) -> None:
    data = invoke("engines", "--diff", "vllm@0.21", "vllm@0.21", "llama-3.1-8b", "-d",
                  "h100", "--format", "json").json()
    assert data["kv_tokens_change"] == 0 and data["moved"] == [] and not data["rules_added"]
    run = invoke("engines", "--diff", "vllm@0.28", "vllm@0.40", "llama-3.1-8b", "-d", "h100")
    assert run.code == 0 and "newer than the newest release" in run.stderr
    data = invoke("engines", "--diff", "vllm@0.28", "vllm@0.40", "llama-3.1-8b", "-d", "h100",
                  "--format", "json").json()
    assert data["after"]["warning"] and data["before"]["warning"] is None


def test_bad_diffs_are_one_line_and_exit_2(invoke: Invoke) -> None:
    for args in (("--diff", "vllm@0.27", "vllm@0.28", "-d", "h100"),
                 ("--diff", "vllm@0.27", "vllm@0.28", "llama-3.1-8b"),
                 ("--diff", "vllm@0.27", "nosuch@1", "llama-3.1-8b", "-d", "h100"),
                 ("--diff", "vllm@0.27", "vllm@x", "llama-3.1-8b", "-d", "h100"),
                 ("vllm", "-d", "h100")):
        run = invoke("engines", *args)
        assert run.code == 2, args
        assert "Traceback" not in run.stderr and run.stdout == ""


def test_the_diff_runs_in_a_subprocess() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "llm_inventory", "engines", "--diff", "trtllm@1.0", "trtllm@1.2",
         "llama-3.1-8b", "-d", "h100", "--format", "json"],
        capture_output=True, text=True, timeout=120, check=True)
    data = json.loads(out.stdout)
    assert any("math.ceil" in r["source"] for r in data["rules_added"])
    assert data["after"]["kv_tokens"] >= data["before"]["kv_tokens"]
