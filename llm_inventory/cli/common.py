"""Options every command shares, declared once, and the parsers behind unit-bearing flags."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from llm_inventory.cli import complete
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
TpOption = Annotated[int | None, typer.Option(min=1, help="Pin tensor parallelism.")]
PpOption = Annotated[int | None, typer.Option(min=1, help="Pin pipeline parallelism.")]
EpOption = Annotated[int | None, typer.Option(min=1, help="Pin expert parallelism.")]
ReportOption = Annotated[
    Path | None,
    typer.Option(
        "--report", metavar="FILE.html",
        help="Also write a self-contained HTML report (no network; readable on a phone).",
    ),
]
ProfileOption = Annotated[
    Path | None,
    typer.Option(
        "--profile", metavar="FILE",
        help="The calibration profile to apply (default: the local one).",
    ),
]
NoLocalCalibrationOption = Annotated[
    bool,
    typer.Option(
        "--no-local-calibration",
        help="Ignore the calibration profile learned by `inventory calibrate`.",
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


def parse_image_size(text: str | None) -> tuple[int, int] | None:
    """`448x448`, `448×448` or `448` (square), in pixels; None passes through."""
    import re

    from llm_inventory.bounds import NUMBER_TEXT, PIXELS
    from llm_inventory.errors import InputError, excerpt

    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9]{1,20})\s*(?:[x×X]\s*([0-9]{1,20}))?\s*", text[:NUMBER_TEXT])
    if match is None or len(text) > NUMBER_TEXT:
        raise InputError("image_size", f"expected WIDTHxHEIGHT or a side in pixels, got "
                         f"{excerpt(text)}")
    width = PIXELS.check("image_size", int(match[1]))
    height = PIXELS.check("image_size", int(match[2] or match[1]))
    return width, height


ContextOption = Annotated[
    int,
    typer.Option(
        "--context", "--max-model-len", parser=tokens_parser("context"), metavar="TOKENS",
        help="Positions per sequence (text + media): 8000, 8k, 32K …",
    ),
]
DtypeOption = Annotated[
    str | None,
    typer.Option(
        "--dtype", autocompletion=complete.dtypes,
        help="Serve weights at this dtype (bf16, fp16, fp32; fp8/int8/int4 quantize matmul "
             "weights as an engine would). Default: the checkpoint as stored.",
    ),
]
KvDtypeOption = Annotated[
    str | None,
    typer.Option("--kv-dtype", autocompletion=complete.dtypes,
                 help="KV cache dtype (default: the model's dtype)."),
]
# `--dtype` is the weight dtype (vLLM's spelling). Where a command has no weights it once meant
# something else (the cache in `kv`, the hidden states in `route`); kept as an alias it would
# give one flag two meanings, so it is refused with the flag to use instead.
WeightDtypeRefused = Annotated[str | None, typer.Option("--dtype", hidden=True)]


def refuse_weight_dtype(value: str | None, command: str, instead: str, what: str) -> None:
    """Bad input when `--dtype` is given to a command that has no weight dtype."""
    if value is not None:
        from llm_inventory.errors import InputError

        raise InputError("dtype", f"is the weight dtype in inventory, placement and compare; "
                         f"{command} has no weights: use {instead} {value} for {what}")

ImagesOption = Annotated[int, typer.Option(min=0, help="Media items per request (images, clips).")]
ImageSizeOption = Annotated[
    str | None,
    typer.Option("--image-size", metavar="WxH",
                 help="Image size in pixels, e.g. 448x448 (default: the encoder's)."),
]
PatchOption = Annotated[int | None, typer.Option("--patch", min=1, help="Patch size, px.")]
MergeOption = Annotated[
    int | None, typer.Option(min=1, help="Spatial merge: m × m patches become one token.")
]
FramesOption = Annotated[int, typer.Option(min=1, help="Video frames per item.")]
TemporalOption = Annotated[
    int | None, typer.Option("--temporal-patch", min=1, help="Frames folded into one patch.")
]
