"""Commands load on first use: a run imports the invoked command's module and no other."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from llm_inventory.cli import lazy
from llm_inventory.cli.app import app

# Command → the module that implements it (`compare` lives beside `inventory`).
MODULES = {
    "kv": "kv", "inventory": "inventory", "placement": "placement", "recommend": "recommend",
    "compare": "inventory", "sweep": "sweep", "launch": "launch", "check": "check", "pack": "pack",
    "calibrate": "calibrate", "engines": "engines",
    "models": "models", "devices": "devices", "route": "route", "sample": "sample",
    "schema": "schema",
}
COMMAND_MODULES = {f"llm_inventory.cli.{m}" for m in MODULES.values()}


def _loaded_after(argv: list[str] | None) -> tuple[int, set[str]]:
    """Run `inventory ARGV` in a fresh interpreter (None: only import the app): its exit
    code and the modules it loaded."""
    code = (
        "import contextlib, io, json, sys\n"
        "from llm_inventory.cli.app import main\n"
        "sink = io.StringIO()\n"
        "with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):\n"
        f"    status = main({argv!r}) if {argv!r} is not None else 0\n"
        "print(json.dumps([status, sorted(sys.modules)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    status, modules = json.loads(out)
    return status, set(modules)


def test_the_registration_covers_every_command() -> None:
    assert [c.name for c in app.registered_commands] == list(MODULES)


def test_importing_the_app_loads_no_command() -> None:
    _, loaded = _loaded_after(None)
    assert not loaded & COMMAND_MODULES
    assert not {m for m in loaded if m.split(".")[0] in {"pydantic", "rich", "yaml"}}


@pytest.mark.parametrize("command", list(MODULES))
def test_a_command_loads_its_own_module_only(command: str) -> None:
    status, loaded = _loaded_after([command, "--help"])
    assert status == 0
    assert loaded & COMMAND_MODULES == {f"llm_inventory.cli.{MODULES[command]}"}


def test_root_help_loads_every_command_for_its_summary() -> None:
    status, loaded = _loaded_after(["--help"])
    assert status == 0
    assert COMMAND_MODULES <= loaded


def test_the_group_builds_a_command_when_looked_up() -> None:
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    assert isinstance(group.commands, lazy.LazyCommands)
    assert group.commands.loaded() == []
    assert "kv" in group.commands and group.commands.loaded() == []  # membership loads nothing
    kv = group.commands["kv"]
    assert group.commands.loaded() == ["kv"]
    assert kv is group.commands["kv"]  # built once
    assert "--tokens" in {opt for param in kv.params for opt in param.opts}
    assert kv.help and "Example: inventory kv" in kv.help


def test_kv_json_from_flags_loads_no_pydantic_and_only_the_kind_it_sizes() -> None:
    status, loaded = _loaded_after(["kv", "--layers", "61", "--latent", "576", "--tp", "8",
                                    "--format", "json"])
    assert status == 0
    tops = {m.split(".")[0] for m in loaded}
    assert not tops & {"pydantic", "pydantic_core", "rich", "yaml"}
    ours = {m for m in loaded if m.startswith("llm_inventory.engine")}
    assert ours == {"llm_inventory.engine", "llm_inventory.engine.kinds",
                    "llm_inventory.engine.kinds.uniform", "llm_inventory.engine.parallel",
                    # the MLA kind's own rules, and the attention rules they share
                    "llm_inventory.engine.kinds.mla", "llm_inventory.engine.kinds.attention",
                    "llm_inventory.engine.kinds.base", "llm_inventory.engine.blocks"}
    assert "llm_inventory.spec.model" not in loaded


def test_kv_yaml_loads_yaml_but_not_pydantic() -> None:
    status, loaded = _loaded_after(["kv", "--layers", "80", "--format", "yaml"])
    assert status == 0
    tops = {m.split(".")[0] for m in loaded}
    assert "yaml" in tops
    assert not tops & {"pydantic", "rich"}


def test_placement_json_loads_no_rich() -> None:
    status, loaded = _loaded_after(["placement", "llama-3.1-8b", "--device", "h100",
                                    "--format", "json"])
    assert status == 0
    assert not {m for m in loaded if m.split(".")[0] == "rich"}
    assert loaded & COMMAND_MODULES == {"llm_inventory.cli.placement"}
    # The routing simulator's models are not built: a search needs `engine/experts.py` only.
    assert "llm_inventory.engine.routing" not in loaded


def test_kv_table_from_flags_loads_neither_rich_nor_pydantic() -> None:
    status, loaded = _loaded_after(["kv", "--layers", "80", "--tokens", "8000", "--tp", "16"])
    assert status == 0
    tops = {m.split(".")[0] for m in loaded}
    assert not tops & {"pydantic", "pydantic_core", "rich", "yaml"}
    assert "llm_inventory.render.plain" in loaded
