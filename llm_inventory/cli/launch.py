"""`inventory launch -- <engine command line>`: what that engine will print at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli.common import FormatOption, UnitsOption, units_of
from llm_inventory.render.output import OutputFormat, Units

if TYPE_CHECKING:
    from llm_inventory.spec.model import ModelSpec


def _hub_folder(model_id: str) -> Path | None:
    """The Hugging Face cache folder of `model_id` (ORG/NAME), when it is on this machine."""
    from llm_inventory.files import is_dir
    from llm_inventory.spec.hub import repo_folder

    folder = repo_folder(model_id)
    return folder if is_dir(folder) else None


def resolve_model(reference: str) -> ModelSpec:
    """A launch command's model: a local path, a preset or one of its Hugging Face ids, or
    a model in the local Hugging Face cache; InputError when none resolves offline."""
    from llm_inventory.errors import InputError
    from llm_inventory.files import exists
    from llm_inventory.spec.loader import load_model
    from llm_inventory.spec.presets import find_preset, load_preset

    if exists(Path(reference).expanduser()):  # never raises (a 300-character name)
        return load_model(reference)
    try:
        return load_preset(find_preset(reference).name)
    except InputError:
        pass
    folder = _hub_folder(reference) if reference.count("/") == 1 else None
    if folder is not None:
        return load_model(str(folder))
    raise InputError("model", f"{reference!r} is not resolvable offline: not a local path, "
                     "a preset or its Hugging Face id, nor in the Hugging Face cache; pass "
                     "its config.json or folder instead")


def launch(
    command: Annotated[list[str], typer.Argument(
        metavar="-- COMMAND…", show_default=False,
        help="The engine's own command line, after --: vllm serve MODEL --flag value …")],
    device: Annotated[str | None, typer.Option(
        "--device", "-d", help="Device id or alias it runs on (see `inventory devices`).",
    )] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1,
        help="Devices it runs on (default: the command's tp × pp × dp).")] = None,
    engine_version: Annotated[str | None, typer.Option(
        metavar="VERSION",
        help="The engine release it runs (default: the newest modelled; see "
             "`inventory engines`).")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Read an engine's launch command and predict what it prints about its KV cache at
    start-up, in its own words and units, or the error it stops with and the longest
    context that fits. Flags it does not model are listed on stderr, never refused.

    Example: inventory launch -d h100 -- vllm serve Qwen/Qwen3-8B -tp 2
    """
    from llm_inventory.engine.launch import match_program, predict_launch
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit, warn
    from llm_inventory.spec.devices import resolve_device

    if device is None:
        raise InputError("device", "missing: say which device the command runs on (see "
                         "`inventory devices`)")
    chosen = resolve_device(device)
    era, rest = match_program(list(command))
    parsed = era.parse_launch(rest)
    version = engine_version or parsed.version
    engine = get(f"{era.name}@{version}", "engine_version") if version else era
    spec = resolve_model(parsed.model)
    result = predict_launch(spec, parsed, engine, chosen, count)
    if parsed.ignored:  # once the command line is known good: bad input stays one line
        warn(f"{engine.label} flags not modelled, ignored: {', '.join(parsed.ignored)}")

    def table() -> list[Any]:
        from llm_inventory.render.launch import launch_tables

        return launch_tables(result, units_of(units))

    emit(result, fmt, table)
