"""The README's tour is real: every `$ inventory …` block is run and its output compared.

UPDATE_README=1 rewrites the blocks from a fresh run instead of comparing.
"""

from __future__ import annotations

import os
import re
import shlex

from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.conftest import ROOT

README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n\$ (inventory [^\n]*)\n(.*?)```", re.DOTALL)
RUNNER = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})


def _run(command: str) -> str:
    args = shlex.split(command)[1:]
    result = RUNNER.invoke(app, args, catch_exceptions=False)
    return result.stdout + result.stderr


def _render(text: str) -> str:
    return BLOCK.sub(lambda m: f"```console\n$ {m[1]}\n{_run(m[1])}```", text)


def test_readme_tour_is_real_output() -> None:
    text = README.read_text()
    assert BLOCK.search(text), "the README has no tour blocks"
    rendered = _render(text)
    if os.environ.get("UPDATE_README"):
        README.write_text(rendered)
    assert rendered == text, "README tour output is stale; rerun with UPDATE_README=1"


def test_readme_setup_has_two_commands() -> None:
    text = README.read_text()
    setup = text.split("<!-- setup:begin -->")[1].split("<!-- setup:end -->")[0]
    lines = [line for line in setup.splitlines() if line and not line.startswith("```")]
    assert len(lines) == 2
    assert lines[0].startswith("pip install -e '.[dev]' && inventory ")
    assert "pytest" in lines[1]
