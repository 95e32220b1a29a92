"""Every band the README quotes is the one the committed records give (reserve bands from
`engine/serving/bands.py`, recomputed by tests/engine/serving/test_reserve_bands.py; time
bands from the calibration's held-out rows)."""

from __future__ import annotations

import re
from pathlib import Path

from llm_inventory.engine.serving.bands import BANDS, WIDEN
from llm_inventory.engine.trust import percent
from llm_inventory.spec.calibration import default_calibration

README = Path(__file__).resolve().parents[1] / "README.md"


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in README.read_text().splitlines():
        m = re.match(r"\s*\| `([a-z0-9-]+)` \|(.*)\|\s*$", line)
        if m:
            rows[m[1]] = [cell.strip() for cell in m[2].split("|")]
    return rows


def test_the_reserve_table_is_the_computed_one() -> None:
    rows = _rows()
    assert set(rows) == set(BANDS)
    for name, band in BANDS.items():
        _, records, errors, quoted, devices, releases = rows[name]
        assert records == f"{band.records} ({band.in_sample})"
        assert errors == str(band.errors)
        assert quoted == (percent(band.band) if band.band is not None else "none: `estimate`")
        assert devices == ", ".join(band.devices)
        assert releases == ", ".join(band.releases)


def test_the_prose_quotes_the_computed_bands() -> None:
    text = " ".join(README.read_text().split())
    vllm = BANDS["vllm"].band
    assert vllm is not None
    assert f"within ±{vllm * 100:.1f} % (p90 of the {BANDS['vllm'].errors} leave-one-out" in text
    graphs = BANDS["vllm-graphs"]
    assert graphs.band is not None and not graphs.in_sample
    assert (f"within ±{graphs.band * 100:.0f} % of what vLLM printed (p90 of "
            f"{graphs.errors};") in text
    assert f"doubles that band (±{graphs.band * WIDEN * 100:.0f} %)" in text
    # the recommend example runs vLLM: its own constants' band (none of its rows was taken at
    # a request rate, so the worst of its regimes)
    cal = default_calibration().for_engine("vllm")
    assert cal.engines == ["vllm"]
    assert f"band (±{cal.band('request rate') * 100:.0f} %) is the worst p90 error of those " \
           "runs' regimes on the runs the fit did not see" in text
    assert "0.7 % of what vLLM printed" not in text
