"""`inventory engines [ENGINE[@VERSION]]`: the serving engines and accounting eras modelled;
`--diff A B MODEL -d DEV`: what changed for a model between two releases."""

# No `from __future__ import annotations`: Typer reads the option annotations on every run.

from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import FormatOption, KvDtypeOption, tokens_parser
from llm_inventory.render.output import OutputFormat


def engines(
    engine: Annotated[str | None, typer.Argument(
        metavar="[ENGINE[@VERSION] | MODEL]", autocompletion=complete.engines,
        help="Show one engine era in full: its rules and the source of each. With --diff, "
             "the model to compare the two releases on.")] = None,
    diff: Annotated[tuple[str, str] | None, typer.Option(
        "--diff", metavar="A B",
        help="Two releases (ENGINE@VERSION each) to compare on MODEL and --device: KV tokens "
             "before and after, and the settings and rules that moved them.")] = None,
    device: Annotated[str | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="With --diff: the device id or alias (see `inventory devices`).")] = None,
    count: Annotated[int, typer.Option(
        "--count", "-n", min=1, help="With --diff: devices available.")] = 1,
    context: Annotated[int | None, typer.Option(
        "--context", "--max-model-len", parser=tokens_parser("context"), metavar="TOKENS",
        help="With --diff: positions per sequence (default as placement's).")] = None,
    kv_dtype: KvDtypeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Every serving engine and release range whose accounting placement follows, with
    what decides its KV pool; with ENGINE, that era's rules and the source of each; with
    --diff A B MODEL -d DEV, what changed for MODEL between releases A and B (one
    era's rules alone: inventory engines vllm@0.19).

    Example: inventory engines --diff vllm@0.27 vllm@0.28 llama-3.1-8b -d b200
    """
    from llm_inventory.render.output import emit

    if diff is not None:
        _diff(diff, engine, device, count, context, kv_dtype, fmt)
        return
    if device is not None or context is not None or kv_dtype is not None or count != 1:
        from llm_inventory.errors import InputError

        raise InputError("diff", "--device, --count, --context and --kv-dtype go with "
                         "--diff A B MODEL")
    from llm_inventory.engine.engines import engine_detail, engine_list

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


def _diff(pair: tuple[str, str], model: str | None, device: str | None, count: int,
          context: int | None, kv_dtype: str | None, fmt: OutputFormat) -> None:
    from llm_inventory.engine.engines import engine_diff
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    if model is None:
        raise InputError("model", "--diff A B needs the MODEL to compare them on")
    if device is None:
        raise InputError("device", "--diff needs --device (see `inventory devices`)")
    for name in pair:
        get(name, "diff")
    request = PlacementRequest(device=resolve_device(device), count=count, context=context,
                               kv_dtype=kv_dtype)
    result = engine_diff(load_model(model), request, pair[0], pair[1])

    def table() -> list[Any]:
        from llm_inventory.render.engines import engine_diff_table

        return engine_diff_table(result)

    emit(result, fmt, table)
