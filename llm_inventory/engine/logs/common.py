"""What every dialect reader shares: numbers as printed, figures by rank, settings."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation

from llm_inventory.engine.logs import Check, Figure, LogLine, StartupLog
from llm_inventory.units import GIB, MIB

# What one printed unit is in base units. SGLang prints GiB and says "GB"; vLLM V0 prints
# "GB" for GiB in "Loading model weights took"; TensorRT-LLM's "MB" are MiB (its own
# converter divides by 2^20). Decimal GB appear in none of these engines' start-up lines.
UNITS: dict[str, int] = {"GiB": GIB, "GB": GIB, "MiB": MIB, "MB": MIB, "bytes": 1,
                         "tokens": 1, "blocks": 1, "cells": 1, "layers": 1, "x": 1}

_RANK_NUMBER = re.compile(r"(\d+)")
# A printed number: digits with thousands commas (never a trailing one) and decimals.
NUMBER = r"(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)"


def figure(key: str, text: str, unit: str, line: LogLine) -> Figure:
    """A printed number (commas allowed) read into a Figure with its rounding bound."""
    cleaned = text.replace(",", "")
    try:
        exact = Decimal(cleaned)
    except InvalidOperation:  # the patterns admit digits only; kept for safety
        exact = Decimal(0)
    exponent = exact.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    scale = UNITS[unit]
    value = float(exact)
    base: int | float = value if unit == "x" else round(value * scale)
    if unit in ("tokens", "blocks", "cells", "layers", "bytes"):
        base = int(exact)
    counted = unit in ("tokens", "blocks", "cells", "layers", "bytes")
    resolution = 0.5 * 10 ** -places * scale if places else (0 if counted else 0.5 * scale)
    return Figure(key=key, printed=text, unit=unit, value=value, base=base,
                  resolution=resolution, line=line.number, rank=line.rank)


def rank_order(rank: str) -> tuple[int, int, str]:
    """The order ranks are preferred in: none or rank 0 first (the engine's own report)."""
    numbers = [int(n) for n in _RANK_NUMBER.findall(rank)]
    return (0 if not rank else 1, sum(numbers), rank)


Pattern = tuple[re.Pattern[str], Sequence[tuple[str, str]]]  # regex, (key, unit) per group


def collect(lines: Sequence[LogLine], patterns: Iterable[Pattern]) -> list[Figure]:
    """Every pattern's figures, one per key: the preferred rank's first print of it."""
    found: dict[str, list[Figure]] = {}
    patterns = list(patterns)
    for line in lines:
        for regex, groups in patterns:
            match = regex.search(line.text)
            if not match:
                continue
            for index, (key, unit) in enumerate(groups, 1):
                text = match.group(index)
                if not key or text is None:
                    continue
                unit_text = unit
                if unit.startswith("@"):  # the unit is printed in the named group
                    unit_text = match.group(int(unit[1:]))
                found.setdefault(key, []).append(figure(key, text, unit_text, line))
    chosen = [min(prints, key=lambda f: (rank_order(f.rank), f.line))
              for prints in found.values()]
    return sorted(chosen, key=lambda f: f.line)


def ranks(lines: Sequence[LogLine]) -> list[str]:
    return sorted({line.rank for line in lines if line.rank}, key=rank_order)


def first(lines: Sequence[LogLine], regex: re.Pattern[str]) -> re.Match[str] | None:
    for line in lines:
        match = regex.search(line.text)
        if match:
            return match
    return None


def count(lines: Sequence[LogLine], regexes: Iterable[re.Pattern[str]]) -> int:
    regexes = list(regexes)
    return sum(1 for line in lines for regex in regexes if regex.search(line.text))


_DTYPE = {"torch.bfloat16": "bf16", "bfloat16": "bf16", "torch.float16": "fp16",
          "float16": "fp16", "half": "fp16", "torch.float32": "fp32", "float32": "fp32",
          "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "f16": "fp16", "bf16": "bf16",
          "f32": "fp32", "q8_0": "q8_0", "q4_0": "q4_0"}


def dtype(text: str | None) -> str | None:
    """A printed dtype in the tool's words (None for auto or unknown)."""
    if text is None:
        return None
    return _DTYPE.get(text.strip().strip("'\"").lower())


def check(log: StartupLog, key: str, formula: str, inputs: Sequence[str],
          compute: Callable[[list[Figure]], float], exact_inputs: Sequence[float] = ()
          ) -> Check | None:
    """Recompute figure `key` from figures `inputs` (None when any is missing): `compute`
    gets them in order and returns base units; it holds within the sum of the inputs'
    rounding (each scaled by `exact_inputs`' factor, 1 by default) and the target's."""
    target = log.figure(key)
    found = [log.figure(name) for name in inputs]
    if target is None or any(f is None for f in found):
        return None
    figures = [f for f in found if f is not None]
    derived = compute(figures)
    factors = list(exact_inputs) or [1.0] * len(figures)
    slack = target.resolution + sum(abs(k) * f.resolution for k, f in
                                    zip(factors, figures, strict=False))
    holds = abs(derived - float(target.base)) <= slack + 1e-9 * max(1.0, abs(derived))
    return Check(key=key, printed=f"{target.printed} {target.unit}",
                 derived=f"{_as_printed(derived, target)} {target.unit}", formula=formula,
                 holds=holds, line=target.line)


def _as_printed(base: float, like: Figure) -> str:
    """`base` in `like`'s unit with as many decimals as `like` was printed with."""
    value = base / UNITS[like.unit] if like.unit != "x" else base
    places = len(like.printed.partition(".")[2])
    text = f"{value:,.{places}f}" if "," in like.printed else f"{value:.{places}f}"
    return text


def kept(*found: Check | None) -> list[Check]:
    return [c for c in found if c is not None]
