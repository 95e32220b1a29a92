"""Every command that prints figures says, in its JSON, how each group was obtained."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Invoke

KINDS = {"exact", "engine rule", "calibrated", "calibrated on your log", "estimate", "bound"}

COMMANDS = {
    "kv": ["kv", "--layers", "80", "--tokens", "8000"],
    "kv --model": ["kv", "--model", "gemma-2-9b", "--tokens", "8000"],
    "inventory": ["inventory", "llama-3.1-8b"],
    "compare": ["compare", "llama-3.1-8b", "qwen3-8b"],
    "models": ["models"],
    "models MODEL": ["models", "llama-3.1-8b"],
    "placement": ["placement", "llama-3.1-8b", "--device", "h100", "--count", "2"],
    "launch": ["launch", "--device", "h100", "--", "vllm", "serve", "llama-3.1-8b"],
    "recommend": ["recommend", "llama-3.1-8b", "--device", "h100", "--isl", "1000",
                  "--osl", "200", "--qps", "1"],
    "route": ["route", "--experts", "8", "--top-k", "2", "--tokens", "16", "--ep", "4"],
    "sample": ["sample", "--chain", "top_k=2,top_p=0.9"],
}


def _results(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return data
    if "models" in data and isinstance(data["models"], list):
        return list(data["models"])
    return [data]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_carries_trust(invoke: Invoke, name: str) -> None:
    run = invoke(*COMMANDS[name][:1], "--format", "json", *COMMANDS[name][1:])
    assert run.code == 0, run.stderr
    for result in _results(run.json()):
        trust = result["trust"]
        assert trust, name
        for group, label in trust.items():
            assert label["kind"] in KINDS, (name, group)
            assert label["basis"], (name, group)
