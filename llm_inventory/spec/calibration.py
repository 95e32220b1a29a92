"""The packaged constants of the calibrated time model (`data/timing-calibration.json`).

Read on first use and cached; the file is written by `tools/fit_timing.py`, which records
what it was fitted on and the error it showed per regime.
"""

from __future__ import annotations

import functools

from llm_inventory.engine.timing.calibration import Calibration

RESOURCE = "timing-calibration.json"


@functools.cache
def default_calibration() -> Calibration:
    """The fitted constants shipped with the package."""
    from importlib.resources import files

    text = files("llm_inventory").joinpath("data", RESOURCE).read_text("utf-8")
    return Calibration.model_validate_json(text)
