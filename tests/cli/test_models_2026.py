"""The preset list names a container format's own element type: Kimi-K3's compressed-tensors
checkpoint (mxfp4-pack-quantized experts, `type: float`, 4 bits) lists as `float4`, as
Kimi-K2.5's lists as `int4`, not as the container's name, which alone held the list past
80 columns."""

from __future__ import annotations

from typer.testing import CliRunner

from llm_inventory.cli.app import app


def _row(name: str, columns: int) -> str:
    env = {"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": str(columns)}
    result = CliRunner(env=env).invoke(app, ["models"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if f" {name} " in line)


def test_a_container_lists_its_element_type() -> None:
    assert "TiB float4" in _row("kimi-k3", 200)
    assert "GiB int4" in _row("kimi-k2.5", 200)
    assert "compressed-tensors" not in _row("kimi-k3", 200)


def test_this_years_presets_fit_80_columns() -> None:
    for name in ("kimi-k3", "qwen3.6-35b-a3b", "nemotron-3-ultra-550b-a55b", "hy3",
                 "laguna-xs.2", "laguna-s-2.1"):
        assert len(_row(name, 80)) <= 80
