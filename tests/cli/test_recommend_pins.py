"""`recommend` sized to a closed loop's users, and pinned where the user pins it."""

from __future__ import annotations

import shlex

from tests.conftest import Invoke

CHAT = ("recommend", "llama-3.1-8b", "-d", "h100", "--use-case", "chat")


def _flag(command: str, name: str) -> str:
    words = shlex.split(command)
    return words[words.index(name) + 1]


def test_a_closed_loop_is_sized_to_its_users(invoke: Invoke) -> None:
    data = invoke(*CHAT, "--concurrency", "20", "--format", "json").json()
    chosen = data["chosen"]
    assert chosen["batch"] == 20 < chosen["batch_limit"]
    assert _flag(data["launch"], "--max-num-seqs") == "20"
    for plan in data["plans"]:
        assert plan["batch"] <= 20


def test_split_and_context_pins(invoke: Invoke) -> None:
    data = invoke("recommend", "llama-3.1-70b", "-d", "h100", "--use-case", "chat",
                  "--qps", "2", "--tp", "4", "--pp", "1", "--context", "32768", "--limit", "0",
                  "--format", "json").json()
    assert data["plans"] and all((p["tp"], p["pp"]) == (4, 1) for p in data["plans"])
    assert _flag(data["launch"], "--max-model-len") == "32768"
    assert _flag(data["launch"], "--tensor-parallel-size") == "4"
    assert not any("launch context" in n for n in data["notes"])  # pinned: nothing to say
    plain = invoke(*CHAT, "--qps", "1", "--format", "json").json()
    assert _flag(plain["launch"], "--max-model-len") == "1300"
    assert any("--context" in n and "1,300" in n for n in plain["notes"])
    short = invoke(*CHAT, "--qps", "1", "--context", "1000")
    assert short.code == 2 and "context" in short.stderr


def test_no_disaggregation_leaves_out_the_disaggregated_plans(invoke: Invoke) -> None:
    args = (*CHAT, "--qps", "20", "-e", "sglang", "--limit", "0", "--format", "json")
    every = invoke(*args).json()["plans"]
    assert any(p["disaggregation"] for p in every)
    plain = invoke(*args, "--no-disaggregation").json()["plans"]
    assert plain and not any(p["disaggregation"] for p in plain)
