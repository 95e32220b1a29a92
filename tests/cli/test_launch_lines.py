"""`placement --launch` and `recommend` print lines an engine can be started with."""

from __future__ import annotations

import shlex

from tests.conftest import Invoke


def test_placement_launch_gives_each_plan_its_command(invoke: Invoke) -> None:
    args = ("placement", "llama-3.1-70b", "-d", "h100", "-n", "8", "--limit", "3", "--launch")
    data = invoke(*args, "--format", "json").json()
    for plan in data["plans"]:
        assert len(plan["launch"]) == 1
        words = shlex.split(plan["launch"][0])
        assert words[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B"]  # not the preset
        assert words[words.index("--max-model-len") + 1] == "8000"
    out = invoke(*args).stdout
    assert "launch (one replica each):" in out and "vllm serve meta-llama/" in out
    plain = invoke("placement", "llama-3.1-70b", "-d", "h100", "-n", "8", "--format", "json")
    assert all(p["launch"] == [] for p in plain.json()["plans"])  # only when asked


def test_a_prefill_decode_plan_is_two_servers_and_a_router(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "2", "-e", "sglang",
                  "--launch", "--limit", "0", "--format", "json").json()
    pd = [p for p in data["plans"] if p["disaggregation"] == "prefill/decode"]
    assert pd
    lines = pd[0]["launch"]
    assert len(lines) == 3
    assert "--disaggregation-mode prefill" in lines[0]
    assert "--disaggregation-mode decode" in lines[1]
    assert lines[0].startswith("CUDA_VISIBLE_DEVICES=0 ")
    assert lines[1].startswith("CUDA_VISIBLE_DEVICES=1 ")
    assert "sglang_router.launch_router --pd-disaggregation" in lines[2]
    for line in lines[:2]:  # each server reads back through `inventory launch`
        run = invoke("launch", "-d", "h100", "--format", "json", "--", *shlex.split(line))
        assert run.code == 0, run.stderr
        assert run.json()["plan"]["tp"] == pd[0]["tp"]


def test_no_line_that_launch_would_read_as_another_engine(invoke: Invoke) -> None:
    """ik_llama.cpp shares llama-server: a plain line would be read as llama.cpp, so it
    gets none rather than one that starts another engine's plan."""
    data = invoke("recommend", "llama-3.1-8b", "-d", "h100", "--use-case", "chat", "--qps",
                  "5", "--format", "json").json()
    assert "llamacpp" in data["equivalents"] and "ik_llama" not in data["equivalents"]
    for name, command in data["equivalents"].items():
        run = invoke("launch", "-d", "h100", "--format", "json", "--",
                     *shlex.split(command.splitlines()[0]))
        assert run.json()["engine"] == name
