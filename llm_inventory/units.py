"""Units: parsing sizes and token counts, formatting bytes, and data-type widths.

Every figure inside the tool is an exact integer in base units (bytes, tokens, parameters).
Humanising happens only at the edges: `parse_*` on input, `format_*` on output.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Literal

from llm_inventory.errors import InputError, excerpt

UnitSystem = Literal["iec", "si"]

MIB = 2**20  # bytes in a MiB
GIB = 2**30  # bytes in a GiB

IEC_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
SI_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")

_SIZE_FACTORS: dict[str, int] = {
    "": 1,
    "b": 1,
    "kib": 2**10,
    "mib": MIB,
    "gib": GIB,
    "tib": 2**40,
    "pib": 2**50,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "pb": 10**15,
}

# Token-count suffixes follow vLLM's convention: lower case is decimal, upper case binary.
_TOKEN_FACTORS: dict[str, int] = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "K": 2**10,
    "M": 2**20,
    "G": 2**30,
}

_NUMBER = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


def _split_number(text: str, field: str, what: str) -> tuple[Decimal, str]:
    from llm_inventory.bounds import NUMBER_TEXT

    if len(text) > NUMBER_TEXT:
        raise InputError(field, f"expected {what} (at most {NUMBER_TEXT} characters), got "
                         f"{excerpt(text)}")
    match = _NUMBER.match(text)
    if match is None:
        raise InputError(field, f"expected {what}, got {excerpt(text)}")
    digits, suffix = match.groups()
    try:
        value = Decimal(digits.replace("_", "").replace(",", ""))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only digits
        raise InputError(field, f"expected {what}, got {text!r}") from exc
    return value, suffix


def parse_bytes(text: str | int, field: str = "size") -> int:
    """Parse a byte size: plain bytes or a number with an SI (`GB`) or IEC (`GiB`) unit.

    `80GiB` → 85,899,345,920; `141GB` → 141,000,000,000; `79.1 GiB` rounds to the nearest
    byte. Negative, non-finite and unit-less fractional values are refused, and so are sizes
    past bounds.SIZE (16 EiB).
    """
    from llm_inventory.bounds import SIZE

    if isinstance(text, int):
        if text < 0:
            raise InputError(field, f"must not be negative, got {excerpt(text)}")
        return SIZE.check(field, text)
    value, suffix = _split_number(
        text, field, "a size such as 80GiB, 141GB or a number of bytes"
    )
    factor = _SIZE_FACTORS.get(suffix.lower())
    if factor is None:
        raise InputError(
            field,
            f"unknown unit {excerpt(suffix)} in {excerpt(text)}; use B, KiB, MiB, GiB, TiB "
            "(binary) or kB, MB, GB, TB (decimal)",
        )
    result = value * factor
    if factor == 1 and result != result.to_integral_value():
        raise InputError(field, f"a byte count must be a whole number, got {text!r}")
    return SIZE.check(field, int(result.to_integral_value()))


def parse_tokens(text: str | int, field: str = "tokens") -> int:
    """Parse a token count: `8000`, `8k` (8,000), `8K` (8,192), `128K`, `1m`, `1M`.

    Lower-case suffixes are decimal and upper-case binary, as vLLM reads them.
    The result must be a whole number of tokens, at most bounds.TOKENS.
    """
    from llm_inventory.bounds import TOKENS

    if isinstance(text, int):
        if text < 0:
            raise InputError(field, f"must not be negative, got {excerpt(text)}")
        return TOKENS.check(field, text)
    value, suffix = _split_number(text, field, "a token count such as 8000, 8k or 128K")
    factor = _TOKEN_FACTORS.get(suffix)
    if factor is None:
        raise InputError(
            field,
            f"unknown suffix {excerpt(suffix)} in {excerpt(text)}; use k/m (decimal) or K/M "
            "(binary)",
        )
    result = value * factor
    if result != result.to_integral_value():
        raise InputError(field, f"must be a whole number of tokens, got {text!r}")
    return TOKENS.check(field, int(result))


def parse_seconds(text: str | float | int, field: str) -> float:
    """A time in seconds: `2`, `0.5`, `2s`, `500ms` (or a number); positive, finite and at
    most a day, else InputError naming `field`."""
    import re

    allowed = f"expected a positive time such as 2s, 500ms or 0.5, got {excerpt(text)}"
    if isinstance(text, bool):
        raise InputError(field, allowed)
    if isinstance(text, int | float):
        seconds, unit = float(text), "s"
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s)?\s*",
                             text[:41], re.IGNORECASE)
        if match is None or len(text) > 40:
            raise InputError(field, allowed)
        seconds, unit = float(match[1]), (match[2] or "s").lower()
    if not math.isfinite(seconds) or seconds <= 0 or seconds > 86_400:
        raise InputError(field, allowed + " (at most a day)")
    return seconds / 1000 if unit == "ms" else seconds


def parse_fraction(text: str, field: str, *, low: float = 0.0, high: float = 1.0) -> float:
    """Parse a finite number in (low, high]."""
    try:
        value = float(text)
    except ValueError as exc:
        raise InputError(field, f"expected a number, got {excerpt(text)}") from exc
    if not math.isfinite(value) or not low < value <= high:
        raise InputError(field, f"must be a number in ({low:g}, {high:g}], got {excerpt(text)}")
    return value


def _significant(value: float) -> str:
    """Three significant figures, trailing zeros dropped: 2.44, 320, 625, 1.5."""
    if value >= 100:
        text = f"{value:.0f}"
    elif value >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_bytes(n: int | float, units: UnitSystem = "iec") -> str:
    """Human size: `320 KiB`, `2.44 GiB`, `625 MiB` (IEC) or `2.62 GB` (SI)."""
    base, names = (1024, IEC_UNITS) if units == "iec" else (1000, SI_UNITS)
    sign = "-" if n < 0 else ""
    value = float(abs(n))
    index = 0
    while value >= base and index < len(names) - 1:
        value /= base
        index += 1
    if index == 0:
        return f"{sign}{int(abs(n)):,} B" if float(n).is_integer() else f"{sign}{value:.2f} B"
    text = _significant(value)
    if text == str(base) and index < len(names) - 1:  # rounding carried a unit up
        text, index = "1", index + 1
    return f"{sign}{text} {names[index]}"


def format_count(n: int | float) -> str:
    """Human count: `70.6 B`, `14.0 B`, `671 B`, `37.6 M` (billions, millions …)."""
    value = float(n)
    for scale, name in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{_significant(value / scale)} {name}"
    return f"{int(value):,}" if value.is_integer() else f"{value:.3g}"


# --- data types -------------------------------------------------------------------------

DTYPE_BITS: dict[str, int] = {
    "fp32": 32,
    "fp16": 16,
    "bf16": 16,
    "fp8": 8,
    "fp8_e4m3": 8,
    "fp8_e5m2": 8,
    "int8": 8,
    "int4": 4,
    "fp4": 4,
    "nvfp4": 4,
    "mxfp4": 4,
}

DTYPE_ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "bfloat16": "bf16",
    "e4m3": "fp8_e4m3",
    "fp8e4m3": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "fp8e5m2": "fp8_e5m2",
    "float8_e5m2": "fp8_e5m2",
    "uint8": "int8",
    "i8": "int8",
    "i4": "int4",
    "uint4": "int4",
}


def normalize_dtype(name: str, field: str = "dtype") -> str:
    """Canonical dtype name (`bfloat16` → `bf16`); InputError listing the allowed names."""
    key = name.strip().lower().replace("-", "_")
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        allowed = ", ".join(DTYPE_BITS)
        raise InputError(field, f"unknown dtype {excerpt(name)}; allowed: {allowed}")
    return key


def dtype_bits(name: str) -> int:
    """Width of one element in bits."""
    return DTYPE_BITS[normalize_dtype(name)]


NVFP4_GROUP = 16  # NVFP4 values per e4m3 scale


def bytes_for(elements: int, dtype: str) -> int:
    """Bytes that `elements` values of `dtype` occupy: bits summed, then rounded up; NVFP4
    stored as a cache keeps one e4m3 scale a 16 values beside the e2m1 values (vLLM's
    packed nvfp4 KV: head_size ÷ 2 + head_size ÷ 16 bytes a head)."""
    if dtype == "nvfp4":
        return -(-elements // 2) + -(-elements // NVFP4_GROUP)
    return -(-elements * dtype_bits(dtype) // 8)
