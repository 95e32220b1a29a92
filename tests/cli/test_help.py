"""Every command has help with an example, and the example runs as written."""

from __future__ import annotations

import os
import re
import shlex

import pytest

from llm_inventory.cli.app import app
from tests.conftest import ROOT, Invoke

COMMANDS = [c.name for c in app.registered_commands if c.name]


def test_every_command_is_registered() -> None:
    assert set(COMMANDS) == {"kv", "inventory", "placement", "recommend", "compare", "models",
                             "devices", "route", "sample", "schema"}


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
