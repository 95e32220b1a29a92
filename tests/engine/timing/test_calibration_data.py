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
)
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.model import ModelSpec

DATA = Path(__file__).resolve().parents[2] / "data" / "benchmarks"
HELD_OUT = {"post-1.0", "nim"}


def _spec(family: str) -> ModelSpec | None:
    path = DATA / "models" / f"{family}.json"
    if path.exists():
        return load_model(str(path))
    name = MODEL_FAMILIES.get(family)
    return load_model(name) if name is not None else None


@cache
def replayed() -> tuple[list[Replayed], int]:
    rows = [Measurement.model_validate(r)
            for r in json.loads((DATA / "published-throughput.json").read_text("utf-8"))]
    replayer = Replayer(rows, _spec, default_calibration())
    return replayer.replay(default_calibration()), sum(replayer.skipped.values())


def _errors(regime: str, figure: str, held: bool) -> list[float]:
    found, _ = replayed()
    return sorted(r.error for r in found if r.regime == regime and r.figure == figure
                  and (r.edition in HELD_OUT) == held)


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


@pytest.mark.parametrize(("regime", "figure", "median", "p90"), [
    ("batch 1", "ttft_ms", 0.08, 0.35),
    ("fixed batch", "output_tok_s_per_gpu", 0.12, 0.65),
    ("request rate", "ttft_ms_mean", 0.15, 0.55),
    ("request rate", "itl_ms_mean", 0.12, 0.50),
    ("request rate", "output_tok_s_total", 0.10, 0.50),
    ("offline maximum", "output_tok_s_total", 0.15, 0.45),
])
def test_error_on_the_fitted_rows(regime: str, figure: str, median: float, p90: float) -> None:
    errors = _errors(regime, figure, held=False)
    assert len(errors) >= 40
    assert statistics.median(errors) <= median
    assert errors[math.ceil(0.9 * len(errors)) - 1] <= p90


@pytest.mark.parametrize(("regime", "figure", "median"), [
    ("offline maximum", "output_tok_s_per_gpu", 0.30),  # post-1.0 edition: DEP, long contexts
    ("concurrency", "ttft_ms", 0.25),  # NIM, closed loop to 250 users
    ("concurrency", "itl_ms", 0.15),
])
def test_error_on_the_held_out_rows(regime: str, figure: str, median: float) -> None:
    errors = _errors(regime, figure, held=True)
    assert errors
    assert statistics.median(errors) <= median


def test_packaged_errors_are_what_the_constants_give() -> None:
    # the error table shipped with the constants (and quoted in the docs) is reproducible
    cal = default_calibration()
    assert cal.errors
    for e in cal.errors:
        errors = _errors(e.regime, e.figure, e.held_out)
        assert len(errors) == e.rows
        assert statistics.median(errors) == pytest.approx(e.median, abs=1e-3)


def test_the_time_under_load_grows_with_users() -> None:
    # NIM, Llama-3.3-70B on 2 × H100 FP8, 5,000/500 tokens: TTFT 0.55 s at 5 users, 88.6 s
    # at 250 (the pool holds far fewer requests than the users, who queue)
    found, _ = replayed()
    ttft = {r.id: r.predicted for r in found if r.figure == "ttft_ms"
            and r.edition == "nim"}
    assert ttft["NIM-08"] > 20 * ttft["NIM-02"]


@pytest.mark.parametrize("regime", ["offline maximum", "request rate", "batch 1"])
def test_the_quoted_band_holds_on_nine_tenths_of_the_unseen_rows(regime: str) -> None:
    """A band is quoted only from rows the fit did not see: at least 90 % of the held-out
    rows it is measured on (the regime's own, or every regime's when it has none) stay
    within it, and its p90 is the one shipped."""
    cal = default_calibration()
    band = cal.band(regime)
    for e in cal.held_out(regime):
        errors = _errors(e.regime, e.figure, held=True)
        assert errors[math.ceil(0.9 * len(errors)) - 1] == pytest.approx(e.p90, abs=1e-3)
        assert sum(x <= band + 1e-9 for x in errors) >= 0.9 * len(errors)
    assert cal.unseen_rows(regime) == max(e.rows for e in cal.held_out(regime))
