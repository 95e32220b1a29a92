"""The packaged constants of speculative drafting's time (`data/speculative-timing.json`).

Read on first use and cached; the file is written by `tools/fit_speculative.py`, which
records the rows it was fitted on and the error it showed on the rows it did not see.
"""

from __future__ import annotations

import functools

from llm_inventory.engine.speculative import DraftTiming

RESOURCE = "speculative-timing.json"


@functools.cache
def default_draft_timing() -> DraftTiming:
    """The fitted drafting constants shipped with the package."""
    from importlib.resources import files

    text = files("llm_inventory").joinpath("data", RESOURCE).read_text("utf-8")
    return DraftTiming.model_validate_json(text)
