"""`inventory launch -- <engine command line>`: what that engine will print at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import (
    FormatOption,
    NoLocalCalibrationOption,
    ProfileOption,
    UnitsOption,
    bytes_parser,
    units_of,
)
from llm_inventory.render.output import OutputFormat, Units

if TYPE_CHECKING:
    from llm_inventory.spec.devices import Device
    from llm_inventory.spec.model import ModelSpec


def resolve_model(reference: str) -> ModelSpec:
    """A launch command's model, resolved as every command resolves MODEL: a local path, a
    preset or one of its Hugging Face ids, the local Hugging Face cache, then (with the
    `hub` extra, not offline) the Hub, headers only."""
    from llm_inventory.spec.loader import load_model

    return load_model(reference)


# launch's own options: given after -- they are the tool's, not the engine's
TOOL_OPTIONS = frozenset({"--device", "-d", "--count", "-n", "--engine-version",
                          "--device-memory", "--profile", "--no-local-calibration", "--format",
                          "--units"})


def device_of(device: str | None, memory: int | None) -> Device:
    """The device a launch runs on: a catalog device, its memory replaced by `memory` when
    given (a slice, a card as its runtime reports it), or any card of `memory` bytes."""
    from llm_inventory.errors import InputError
    from llm_inventory.spec.devices import custom_device, resolve_device

    if device is None and memory is None:
        raise InputError("device", "missing: say which device the command runs on (see "
                         "`inventory devices`), or give --device-memory")
    chosen = resolve_device(device) if device is not None else None
    return custom_device(memory, chosen) if memory is not None else chosen  # type: ignore[return-value]


def _read_options(name: str) -> object:
    """The YAML options file a command line names (e.g. TensorRT-LLM's
    `--extra_llm_api_options`), parsed; InputError when it cannot be read."""
    import yaml

    from llm_inventory.errors import InputError

    path = Path(name).expanduser()
    try:
        if path.stat().st_size > 1 << 20:
            raise InputError("extra_llm_api_options", f"{name}: larger than 1 MiB; an options "
                             "file is a short YAML mapping")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError("extra_llm_api_options", f"cannot read {name}: "
                         f"{exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError("extra_llm_api_options", f"{name} is not UTF-8 text") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError("extra_llm_api_options", f"{name} is not valid YAML: "
                         f"{str(exc).splitlines()[0]}") from None


def _sized_adapters(parsed: Any, era: Any) -> Any:
    """A command whose engine loads its LoRA adapters' own files (llama.cpp --lora), with
    each file's size: the bytes the adapter places beside the weights."""
    from llm_inventory.errors import InputError

    lora = parsed.lora
    rule = era.lora_rule
    if lora is None or rule is None or not rule.from_files or lora.adapter_bytes:
        return parsed
    sizes = []
    for name in lora.adapters:
        try:
            sizes.append(Path(name).stat().st_size)
        except OSError as exc:
            raise InputError("lora", f"cannot size the adapter {Path(name).name}: "
                             f"{exc.strerror or exc}") from exc
    return parsed.model_copy(update={"lora": lora.model_copy(
        update={"adapter_bytes": tuple(sizes)})})


def launch(
    command: Annotated[list[str], typer.Argument(
        metavar="-- COMMAND…", show_default=False,
        help="The engine's own command line, after --: vllm serve MODEL --flag value …")],
    device: Annotated[str | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Device id or alias it runs on (see `inventory devices`).",
    )] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1,
        help="Devices it runs on (default: the command's tp × pp × dp).")] = None,
    engine_version: Annotated[str | None, typer.Option(
        metavar="VERSION",
        help="The engine release it runs (default: the newest modelled; see "
             "`inventory engines`).")] = None,
    device_memory: Annotated[int | None, typer.Option(
        "--device-memory", metavar="SIZE", parser=bytes_parser("--device-memory"),
        help="Memory of each device as the runtime reports it (24GiB, 22GiB for a slice): "
             "any card, with or without --device.")] = None,
    profile: ProfileOption = None,
    no_local_calibration: NoLocalCalibrationOption = False,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Read an engine's launch command and predict what it prints about its KV cache at
    start-up, in its own words and units, or the error it stops with and the longest
    context that fits. Flags it does not model are listed on stderr, never refused.
    Exit status 1 when the prediction is that the engine will not start (for CI), 0 when
    it starts. A calibration profile learned from your own start-up log for the same
    engine release, device, model and TP width moves the engine's reserve, labelled
    "calibrated on your log".

    Example: inventory launch -d h100 -- vllm serve Qwen/Qwen3-8B -tp 2
    """
    from llm_inventory.cli.profile_store import local_entries
    from llm_inventory.engine.calibrate import applied, calibrated_trust
    from llm_inventory.engine.launch import match_program, predict_launch, without_untaken
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit, warn

    chosen = device_of(device, device_memory)
    era, rest = match_program(list(command))
    parsed = era.parse_launch(rest)
    misplaced = [flag for flag in parsed.ignored if flag.split("=")[0].split()[0]
                 in TOOL_OPTIONS]
    if misplaced:
        raise InputError("launch", f"{', '.join(misplaced)}: an option of `inventory launch` "
                         "given after -- (the engine's command line); put it before --")
    rules = era.offload_rules()
    if rules is not None:  # LMCache reads its sizes from the line's environment
        from llm_inventory.engine.offload import environment

        parsed = parsed.model_copy(update={"offload": rules.with_environment(
            parsed.offload, environment(list(command)), parsed.tp * parsed.pp)})
    options = era.options_file(parsed)
    if options is not None:
        parsed = era.with_options(parsed, _read_options(options))
    parsed = _sized_adapters(parsed, era)
    version = engine_version or parsed.version
    engine = get(f"{era.name}@{version}", "engine_version") if version else era
    parsed = without_untaken(parsed, engine)
    spec = resolve_model(parsed.model)
    entries = [] if no_local_calibration else local_entries(
        profile, engine, chosen, spec.name, parsed.tp)
    speculative = None
    if parsed.speculative is not None:
        from llm_inventory.cli.speculative_options import with_draft

        speculative = with_draft(parsed.speculative)
    with applied(engine, entries) as used:
        result = predict_launch(spec, parsed, used, chosen, count, speculative)
    if entries:
        result = result.model_copy(update={"trust": {**result.trust,
                                                     "reserve": calibrated_trust(entries)}})
    if parsed.ignored:  # once the command line is known good: bad input stays one line
        warn(f"{engine.label} flags not modelled, ignored: {', '.join(parsed.ignored)}")

    def table() -> list[Any]:
        from llm_inventory.render.launch import launch_tables

        return launch_tables(result, units_of(units))

    emit(result, fmt, table)
    if result.startup_error is not None:  # the engine stops at start-up: a failed check
        raise typer.Exit(1)
