"""recommend's work grows with the distinct lengths of the workload, not with its sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.recommend import core
from tests.conftest import Invoke

BINS = [(128, 64, 1), (512, 128, 2), (1024, 256, 3), (2048, 256, 2), (4096, 512, 1),
        (8192, 512, 1), (16000, 1024, 0.5), (32000, 2048, 0.2)]


def test_each_distinct_prompt_length_is_timed_once_per_point(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight ordinary bins, 200 draws: the first-token time is computed per distinct length
    (8 per point), not per draw (200 per point) — the 20-second recommend."""
    lengths = tmp_path / "lengths.yaml"
    lengths.write_text("".join(f"- {{isl: {i}, osl: {o}, weight: {w}}}\n" for i, o, w in BINS))
    calls = {"spread": 0, "first": 0}
    spread, first = core.Evaluator._spread, core._first_token

    def count_spread(*args: Any, **kwargs: Any) -> Any:
        calls["spread"] += 1
        return spread(*args, **kwargs)

    def count_first(*args: Any, **kwargs: Any) -> Any:
        calls["first"] += 1
        return first(*args, **kwargs)

    monkeypatch.setattr(core.Evaluator, "_spread", count_spread)
    monkeypatch.setattr(core, "_first_token", count_first)
    run = invoke("recommend", "deepseek-v2-lite", "--device", "gb200", "--lengths",
                 str(lengths), "--qps", "5", "--format", "json")
    assert run.code == 0, run.stderr
    assert calls["spread"] > 100
    assert calls["first"] <= len(BINS) * calls["spread"]
