"""The engine is a library: importing it loads no command-line or rendering libraries,
and a JSON run of `inventory kv` does not load Rich."""

from __future__ import annotations

import subprocess
import sys

ENGINE_MODULES = [
    "llm_inventory.engine.checkpoint_compare",
    "llm_inventory.engine.inventory",
    "llm_inventory.engine.placement",
    "llm_inventory.engine.roofline",
    "llm_inventory.engine.timing.serving",
    "llm_inventory.engine.timing.measured",
    "llm_inventory.engine.recommend",
    "llm_inventory.engine.state",
    "llm_inventory.engine.parallel",
    "llm_inventory.engine.routing",
    "llm_inventory.engine.sampling",
    "llm_inventory.units",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout
    return set(out.split())


def test_engine_imports_neither_typer_nor_rich() -> None:
    loaded = _modules_after("; ".join(f"import {m}" for m in ENGINE_MODULES))
    assert not {m for m in loaded if m.split(".")[0] in {"typer", "rich", "click", "yaml"}}


def test_json_output_does_not_load_rich() -> None:
    code = (
        "import contextlib, io\n"
        "from llm_inventory.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['kv', '--layers', '80', '--format', 'json']) == 0\n"
    )
    loaded = _modules_after(code)
    assert "rich" not in loaded
    assert "yaml" not in loaded
