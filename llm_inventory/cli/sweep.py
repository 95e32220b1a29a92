"""`inventory sweep MODEL -d DEV -n N --context 8K,32K --concurrency 1,8,64`: the envelope."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import ReportOption

if TYPE_CHECKING:
    from llm_inventory.engine.sweep import SweepResult


class SweepFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"
    CSV = "csv"


def _listed(text: str, field: str, limit: int = 64) -> list[str]:
    from llm_inventory.errors import InputError

    items = [part.strip() for part in text.split(",")]
    if not all(items):
        raise InputError(field, f"expected values separated by commas, got {text[:60]!r}")
    if len(items) > limit:
        raise InputError(field, f"{len(items):,} values; a sweep takes at most {limit} each")
    if len(set(items)) != len(items):
        raise InputError(field, "a value is listed twice")
    return items


def _tokens(text: str, field: str) -> list[int]:
    from llm_inventory.units import parse_tokens

    return [parse_tokens(item, field) for item in _listed(text, field)]


def _counts(text: str, field: str) -> list[int]:
    from llm_inventory.bounds import SEQUENCES
    from llm_inventory.errors import InputError

    found = []
    for item in _listed(text, field):
        if not item.isdigit() or len(item) > 12 or int(item) < 1:
            raise InputError(field, f"expected whole numbers from 1, got {item[:20]!r}")
        found.append(SEQUENCES.check(field, int(item)))
    return found


def csv_text(result: SweepResult) -> str:
    """One row per cell, the JSON's keys as columns (launch lines joined by ` ; `, trust
    as `group=label` pairs)."""
    import csv
    import io

    out = io.StringIO()
    from llm_inventory.engine.sweep import SweepCell

    fields = list(SweepCell.model_fields)
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for cell in result.cells:
        row = cell.model_dump(mode="json")
        row["launch"] = " ; ".join(cell.launch)
        row["trust"] = "; ".join(f"{g}={t.label()}" for g, t in cell.trust.items())
        writer.writerow(row)
    return out.getvalue()


def sweep(
    model: Annotated[str, typer.Argument(
        metavar="MODEL", autocompletion=complete.models,
        help="Preset, Hugging Face id, YAML model file, config.json, folder or GGUF file.")],
    device: Annotated[str, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Device id or alias (`inventory devices`).")],
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="Devices available (default: one node).")] = None,
    context: Annotated[str, typer.Option(
        "--context", metavar="TOKENS,…",
        help="Contexts to try: 8K,32K,128K,1M (k decimal, K binary).")] = "8K",
    concurrency: Annotated[str, typer.Option(
        "--concurrency", metavar="N,…", help="Requests at once to try: 1,8,64.")] = "1",
    kv_dtype: Annotated[str | None, typer.Option(
        "--kv-dtype", metavar="DTYPE,…",
        help="KV cache dtypes to try: bf16,fp8 (default: the model's).")] = None,
    dtype: Annotated[str | None, typer.Option(
        "--dtype", metavar="DTYPE,…",
        help="Weight dtypes to try: bf16,fp8 (default: as stored).")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", "-e", metavar="ENGINE[@VERSION],…", autocompletion=complete.engines,
        help="Engines to try: vllm,sglang.")] = "vllm",
    prices: Annotated[Path | None, typer.Option(
        metavar="FILE", help="A YAML price file to merge over the packaged catalog.")] = None,
    report: ReportOption = None,
    details: Annotated[bool, typer.Option(
        "--details", help="Below the grid, every cell's plan, times and price.")] = False,
    fmt: Annotated[SweepFormat, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="table for people; json, yaml or csv for scripts (a cell per point).")
    ] = SweepFormat.TABLE,
) -> None:
    """The operating envelope: placement at every point of the lists given — whether it
    fits, the best plan, KV tokens, requests held, TTFT, TPOT, tokens/s and price — one
    cell per point, each equal to the placement run there.

    Example: inventory sweep qwen3-8b -d h100 --context 8K,32K --concurrency 1,64
    """
    import sys

    from llm_inventory.cli.files import check_report
    from llm_inventory.cli.placement import engine_list
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.engine.sweep import sweep as run
    from llm_inventory.render.output import OutputFormat, emit
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model
    from llm_inventory.spec.prices import load_prices, price_catalog

    check_report(report)
    contexts = _tokens(context, "context")
    users = _counts(concurrency, "concurrency")
    kv_list: list[str | None] = list(_listed(kv_dtype, "kv_dtype")) if kv_dtype else [None]
    dtype_list: list[str | None] = list(_listed(dtype, "dtype")) if dtype else [None]
    engines = engine_list(engine)
    chosen = resolve_device(device)
    catalog = price_catalog()
    if prices is not None:
        catalog = catalog.merged(load_prices(prices))
    spec = load_model(model)
    base = PlacementRequest(device=chosen, count=count or chosen.devices_per_node or 1,
                            limit=0)
    result = run(spec, base, contexts=contexts, concurrencies=users, kv_dtypes=kv_list,
                 dtypes=dtype_list, engines=engines, prices=catalog, reference=model)
    if report is not None:
        from llm_inventory.cli.files import write_atomically
        from llm_inventory.render.report import sweep_page

        write_atomically(report, sweep_page(result, (
            f"{spec.name} on {base.count:,} × {chosen.id}: contexts {context}, "
            f"concurrencies {concurrency}")), "report")
    if fmt is SweepFormat.CSV:
        sys.stdout.write(csv_text(result))
        return

    def table() -> list[Any]:
        from llm_inventory.render.sweep import sweep_tables

        return sweep_tables(result, details)

    emit(result, OutputFormat(fmt.value), table)
