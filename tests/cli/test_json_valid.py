"""Every command's JSON is valid JSON (no NaN or Infinity, which RFC 8259 has no spelling
for) and figures that cannot be negative never are — over ordinary and edge requests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Invoke

LAUNCH = ["launch", "--device", "h100", "--"]
RECOMMEND = ["recommend", "llama-3.1-8b", "--device", "h100", "--isl", "1000", "--osl", "200"]

COMMANDS: dict[str, list[str]] = {
    "kv": ["kv", "--layers", "80", "--tokens", "8000"],
    "kv --model": ["kv", "--model", "gemma-2-9b", "--tokens", "8000"],
    "inventory": ["inventory", "llama-3.1-8b"],
    "inventory moe": ["inventory", "gpt-oss-20b", "--device", "gb200"],
    "compare": ["compare", "llama-3.1-8b", "qwen3-8b"],
    "models": ["models"],
    "models MODEL": ["models", "llama-3.1-8b"],
    "devices": ["devices"],
    "devices DEVICE": ["devices", "h100"],
    "engines": ["engines"],
    "engines ENGINE": ["engines", "trtllm"],
    "schema": ["schema"],
    "placement": ["placement", "llama-3.1-8b", "--device", "h100", "--count", "2"],
    "placement ik_llama host": ["placement", "gpt-oss-20b", "--device", "gb200", "--engine",
                                "ik_llama@1", "--limit", "3"],
    "placement llamacpp": ["placement", "gpt-oss-20b", "--device", "h100", "--engine",
                           "llamacpp", "--limit", "3"],
    "placement too small": ["placement", "llama-3.1-70b", "--device", "rtx4090",
                            "--count", "1"],
    "launch": [*LAUNCH, "vllm", "serve", "llama-3.1-8b"],
    "launch tiny context": [*LAUNCH, "vllm", "serve", "llama-3.1-8b", "--max-model-len", "1"],
    "launch llama.cpp": [*LAUNCH, "llama-server", "-m", "llama-3.1-8b", "-c", "1"],
    "launch sglang": [*LAUNCH, "python", "-m", "sglang.launch_server", "--model-path",
                      "llama-3.1-8b", "--context-length", "1"],
    "recommend": [*RECOMMEND, "--qps", "1"],
    "recommend tiny rate": [*RECOMMEND, "--qps", "0.000000001"],
    "recommend huge rate": [*RECOMMEND, "--qps", "1e12"],
    "recommend tight targets": [*RECOMMEND, "--qps", "100", "--ttft", "1ms", "--tpot", "1ms"],
    "route": ["route", "--experts", "8", "--top-k", "2", "--tokens", "16", "--ep", "4"],
    "sample": ["sample", "--chain", "top_k=2,top_p=0.9"],
}

#: Keys whose figures may be negative by meaning (a signed difference).
SIGNED = {"headroom_bytes", "free_bytes", "margin_bytes", "spare_bytes", "delta", "shift",
          "difference_bytes", "error", "offset",
          "logits"}  # log-probabilities are signed


def _strict(text: str) -> Any:
    def refuse(word: str) -> Any:
        raise AssertionError(f"{word} in JSON output")

    return json.loads(text, parse_constant=refuse)


def _negatives(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [n for k, v in value.items() if k not in SIGNED
                for n in _negatives(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in _negatives(v, f"{path}[{i}]")]
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return [f"{path} = {value}"]
    return []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_is_valid_and_never_negative(invoke: Invoke, name: str) -> None:
    argv = COMMANDS[name]
    run = invoke(argv[0], "--format", "json", *argv[1:])
    assert run.code in (0, 1), run.stderr
    data = _strict(run.stdout)
    assert _negatives(data) == [], name
