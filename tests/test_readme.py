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


def test_readme_tells_a_newcomer_how_to_install_and_extend() -> None:
    text = README.read_text()
    assert "pipx install llm-inventory" in text and "pip install llm-inventory" in text
    assert "offline by default" in text
    assert "--devices-file" in text and "## Models and devices of your own" in text
    assert "`128k` is 128,000 tokens and\n  `128K` is 131,072" in text
    from llm_inventory.units import parse_tokens

    assert parse_tokens("128k") == 128_000 and parse_tokens("128K") == 131_072


def test_readme_extension_commands_run() -> None:
    """The section's commands that name files of this repository run as written."""
    section = README.read_text().split("## Models and devices of your own")[1].split("\n## ")[0]
    commands = [line for line in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
                for line in line.splitlines()]
    runnable = [c for c in commands if all((ROOT / w).exists() for w in c.split()
                                           if "/" in w or w.endswith((".yaml", ".json")))]
    assert len(runnable) >= 2, commands
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for command in runnable:
            result = RUNNER.invoke(app, shlex.split(command)[1:], catch_exceptions=False)
            assert result.exit_code == 0, (command, result.stderr)
    finally:
        os.chdir(cwd)
