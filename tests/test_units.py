"""Parsing and formatting of sizes, token counts and dtype widths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_inventory.errors import InputError
from llm_inventory.units import (
    bytes_for,
    dtype_bits,
    format_bytes,
    normalize_dtype,
    parse_bytes,
    parse_tokens,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GiB", 80 * 2**30),
        ("141GB", 141 * 10**9),
        ("79.1 GiB", round(79.1 * 2**30)),
        ("1234", 1234),
        ("1,234 B", 1234),
        ("320 KiB", 327_680),
        ("0.5 MiB", 524_288),
        ("2tb", 2 * 10**12),
    ],
)
def test_parse_bytes(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8000", 8000),
        ("8k", 8000),
        ("8K", 8192),
        ("128K", 131_072),
        ("1M", 1_048_576),
        ("1m", 1_000_000),
        ("1.5K", 1536),
        ("32_768", 32_768),
    ],
)
def test_parse_tokens(text: str, expected: int) -> None:
    assert parse_tokens(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "-1", "-8k", "nan", "NaN", "inf", "1e9", "8X", "8 k k", "1.5", "0.0005k"]
)
def test_parse_tokens_rejects(text: str) -> None:
    with pytest.raises(InputError):
        parse_tokens(text)


@pytest.mark.parametrize("text", ["", "GiB", "-80GiB", "nan GiB", "inf", "80 GiBs", "1.5", "8 XB"])
def test_parse_bytes_rejects(text: str) -> None:
    with pytest.raises(InputError):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("n", "units", "text"),
    [
        (4096, "iec", "4 KiB"),
        (327_680, "iec", "320 KiB"),
        (2_621_440_000, "iec", "2.44 GiB"),
        (655_360_000, "iec", "625 MiB"),
        (140_000_000_000, "si", "140 GB"),
        (2_621_440_000, "si", "2.62 GB"),
        (999, "iec", "999 B"),
        (1023 * 2**20 + 2**19, "iec", "1 GiB"),
        (0, "iec", "0 B"),
    ],
)
def test_format_bytes(n: int, units: str, text: str) -> None:
    assert format_bytes(n, units) == text  # type: ignore[arg-type]


def test_dtype_widths() -> None:
    expected = {
        "fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "e4m3": 8, "e5m2": 8,
        "int8": 8, "int4": 4, "fp4": 4, "nvfp4": 4, "mxfp4": 4, "bfloat16": 16,
    }
    for name, bits in expected.items():
        assert dtype_bits(name) == bits, name
    with pytest.raises(InputError, match="allowed"):
        normalize_dtype("fp9")


def test_fractional_widths_sum_before_rounding() -> None:
    assert bytes_for(3, "int4") == 2  # 12 bits → 2 bytes, not 3 × 1
    assert bytes_for(4, "int4") == 2
    assert bytes_for(1, "fp4") == 1


@given(st.integers(min_value=0, max_value=2**62))
def test_format_then_parse_is_close(n: int) -> None:
    text = format_bytes(n)
    back = parse_bytes(text)
    assert abs(back - n) <= max(1, n * 0.006)
