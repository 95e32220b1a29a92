"""Quantized weights are labelled as stored, in every command's table and JSON, never as the
dtype of the tensors the scheme leaves alone (DeepSeek-V3 is fp8 block-scaled, gpt-oss MXFP4
experts; `--dtype fp8` quantizes at load)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.conftest import Invoke


def _wide(*args: str) -> str:
    runner = CliRunner(env={"COLUMNS": "240", "NO_COLOR": "1", "TERM": "dumb"})
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(("model", "extra", "method", "words"), [
    ("deepseek-v3", [], "fp8 (block-scaled)", ["fp8 (block-scaled)", "128×128 block scales"]),
    ("gpt-oss-120b", [], "mxfp4", ["mxfp4", "groups of 32"]),
    ("llama-3.1-8b", ["--dtype", "fp8"], "fp8", ["fp8", "quantized at load"]),
])
def test_placement_names_the_stored_scheme(invoke: Invoke, model: str, extra: list[str],
                                           method: str, words: list[str]) -> None:
    args = ["placement", model, "--device", "h200", "--count", "8", *extra]
    data = invoke(*args, "--format", "json").json()
    assert data["weights"]["method"] == method
    heading = _wide(*args, "--limit", "1").splitlines()[0].split(" · ")[2]
    assert heading.startswith("weights "), heading
    assert not heading.startswith("weights bf16"), heading
    for word in words:
        assert word in heading, heading


@pytest.mark.parametrize(("model", "stored"), [
    ("deepseek-v3", "fp8"), ("gpt-oss-120b", "mxfp4"), ("kimi-k2.5", "int4"),
    ("llama-3.1-8b", "bf16"),
])
def test_compare_and_inventory_name_the_stored_scheme(invoke: Invoke, model: str,
                                                      stored: str) -> None:
    table = _wide("compare", model, "llama-3.1-8b")
    row = next(line for line in table.splitlines() if "weight bytes" in line)
    assert re.search(rf"GiB \({re.escape(stored)}\)", row), row
    data = invoke("inventory", model, "--format", "json").json()
    assert data["weights"]["short"] == stored
    heading = next(line for line in _wide("inventory", model).splitlines()
                   if line.startswith("1. Parameter bytes"))
    assert heading == f"1. Parameter bytes ({data['weights']['label']})"
    if stored != "bf16":
        assert not heading.startswith("1. Parameter bytes (bf16")
