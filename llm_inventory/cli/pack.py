"""`inventory pack MODEL[:CONTEXT[:CONCURRENCY]]… -d DEV -n N`: several models on one node."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import FormatOption, tokens_parser
from llm_inventory.render.output import OutputFormat

if TYPE_CHECKING:
    from llm_inventory.engine.packing import Tenant
    from llm_inventory.spec.model import ModelSpec


def _tenant(text: str, context: int, concurrency: int) -> tuple[ModelSpec, Tenant]:
    """`MODEL`, `MODEL:CONTEXT` or `MODEL:CONTEXT:CONCURRENCY` (32K, 8k …)."""
    from llm_inventory.engine.packing import Tenant
    from llm_inventory.errors import InputError
    from llm_inventory.spec.loader import load_model
    from llm_inventory.units import parse_tokens

    name, *rest = text.split(":")
    if len(rest) > 2 or not name.strip():
        raise InputError("model", f"expected MODEL[:CONTEXT[:CONCURRENCY]], got {text[:80]!r}")
    if rest and rest[0]:
        context = parse_tokens(rest[0], "context")
    if len(rest) > 1:
        if not rest[1].isdigit() or not 1 <= int(rest[1]) <= 10_000_000:
            raise InputError("concurrency", f"expected a whole number of requests from 1, got "
                             f"{rest[1][:20]!r} in {text[:80]!r}")
        concurrency = int(rest[1])
    return load_model(name), Tenant(name=name, context=context, concurrency=concurrency)


def pack(
    models: Annotated[list[str], typer.Argument(
        metavar="MODEL[:CONTEXT[:CONCURRENCY]]…", autocompletion=complete.models,
        help="Each model to place, with its context and requests at once (default: "
             "--context and --concurrency): llama-3.1-8b:32K:8.")],
    device: Annotated[str, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Device id or alias of the node (`inventory devices`).")],
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1,
        help="Devices on the node (default: the device's per node).")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", "-e", metavar="ENGINE[@VERSION]", autocompletion=complete.engines,
        help="Serving engine every model runs on (see `inventory engines`).")] = "vllm",
    context: Annotated[int, typer.Option(
        parser=tokens_parser("context"), metavar="TOKENS",
        help="Context of models that name none (default 8,000).")] = 8000,
    concurrency: Annotated[int, typer.Option(
        min=1, help="Requests at once of models that name none.")] = 1,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Place several models on one node: the devices each gets, or — when they share a
    device — the memory fraction each starts with, in start order, each checked by its
    engine's own accounting (vLLM refuses to start when less than its budget is free).
    Exit 1 when some model finds no room.

    Example: inventory pack llama-3.1-8b:8k:8 qwen3-8b:8k:8 -d h100 -n 1
    """
    from llm_inventory.cli.placement import engine_list
    from llm_inventory.engine.packing import pack as run
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import resolve_device

    if len(models) > 32:  # each is placed by up to 9 pairs of bisections (about 0.2 s)
        raise InputError("model", f"{len(models)} models given; pack places at most 32")
    chosen = resolve_device(device)
    engines = engine_list(engine)
    if len(engines) != 1:
        raise InputError("engine", "one engine for the node")
    tenants = [_tenant(text, context, concurrency) for text in models]
    result = run(tenants, chosen, count or chosen.devices_per_node or 1, engines[0])

    def table() -> list[Any]:
        from llm_inventory.render.packing import pack_tables

        return pack_tables(result)

    emit(result, fmt, table)
    if not result.fits:
        raise CheckFailed(f"{len(result.unplaced)} of {len(models)} models find no room: "
                          + "; ".join(result.unplaced)[:300])
