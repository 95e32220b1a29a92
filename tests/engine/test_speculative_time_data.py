"""The drafting constants are what `tools/fit_speculative.py` fits on the published runs,
their held-out error is what they say, and `recommend` prices a round as the fit did."""

from __future__ import annotations

import statistics
from types import ModuleType

import pytest

from llm_inventory.engine.recommend import RecommendRequest, recommend
from llm_inventory.engine.recommend.models import Targets, Workload
from llm_inventory.engine.speculative import Speculative, accepted_length
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.draft_timing import default_draft_timing
from llm_inventory.spec.presets import load_preset
from tests.reference import load_tool


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("fit_speculative")


def test_the_packaged_constants_are_the_fit_of_the_fit_rows(tool: ModuleType) -> None:
    refit = tool.fit(tool.rows())
    shipped = default_draft_timing()
    assert refit.round_overhead_s == pytest.approx(shipped.round_overhead_s, rel=1e-9)
    assert refit.step_overhead_s == pytest.approx(shipped.step_overhead_s, rel=1e-9)
    assert refit.fitted_on == shipped.fitted_on and refit.held_out == shipped.held_out
    # a fit row is never a held-out one
    assert not set(shipped.fitted_on) & set(shipped.held_out)


def test_the_quoted_held_out_error_is_what_the_unseen_runs_show(tool: ModuleType) -> None:
    shipped = default_draft_timing()
    held = [r for r in tool.rows() if r.use == "held-out"]
    errors = [r.error(shipped) for r in held]
    assert len(errors) == shipped.held_out_rows == 8
    assert statistics.median(errors) == pytest.approx(shipped.held_out_median, abs=1e-4)
    assert max(errors) == pytest.approx(shipped.held_out_max, abs=1e-4)
    assert max(errors) < 0.35  # the band the labels quote stays meaningful
    assert f"{shipped.held_out_max:.0%}" in _recommend_trust()


def _recommend_trust() -> str:
    result = _eagle3(4, 0.75)[1]
    return result.trust["speculative_time"].basis


def _eagle3(k: int, a: float | None) -> tuple[float, object]:
    asked = None if a is None else Speculative(method="eagle3", num_speculative_tokens=k,
                                               acceptance=a)
    result = recommend(load_preset("llama-3.1-8b"), RecommendRequest(
        model_ref="llama-3.1-8b", devices=[resolve_device("h100")], count=1, tp=1,
        workload=Workload(isl=16, osl=1024, concurrency=1), targets=Targets(),
        speculative=asked))
    assert result.chosen is not None
    return result.chosen.tpot.p50, result


@pytest.mark.parametrize("k", [2, 4, 7])
def test_recommend_prices_a_batch_one_round_as_the_fit_does(tool: ModuleType, k: int) -> None:
    """Through the product path, the TPOT ratio with EAGLE-3 at a run's acceptance length is
    the fit's prediction for that run, and within the held-out band of what it measured."""
    row = next(r for r in tool.rows() if r.method == "eagle3" and r.k == k)
    lo, hi = 0.0, 1.0  # the per-token rate whose acceptance length the run printed
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accepted_length(mid, k) < row.acceptance_length else (lo, mid)
    plain, _ = _eagle3(k, None)
    drafted, _ = _eagle3(k, lo)
    ratio = drafted / plain
    assert ratio == pytest.approx(row.predicted_ratio(default_draft_timing()), rel=0.03)
    assert abs(ratio / row.measured_ratio - 1) <= default_draft_timing().held_out_max
