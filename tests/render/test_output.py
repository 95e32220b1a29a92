"""JSON output is `json.dumps(…, indent=2)` byte for byte, whatever the document holds."""

from __future__ import annotations

import json
import math
from enum import IntEnum, StrEnum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.render.output import json_text

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=10), inner, max_size=5),
    ),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(documents)
def test_json_text_is_the_standard_librarys(document: Any) -> None:
    """Byte for byte the standard library's, NaN and infinities written as null (valid
    JSON always: strict parsers refuse the library's NaN and Infinity)."""
    assert json_text(document) == json.dumps(_finite(document), indent=2)
    json.loads(json_text(document), parse_constant=_refuse)


def _finite(value: Any) -> Any:
    """`value` with every NaN and infinity replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _refuse(word: str) -> Any:
    raise AssertionError(f"{word} in JSON output")


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


def test_subclasses_keys_and_specials_match_too() -> None:
    for document in [
        {"colour": Colour.RED, "level": Level.HIGH, "ratio": 0.1 + 0.2, "tiny": 5e-324},
        {1: "an int key", None: "a null key", 2.5: "a float key"},
        {"values": [math.nan, math.inf, -math.inf]},
        {"nested": {"empty": {}, "none": [], "text": "naïve ≤ “quoted” \\ \n"}},
        [], {}, "plain", 7,
    ]:
        assert json_text(document) == json.dumps(_finite(document), indent=2)
