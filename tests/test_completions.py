"""The committed shell completions are what the app generates, and they complete."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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
