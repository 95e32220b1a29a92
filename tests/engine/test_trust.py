"""The trust labels of the output contract: what each says, and the keys JSON keeps."""

from __future__ import annotations

from llm_inventory.engine.trust import (
    MARKS,
    Trust,
    bound,
    calibrated,
    engine_rule,
    estimate,
    exact,
    on_your_log,
    percent,
)


def test_every_kind_of_the_contract_has_a_mark() -> None:
    kinds = set(Trust.model_fields["kind"].annotation.__args__)  # type: ignore[union-attr]
    assert kinds == {"exact", "engine rule", "calibrated", "calibrated on your log",
                     "estimate", "bound"}
    assert set(MARKS) == kinds


def test_a_calibrated_label_carries_band_count_and_coverage() -> None:
    t = calibrated(0.0027, "fitted", records=30, coverage="H100 80GB; 0.19.0")
    assert t.label() == "calibrated (±0.3%, 30 unseen)"
    assert t.model_dump() == {"kind": "calibrated", "band": 0.0027, "basis": "fitted",
                              "records": 30, "coverage": "H100 80GB; 0.19.0",
                              "extrapolated": False}
    wide = calibrated(0.35, "fitted", records=3, extrapolated=True)
    assert wide.label() == "calibrated, extrapolated (±35%, 3 unseen)"


def test_no_band_is_no_calibration() -> None:
    assert calibrated(None, "one start-up").kind == "estimate"
    assert estimate("generic").label() == "estimate"


def test_other_labels_keep_their_three_keys() -> None:
    for t in (exact("x"), engine_rule("x"), estimate("x"), bound("x")):
        assert set(t.model_dump()) == {"kind", "band", "basis"}
    assert bound("x").label() == "bound"


def test_a_profile_from_the_users_log_says_so() -> None:
    t = on_your_log(0.01, "vllm.log, 2026-12-04")
    assert t.label() == "calibrated on your log (±1.0%)"
    assert percent(0.68) == "±68%" and percent(0.094) == "±9.4%"
