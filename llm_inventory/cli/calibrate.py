"""`inventory calibrate LOG…`: a real start-up log read back beside the prediction."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli.common import FormatOption, UnitsOption, units_of
from llm_inventory.render.output import OutputFormat, Units

if TYPE_CHECKING:
    from llm_inventory.engine.logs import StartupLog
    from llm_inventory.spec.devices import Device

LOG_BYTES = 64 * 2**20  # a start-up log is kilobytes to a few megabytes


def _read(name: str) -> tuple[str, str, str]:
    """(text, file name, ISO date) of a log file or standard input ("-")."""
    from llm_inventory.errors import InputError

    if name == "-":
        data = sys.stdin.buffer.read(LOG_BYTES + 1)
        source, date = "<stdin>", dt.date.today().isoformat()
    else:
        path = Path(name)
        try:
            if not path.is_file():
                raise InputError("log", f"{name}: no such file")
            with path.open("rb") as handle:
                data = handle.read(LOG_BYTES + 1)
            stamp = path.stat().st_mtime
        except OSError as exc:
            raise InputError("log", f"{name}: {exc.strerror or exc}") from None
        source = path.name
        date = dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()
    if len(data) > LOG_BYTES:
        raise InputError("log", f"{source} is larger than {LOG_BYTES // 2**20} MiB; pass the "
                         "start-up part of the log")
    return data.decode("utf-8", errors="replace"), source, date


def _device(log: StartupLog, given: str | None) -> tuple[Device, str]:
    """The device the log ran on, with the memory it printed, and its profile key."""
    from llm_inventory.errors import InputError
    from llm_inventory.spec.devices import custom_device, resolve_device

    chosen = None
    if given:
        chosen = resolve_device(given)
    elif log.gpu:
        try:
            chosen = resolve_device(log.gpu)
        except InputError:
            chosen = None
    memory = log.gpu_memory_bytes
    if chosen is not None:
        if memory and memory != chosen.memory_bytes:  # the engine's own figure wins
            chosen = chosen.model_copy(update={"memory_bytes": memory})
        return chosen, chosen.id
    if memory is None:
        raise InputError("device", "the log prints no device memory; pass --device")
    name = log.gpu or f"GPU with {memory / 2**30:.2f} GiB"  # as precise as the log
    device = custom_device(memory).model_copy(update={"name": name})
    return device, f"{memory / 2**30:.2f} GiB"


def calibrate(
    logs: Annotated[list[str], typer.Argument(
        metavar="LOG…", show_default=False,
        help="Start-up log files of vLLM, SGLang, TensorRT-LLM or llama.cpp; - reads "
             "standard input.")],
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="The model, when the log names none or it is not resolvable "
                              "offline (preset, config.json, folder, Hub id).")] = None,
    device: Annotated[str | None, typer.Option(
        "--device", "-d", help="The device it ran on (default: from the log's memory "
                               "figures).")] = None,
    engine_version: Annotated[str | None, typer.Option(
        metavar="VERSION", help="The engine release, when the log does not print it.")] = None,
    profile: Annotated[Path | None, typer.Option(
        "--profile", metavar="FILE",
        help="Keep what was learned in FILE instead of the local profile.")] = None,
    export: Annotated[Path | None, typer.Option(
        "--export", metavar="FILE",
        help="Also write the whole profile to FILE, to share (use it with --profile).")] = None,
    no_local_calibration: Annotated[bool, typer.Option(
        "--no-local-calibration", help="Keep nothing: compare only.")] = False,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Read an engine's start-up log: its engine and release, model, GPU, parallel layout
    and flags; the same start-up predicted; each printed figure beside the prediction with
    the rule that explains the difference; and the figures the log prints that follow from
    its own others, recomputed. What the log measured beyond the tool's estimate of the
    engine's reserve is kept in the local calibration profile, which later `launch` runs
    apply (labelled "calibrated on your log").

    Example: inventory calibrate examples/logs/vllm-0.19-llama-3.1-8b.log
    """
    from llm_inventory.cli.launch import resolve_model
    from llm_inventory.cli.profile_store import load_profile, profile_path, save_profile
    from llm_inventory.engine.calibrate import PROFILE_NOTE, CalibrationRun, compare_log
    from llm_inventory.engine.logs import read_log
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit

    reports = []
    learned = []
    for name in logs:
        text, source, date = _read(name)
        try:
            log = read_log(text)
        except InputError as exc:
            raise InputError("log", f"{source}: {exc.message}") from None
        version = engine_version or log.version
        try:
            engine = get(f"{log.engine}@{version}", "engine_version") if version \
                else get(log.engine)
        except InputError:
            if engine_version:
                raise
            engine = get(log.engine)  # an unreadable printed release: the newest era
        reference = model or log.model
        spec = None
        if reference:
            try:
                spec = resolve_model(reference)
            except InputError:
                if model:
                    raise
        chosen, gpu = _device(log, device)
        report = compare_log(log, source, spec, chosen, engine, date, gpu,
                             release_given=engine_version is not None)
        reports.append(report)
        learned.extend(report.learned)
    written = exported = None
    entries = 0
    if not no_local_calibration and learned:
        path = profile_path(profile)
        merged = load_profile(path).merged(learned)
        save_profile(path, merged)
        written, entries = str(path), len(merged.entries)
        if export is not None:
            save_profile(export, merged)
            exported = str(export)
    elif export is not None and learned:
        from llm_inventory.engine.calibrate import Profile

        save_profile(export, Profile(entries=learned))
        exported, entries = str(export), len(learned)
    run = CalibrationRun(reports=reports, profile=written, exported=exported,
                         note=PROFILE_NOTE, entries=entries)

    def table() -> list[Any]:
        from llm_inventory.render.calibrate import calibrate_tables

        return calibrate_tables(run, units_of(units))

    emit(run, fmt, table)

