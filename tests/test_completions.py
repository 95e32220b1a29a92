"""The committed shell completions are what the app generates, and they complete."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.conftest import ROOT

REGENERATE = "for sh in bash zsh fish; do _INVENTORY_COMPLETE=source_$sh inventory > completions/inventory.$sh; done"  # noqa: E501


def _run(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-m", "llm_inventory"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completions_are_current(shell: str) -> None:
    generated = _run({"_INVENTORY_COMPLETE": f"source_{shell}"})
    committed = (ROOT / "completions" / f"inventory.{shell}").read_text()
    assert generated == committed, (
        f"completions/inventory.{shell} is out of date; regenerate with:\n{REGENERATE}"
    )


def test_bash_completion_offers_commands() -> None:
    out = _run({
        "_INVENTORY_COMPLETE": "complete_bash",
        "COMP_WORDS": "inventory k",
        "COMP_CWORD": "1",
    })
    assert "kv" in out.split()


def _complete(env: dict[str, str]) -> str:
    """What the app prints for a completion request, in process (the scripts ask the same)."""
    result = CliRunner().invoke(app, [], env=env, prog_name="inventory")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _values(shell: str, line: str) -> list[str]:
    """The values `shell` would offer after `line` (a trailing space: a new word)."""
    if shell == "bash":
        words = line.split()
        cword = len(words) if line.endswith(" ") else len(words) - 1
        out = _complete({"_INVENTORY_COMPLETE": "complete_bash", "COMP_WORDS": line,
                         "COMP_CWORD": str(cword)})
        return out.split()
    env = {"_INVENTORY_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": line}
    if shell == "fish":
        env["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
        return [row.split("\t")[0] for row in _complete(env).splitlines()]
    out = _complete(env)
    return [] if out.strip() == "_files" else re.findall(r'^(?:_arguments .*?\(\()?"([^"]+)"',
                                                         out, re.MULTILINE)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("inventory placement llama-3.1-", {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"}),
        ("inventory compare mixtral-8x7b deepseek-", {"deepseek-v3", "deepseek-r1"}),
        ("inventory kv --model meta-llama/Llama-3.1-8", {"meta-llama/Llama-3.1-8B"}),
        ("inventory placement x --device h10", {"h100-sxm", "h100-pcie", "h100"}),
        ("inventory devices mi3", {"mi300x", "mi325x"}),
        ("inventory kv --kv-dtype fp8", {"fp8", "fp8_e4m3", "fp8_e5m2"}),
        ("inventory inventory x --dtype in", {"int8", "int4"}),
        ("inventory route --activation-dtype bf", {"bf16"}),
        ("inventory placement x --engine s", {"sglang", "sglang@0.5.23"}),
        ("inventory placement x --engine ", {"vllm", "sglang", "trtllm", "llamacpp"}),
        ("inventory compare x --engine vllm,tr", {"vllm,trtllm"}),
        ("inventory recommend x --device h10", {"h100-sxm", "h100"}),
        ("inventory recommend x --use-case c", {"chat", "code-completion"}),
        ("inventory recommend x --objective ", {"cost", "latency", "gpus", "throughput"}),
        ("inventory launch --device mi3", {"mi300x", "mi325x"}),
        ("inventory engines sg", {"sglang"}),
        ("inventory placement x --sort c", {"concurrency", "cost"}),
    ],
)
def test_completion_offers_values(shell: str, line: str, expected: set[str]) -> None:
    offered = set(_values(shell, line))
    assert expected <= offered, offered


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_path_falls_back_to_file_names(shell: str) -> None:
    assert _values(shell, "inventory placement ./exam") == []
