"""The installed console command and `python -m llm_inventory`, as a script would run them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

INVENTORY = shutil.which("inventory", path=str(Path(sys.executable).parent)) or shutil.which(
    "inventory"
)
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    assert INVENTORY, "the console command `inventory` is not installed"
    return subprocess.run([INVENTORY, *args], capture_output=True, text=True, env=ENV,
                          timeout=60)


def test_console_command_seed_json() -> None:
    done = run("kv", "--layers", "80", "--tokens", "8000", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["bytes_per_token_per_layer"], data["bytes_per_token"],
            data["total_bytes"]) == (4096, 327_680, 2_621_440_000)


def test_console_command_bad_input() -> None:
    done = run("kv", "--layers", "-1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_module_entry_point() -> None:
    done = subprocess.run([sys.executable, "-m", "llm_inventory", "--version"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("inventory ")


@pytest.mark.parametrize("args", [["kv", "--tp", "3"], ["kv", "--tokens", "lots"], ["nope"]])
def test_errors_stay_off_stdout(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("inventory: error:")


def test_no_arguments_is_a_usage_error_with_help_on_stderr() -> None:
    """As Click >= 8.2 does: help on stderr, exit 2, nothing on stdout."""
    done = run()
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Usage" in done.stderr
    assert "Exit codes" in done.stderr


def test_broken_pipe_is_quiet() -> None:
    assert INVENTORY
    proc = subprocess.run(
        f"'{INVENTORY}' kv --format json | head -c 10", shell=True, capture_output=True,
        text=True, env=ENV, timeout=60,
    )
    assert "Traceback" not in proc.stderr
