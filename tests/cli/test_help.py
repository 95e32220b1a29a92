"""Every command has help with an example, and the example runs as written."""

from __future__ import annotations

import os
import re
import shlex

import pytest
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.conftest import ROOT, Invoke

COMMANDS = [c.name for c in app.registered_commands if c.name]


def test_every_command_is_registered() -> None:
    assert set(COMMANDS) == {"kv", "inventory", "placement", "recommend", "compare", "models",
                             "devices", "route", "sample", "schema", "launch", "engines", "check",
                             "pack", "calibrate", "sweep"}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_example_runs(invoke: Invoke, command: str) -> None:
    help_text = invoke(command, "--help")
    assert help_text.code == 0
    match = re.search(r"Example: (inventory [^\n│]*)", help_text.stdout)
    assert match, f"`inventory {command} --help` has no example"
    args = shlex.split(match[1].strip())[1:]
    assert args[0] == command
    cwd = os.getcwd()
    os.chdir(ROOT)  # examples name files relative to the repository
    try:
        run = invoke(*args)
    finally:
        os.chdir(cwd)
    assert run.code == 0, run.stderr
    assert run.stdout.strip()


def _help_at(columns: int, *args: str) -> str:
    runner = CliRunner(env={"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"})
    result = runner.invoke(app, [*args, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("command", [*COMMANDS, None])
def test_help_reads_at_80_columns(command: str | None) -> None:
    """Every option name whole, no `<bool>` on flags, usage reads MODEL, nothing cut."""
    args = [command] if command else []
    text = _help_at(80, *args)
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    click_command = group.commands[command] if command else group
    for param in click_command.params:
        if getattr(param, "hidden", False) or param.param_type_name != "option":
            continue
        for name in (*param.opts, *param.secondary_opts):
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (
                f"{name} is not readable in full in `inventory {command} --help`")
    assert "<bool>" not in text and "<str>" not in text and "<int" not in text
    assert "[default: no-" not in text
    usage = text.splitlines()[0]
    assert usage.startswith("Usage: inventory") and "{" not in usage
    assert not re.search(r"--[\w-]+…", text), "an option name is cut"
    for line in text.splitlines():  # the example too: it is one line, to copy as it is
        assert len(line) <= 80, line


@pytest.mark.parametrize("command", COMMANDS)
def test_help_prose_is_rewrapped_not_hard_wrapped(command: str) -> None:
    """Each description paragraph fills the line: no break where the next word would fit."""
    text = _help_at(80, command)
    description = text.split("\n\n", 1)[1].split("\nArguments:")[0].split("\nOptions:")[0]
    width = 78  # Click's help width at 80 columns
    for paragraph in description.split("\n\n"):
        lines = [line.strip() for line in paragraph.splitlines() if line.strip()]
        if not lines or lines[0].startswith("Example: "):
            assert len(lines) <= 1, "the example is split over lines"
            continue
        for line, following in zip(lines, lines[1:], strict=False):
            assert len(line) + 1 + len(following.split()[0]) > width, (
                f"`inventory {command} --help` breaks early after: {line!r}")
