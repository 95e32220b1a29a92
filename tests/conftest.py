"""Shared fixtures: one CLI runner, and where the shared reference data lives."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


Invoke = Callable[..., Run]


@pytest.fixture
def invoke() -> Invoke:
    """Run `inventory ARGS…` in process; tables at a pinned width, no colour."""
    runner = CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})

    def run(*args: str) -> Run:
        result = runner.invoke(app, list(args), catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own configuration directory: `calibrate` writes its profile
    there and `launch` reads it, never the user's."""
    monkeypatch.setenv("LLM_INVENTORY_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))


def pytest_report_header() -> str:
    """The fuzz seed in every report's header (a failing CI run's too): tests/fuzz."""
    from tests.fuzz.harness import REPRODUCE

    return REPRODUCE
