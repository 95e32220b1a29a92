"""The reserve bands quoted are the ones the committed start-up records give, computed
leave-one-out (in-sample records) or as they are (held-out records); see
`engine/serving/bands.py` and `tests/reserve_records.py`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import all_eras, get
from llm_inventory.engine.serving.bands import BANDS, WIDEN, family, reserve_trust
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset
from tests.reference import DATA
from tests.reserve_records import bands, out_of_sample, p90, points

H100 = resolve_device("h100-sxm")


def _held_out() -> list[dict[str, Any]]:
    """The held-out folder's records and the 2026 records marked held out."""
    newer = json.loads((DATA / "engine-logs-2026" / "records.json").read_text())
    return [*json.loads((DATA / "engine-logs-heldout" / "heldout.json").read_text()),
            *(r for r in newer if r["use"] == "held-out")]


def test_the_shipped_bands_are_the_computed_ones() -> None:
    """Change a record, a replay or the reserve and this fails until bands.py is printed
    anew (`python tools/reserve_bands.py --literal`)."""
    assert bands() == BANDS


def test_every_band_belongs_to_a_reserve_model_of_the_registry() -> None:
    """No stale band; a reserve model with no record at all is an `estimate`."""
    groups = {engine.reserve_group or engine.name for engine in all_eras()}
    assert set(BANDS) <= groups
    for engine in all_eras():
        if (engine.reserve_group or engine.name) not in BANDS:
            assert reserve_trust(engine, H100).kind == "estimate"


def test_leave_one_out_refits_the_offset_on_the_others() -> None:
    group = [p for p in points() if p.group == "sglang"]
    sg01, sg07 = (p for p in group if p.in_sample)
    errors = out_of_sample(group)
    assert errors[0] == pytest.approx(abs(sg01.residual - sg07.residual) / sg01.printed)
    held = next(p for p in group if not p.in_sample)
    assert errors[2] == pytest.approx(abs(held.error))
    assert p90([0.1, 0.2, 0.3]) == 0.3 and p90([i / 100 for i in range(1, 21)]) == 0.18


def test_held_out_records_come_from_the_held_out_folder_alone() -> None:
    """A record counted as it is (held out) must be one no rule was chosen on: only the
    held-out folder's records and the 2026 records marked held out qualify, and the
    held-out folder keeps no record that chose a rule (those live in
    engine-logs/rule-records.json)."""
    held = {r["id"] for r in _held_out()}
    for p in points():
        assert p.why
        assert p.in_sample == (p.record not in held), p
    chose = {r["id"] for r in json.loads((DATA / "engine-logs" / "rule-records.json")
                                         .read_text())}
    assert chose == {"H01", "H02", "H07", "H09", "H10"}
    assert not chose & held


@pytest.mark.parametrize(("engine", "device", "extrapolated"), [
    ("vllm@0.19", "h100-sxm", False),
    ("vllm@0.19", "l40s", True),  # another GPU family
    ("vllm", "h100-sxm", True),  # 0.33: no start-up of that era
    ("vllm@0.30", "rtx-5090", False),  # the 0.30 era, on Blackwell consumer cards
    ("vllm@0.31.0", "a100-80gb", False),
    ("vllm@0.30", "h100-sxm", True),  # no start-up on Hopper since 0.21
    ("vllm@0.32", "rtx-5090", True),  # the era, but no start-up of 0.32
    ("vllm@0.26", "rtx-5090", True),  # the graph-profiling reserve, not that era
    ("vllm@0.12", "h100-sxm", True),  # the 0.19 era, but no start-up of 0.12
    ("vllm@0.19.1", "h100-sxm", False),
    ("vllm@0.7.2", "l40s", False),
    ("vllm@0.10", "l40s", True),  # V0's default release: no record of 0.10
    ("vllm@0.7.2", "mi300x", True),
    ("sglang@0.4.5", "l4", False),
    ("sglang", "h100-sxm", True),
])
def test_the_label_widens_outside_the_coverage(engine: str, device: str,
                                               extrapolated: bool) -> None:
    era = get(engine)
    found = BANDS[era.reserve_group or era.name]
    assert found.band is not None
    trust = reserve_trust(era, resolve_device(device))
    assert trust.kind == "calibrated" and trust.extrapolated is extrapolated
    assert trust.band == pytest.approx(found.band * (WIDEN if extrapolated else 1))
    assert trust.records == found.errors
    assert ("extrapolated" in trust.label()) is extrapolated
    assert f"{found.records} start-ups" in trust.basis


def test_one_in_sample_record_measures_nothing() -> None:
    trust = reserve_trust(get("trtllm"), H100)
    assert trust.kind == "estimate" and trust.band is None
    assert "no start-up it was not fitted on" in trust.basis


def test_placement_quotes_the_band_of_its_engine_and_device() -> None:
    spec = load_preset("llama-3.1-8b")
    for engine, device in (("vllm@0.19", "h100-sxm"), ("vllm@0.7", "a100-80gb"),
                           ("sglang@0.4.5", "rtx-5090")):
        result = plan_placement(spec, PlacementRequest(device=resolve_device(device),
                                                       count=1, engine=engine, limit=1))
        quoted = result.trust["reserve"]
        assert quoted == reserve_trust(get(engine), resolve_device(device))
    assert family(H100) == "nvidia 9.0"
