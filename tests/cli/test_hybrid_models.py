"""`kv`, `inventory`, `placement` and `compare` run on every hybrid linear-attention and
Mamba/attention model type, from its reference config file, with exact integers in JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.reference import DATA

# One config per model type (tests/spec/test_hf_hybrid.py holds their reference figures).
CONFIGS = {
    "qwen3_next": "configs-2026/Qwen3-Next-80B-A3B.json",
    "qwen3_5": "configs-2026/Qwen3.5-27B.json",
    "qwen3_5_moe": "configs-2026/Qwen3.5-35B-A3B.json",
    "kimi_linear": "transformers-defaults-2026/kimi_linear.json",
    "lfm2": "hybrid-derived/lfm2-conv-layers.json",
    "nemotron_h": "configs-2026/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json",
    "granitemoehybrid": "hybrid-derived/granitemoehybrid-with-attention.json",
    "falcon_h1": "transformers-defaults-2026/falcon_h1.json",
    "minimax": "transformers-defaults-2026/minimax.json",
}


def _json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_kv_lists_the_fixed_state_with_its_release_rule(model_type: str) -> None:
    out = _json("kv", "--model", str(DATA / CONFIGS[model_type]), "--tokens", "4096")
    fixed = [row for row in out["kinds"] if row["elements_per_token_per_layer"] == 0
             and row["bytes_per_sequence"]]
    assert fixed and all("never partially" in row["release"] for row in fixed)
    assert out["fixed_bytes_per_sequence"] == sum(row["bytes_per_sequence"] for row in fixed)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_inventory_runs(model_type: str) -> None:
    out = _json("inventory", str(DATA / CONFIGS[model_type]), "--context", "8K")
    assert out["parameters"]["total"] > 0


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_placement_pages_the_state_as_vllm_does(model_type: str) -> None:
    out = _json("placement", str(DATA / CONFIGS[model_type]), "--device", "h200",
                "--count", "8", "--context", "2K", "--limit", "3")
    fitting = [plan for plan in out["plans"] if plan["fits"]]
    assert fitting, model_type
    # vLLM's lines on the state page: the block enlarged, or the state page padded, or both.
    assert any("mamba page size" in line for line in fitting[0]["startup"][:2])


def test_compare_runs_on_every_type() -> None:
    out = _json("compare", *(str(DATA / path) for path in CONFIGS.values()))
    assert len(out) == len(CONFIGS)
