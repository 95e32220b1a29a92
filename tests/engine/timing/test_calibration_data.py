"""The time model against the published measurements it was fitted on (and those held out).

Data: tests/data/benchmarks/published-throughput.json (NVIDIA TensorRT-LLM performance
overviews and NIM benchmarks; see that folder's README and SOURCE.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from functools import cache
from pathlib import Path

import pytest

from llm_inventory.engine.timing.measured import (
    MODEL_FAMILIES,
    Measurement,
    Replayed,
    Replayer,
    replay,
)
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.model import ModelSpec

DATA = Path(__file__).resolve().parents[2] / "data" / "benchmarks"
FOLDS = 5


def _spec(family: str) -> ModelSpec | None:
    path = DATA / "models" / f"{family}.json"
    if path.exists():
        return load_model(str(path))
    name = MODEL_FAMILIES.get(family)
    return load_model(name) if name is not None else None


@cache
def _replayer() -> Replayer:
    rows = [Measurement.model_validate(r)
            for r in json.loads((DATA / "published-throughput.json").read_text("utf-8"))]
    return Replayer(rows, _spec, default_calibration())


@cache
def replayed() -> tuple[list[Replayed], int]:
    """Every row under the shipped constants (fitted on all of them)."""
    replayer = _replayer()
    return replayer.replay(default_calibration()), sum(replayer.skipped.values())


@cache
def unseen() -> list[Replayed]:
    """Every row under the constants of the fold that held its group out."""
    found: list[Replayed] = []
    for fold in default_calibration().folds:
        groups = set(fold.held_out_groups)
        for row, setup in _replayer().rows:
            if row.group in groups:
                found += replay(row, setup, fold)
    return found


def _errors(regime: str, figure: str, held: bool, engine: str | None = None) -> list[float]:
    found = unseen() if held else replayed()[0]
    return sorted(r.error for r in found if r.regime == regime and r.figure == figure
                  and (engine is None or r.era == engine))


def test_the_data_is_the_published_copy() -> None:
    # 1,076 rows as published; the copy is byte for byte (its digest pins it)
    text = (DATA / "published-throughput.json").read_bytes()
    assert len(json.loads(text)) == 1076
    assert hashlib.sha256(text).hexdigest()[:12] == DIGEST


DIGEST = "812658e7df64"  # sha256 of the published file, first 12 hex digits


def test_every_row_with_a_model_is_replayed() -> None:
    found, skipped = replayed()
    # GPT-J 6B (24 rows) and Llama 4 Maverick (51) have no model description
    assert skipped == 75
    assert len({r.id for r in found}) >= 990


def _fold(group: str) -> int:
    # the split as tools/fit_timing.py records it (`fold_of`), restated
    return int(hashlib.sha256(group.encode()).hexdigest(), 16) % FOLDS


def test_the_split_is_the_recorded_rule_and_each_fold_never_saw_its_rows() -> None:
    cal = default_calibration()
    assert len(cal.folds) == FOLDS and "grouped five-fold" in cal.split
    groups = {row.group for row, _ in _replayer().rows}
    seen: set[str] = set()
    for k, fold in enumerate(cal.folds):
        held = set(fold.held_out_groups)
        assert held == {g for g in groups if _fold(g) == k}
        assert not held & seen
        seen |= held
        # a fold's device constants count only the rows outside its held-out groups
        counts: dict[str, int] = {}
        for row, setup in _replayer().rows:
            if row.group not in held and setup.profile is not None:
                counts[setup.profile.device.id] = counts.get(setup.profile.device.id, 0) + 1
        assert {d: e.rows for d, e in fold.devices.items()} == counts
    assert seen == groups


@pytest.mark.parametrize(("regime", "figure", "median", "p90"), [
    ("batch 1", "ttft_ms", 0.12, 0.40),
    ("fixed batch", "output_tok_s_per_gpu", 0.15, 0.65),
    ("request rate", "ttft_ms_mean", 0.20, 0.60),
    ("request rate", "itl_ms_mean", 0.15, 0.50),
    ("request rate", "output_tok_s_total", 0.10, 0.50),
    ("offline maximum", "output_tok_s_total", 0.15, 0.45),
])
def test_error_on_the_fitted_rows(regime: str, figure: str, median: float, p90: float) -> None:
    errors = _errors(regime, figure, held=False)
    assert len(errors) >= 40
    assert statistics.median(errors) <= median
    assert errors[math.ceil(0.9 * len(errors)) - 1] <= p90


@pytest.mark.parametrize(("regime", "figure", "median"), [
    ("offline maximum", "output_tok_s_total", 0.30),
    ("offline maximum", "output_tok_s_per_gpu", 0.35),  # post-1.0 edition: DEP, long contexts
    ("request rate", "ttft_ms_mean", 0.30),
    ("concurrency", "ttft_ms", 0.30),  # NIM, closed loop to 250 users
    ("concurrency", "itl_ms", 0.20),
])
def test_error_on_the_held_out_rows(regime: str, figure: str, median: float) -> None:
    errors = _errors(regime, figure, held=True)
    assert errors
    assert statistics.median(errors) <= median


def test_packaged_errors_are_what_the_constants_give() -> None:
    # the error table shipped with the constants (and quoted in the docs) is reproducible:
    # in-sample from the shipped constants, held out from each fold's
    cal = default_calibration()
    assert cal.errors and any(e.held_out for e in cal.errors)
    for e in cal.errors:
        errors = _errors(e.regime, e.figure, e.held_out, e.engine)
        assert len(errors) == e.rows
        assert statistics.median(errors) == pytest.approx(e.median, abs=1e-3)
        assert errors[math.ceil(0.9 * len(errors)) - 1] == pytest.approx(e.p90, abs=1e-3)


def test_the_time_under_load_grows_with_users() -> None:
    # NIM, Llama-3.3-70B on 2 × H100 FP8, 5,000/500 tokens: TTFT 0.55 s at 5 users, 88.6 s
    # at 250 (the pool holds far fewer requests than the users, who queue)
    found, _ = replayed()
    ttft = {r.id: r.predicted for r in found if r.figure == "ttft_ms"
            and r.edition == "nim"}
    assert ttft["NIM-08"] > 20 * ttft["NIM-02"]


@pytest.mark.parametrize("regime", ["offline maximum", "request rate", "batch 1",
                                    "concurrency", "fixed batch"])
def test_the_quoted_band_holds_on_nine_tenths_of_the_unseen_rows(regime: str) -> None:
    """A band is quoted only from rows the fit did not see: at least 90 % of the held-out
    rows of its regime, per engine and figure, stay within it."""
    cal = default_calibration()
    band = cal.band(regime)
    mine = [e for e in cal.errors if e.held_out and e.regime == regime]
    assert mine
    for e in mine:
        errors = _errors(e.regime, e.figure, True, e.engine)
        assert sum(x <= band + 1e-9 for x in errors) >= 0.9 * len(errors)
    assert cal.unseen_rows(regime) == max(e.rows for e in mine)


def test_the_docs_table_is_the_tool_output() -> None:
    """docs/time-model.md quotes `python tools/fit_timing.py --table` as it stands."""
    import importlib.util
    import sys

    tool = Path(__file__).resolve().parents[3] / "tools" / "fit_timing.py"
    spec = importlib.util.spec_from_file_location("fit_timing", tool)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fit_timing"] = module
    spec.loader.exec_module(module)
    docs = (tool.parents[1] / "docs" / "time-model.md").read_text("utf-8")
    assert module.table(default_calibration()) in docs
