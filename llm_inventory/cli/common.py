"""Options every command shares, declared once, and the parsers behind unit-bearing flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from llm_inventory.render.output import OutputFormat, Units
from llm_inventory.units import UnitSystem

T = TypeVar("T")


def _as_bad_parameter(parse: Callable[[str, str], T], field: str) -> Callable[[str], T]:
    """Wrap a units parser so its InputError reaches Typer as the flag's bad value."""

    def parser(text: str) -> T:
        from llm_inventory.errors import InputError

        try:
            return parse(text, field)
        except InputError as exc:
            raise typer.BadParameter(exc.message) from exc

    return parser


def tokens_parser(field: str) -> Callable[[str], int]:
    """`8000`, `8k` (= 8,000), `8K` (= 8,192), `128K`, `1m`, `1M`."""
    from llm_inventory.units import parse_tokens

    return _as_bad_parameter(parse_tokens, field)


def bytes_parser(field: str) -> Callable[[str], int]:
    """`80GiB`, `141GB`, `79.1 GiB` or plain bytes."""
    from llm_inventory.units import parse_bytes

    return _as_bad_parameter(parse_bytes, field)


FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format", "-f", case_sensitive=False,
        help="table for people; json or yaml for scripts (exact integers, stable keys).",
    ),
]
UnitsOption = Annotated[
    Units,
    typer.Option(
        "--units", case_sensitive=False,
        help="Sizes in tables: iec (KiB, MiB, GiB) or si (kB, MB, GB). JSON is always bytes.",
    ),
]


def units_of(value: Units) -> UnitSystem:
    return "si" if value is Units.SI else "iec"
