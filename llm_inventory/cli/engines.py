"""`inventory engines [ENGINE[@VERSION]]`: the serving engines and accounting eras modelled."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import FormatOption
from llm_inventory.render.output import OutputFormat


def engines(
    engine: Annotated[str | None, typer.Argument(
        metavar="[ENGINE[@VERSION]]", autocompletion=complete.engines,
        help="Show one engine era in full: its rules and the source of each.")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Every serving engine and release range whose accounting placement follows, with
    what decides its KV pool; with ENGINE, that era's rules and the source of each.

    Example: inventory engines vllm@0.19
    """
    from llm_inventory.engine.engines import engine_detail, engine_list
    from llm_inventory.render.output import emit

    if engine is not None:
        detail = engine_detail(engine)

        def one() -> list[Any]:
            from llm_inventory.render.engines import engine_detail_table

            return engine_detail_table(detail)

        emit(detail, fmt, one)
        return
    listing = engine_list()

    def table() -> list[Any]:
        from llm_inventory.render.engines import engines_table

        return engines_table(listing)

    emit(listing, fmt, table)
