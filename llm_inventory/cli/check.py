"""`inventory check FLEET.yaml`: many deployments checked in one run, for CI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli.common import FormatOption
from llm_inventory.render.output import OutputFormat

if TYPE_CHECKING:
    from llm_inventory.engine.fleet import DeploymentCheck
    from llm_inventory.engine.launch import LaunchResult
    from llm_inventory.spec.devices import Device
    from llm_inventory.spec.fleet import Deployment
    from llm_inventory.spec.model import ModelSpec


def _model_reference(reference: str, folder: Path) -> str:
    """A model path in a manifest is read relative to the manifest's folder, as a team's
    repository lays them side by side; presets and Hub ids are left as they are."""
    beside = folder / reference
    return str(beside) if not Path(reference).is_absolute() and beside.exists() else reference


def _launch(entry: Deployment, device: Device, models: dict[str, ModelSpec]) -> LaunchResult:
    """The deployment's own command line, predicted as `inventory launch` predicts it."""
    import shlex

    from llm_inventory.cli.launch import resolve_model
    from llm_inventory.engine.launch import match_program, predict_launch
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError

    assert entry.launch is not None
    try:
        argv = shlex.split(entry.launch)
    except ValueError as exc:
        raise InputError("launch", f"cannot split the command line: {exc}") from exc
    era, rest = match_program(argv)
    parsed = era.parse_launch(rest)
    name, _, version = entry.engine.partition("@")
    version = version if name == era.name and version else (parsed.version or "")
    engine = get(f"{era.name}@{version}", "engine") if version else era
    if parsed.model not in models:
        models[parsed.model] = resolve_model(parsed.model)
    return predict_launch(models[parsed.model], parsed, engine, device, entry.count)


def _check_one(entry: Deployment, line: int | None, folder: Path, extra: list[Device],
               models: dict[str, ModelSpec]) -> DeploymentCheck:
    from llm_inventory.cli.placement import engine_list, occupied_memory
    from llm_inventory.engine.fleet import Targets, check_deployment
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.errors import InputError
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    device = resolve_device(entry.device, extra)
    engines = engine_list(entry.engine)
    if len(engines) != 1:
        raise InputError("engine", "one engine per deployment; list each engine as its own "
                         "deployment")
    reference = _model_reference(entry.model, folder)
    if reference not in models:
        models[reference] = load_model(reference)
    spec = models[reference]
    count = entry.count or entry.per_node or device.devices_per_node or 1
    for pin in ("tp", "pp", "ep"):
        value = getattr(entry, pin)
        if value is not None and value > count:
            raise InputError(pin, f"{pin} {value:,} needs {value:,} devices; count is {count:,}")
    used = occupied_memory(entry.used, entry.free, device.memory_bytes, count)
    request = PlacementRequest(
        device=device, count=count, per_node=entry.per_node, tp=entry.tp, pp=entry.pp,
        ep=entry.ep, engine=engines[0], context=entry.context, concurrency=entry.concurrency,
        gpu_memory_utilization=entry.gpu_memory_utilization, dtype=entry.dtype,
        kv_dtype=entry.kv_dtype, prompt_tokens=entry.prompt_tokens,
        batch=entry.concurrency if entry.ttft or entry.tpot else None, used_bytes=used)
    launch = _launch(entry, device, models) if entry.launch else None
    name = entry.name or f"{entry.model} on {count}×{device.id}"
    return check_deployment(name, line, spec, request,
                            Targets(ttft_s=entry.ttft, tpot_s=entry.tpot), launch)


def check(
    manifest: Annotated[Path, typer.Argument(
        metavar="FLEET.yaml", help="A YAML (or JSON) file with a `deployments:` list; "
        "`inventory schema fleet` prints its schema.")],
    junit: Annotated[Path | None, typer.Option(
        metavar="FILE", help="Also write a JUnit XML report, one test case per deployment.",
    )] = None,
    annotations: Annotated[bool, typer.Option(
        "--annotations", help="Print GitHub Actions annotations (an ::error at each failing "
        "deployment's manifest line) after the table.")] = False,
    devices_file: Annotated[Path | None, typer.Option(
        help="A YAML file of devices the manifest may name (the catalog's schema).")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Check every deployment of a fleet manifest: does it fit its requests at its context,
    meet its TTFT/TPOT targets (calibrated estimates), and does its launch line start.
    Exit 0 when all pass, 1 when any fails, 2 for a bad manifest (naming the entry and
    field). Entries use `placement`'s option names; `defaults:` applies to every entry.

    Example: inventory check examples/fleets/platform.yaml --annotations
    """
    import sys
    import time

    from llm_inventory.engine.fleet import fleet_result
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import load_devices_file
    from llm_inventory.spec.fleet import entry_label, read_fleet

    if annotations and fmt is not OutputFormat.TABLE:
        raise InputError("annotations", "annotations are printed with the table; for JSON or "
                         "YAML use --junit FILE beside them")
    if junit is not None:
        from llm_inventory.cli.files import check_writable

        check_writable(junit, "junit")
    fleet = read_fleet(manifest)
    extra = load_devices_file(devices_file) if devices_file is not None else []
    folder = Path(fleet.folder)
    models: dict[str, ModelSpec] = {}
    checks, seconds = [], []
    for index, (entry, line) in enumerate(zip(fleet.deployments, fleet.lines, strict=True)):
        started = time.perf_counter()
        try:
            checks.append(_check_one(entry, line, folder, extra, models))
        except InputError as exc:
            label = entry_label(fleet.source, index, {"name": entry.name}, line)
            raise InputError(f"{label}: {exc.field}", exc.message) from exc
        seconds.append(time.perf_counter() - started)
    result = fleet_result(fleet.source, checks)
    if junit is not None:
        from llm_inventory.cli.files import write_atomically
        from llm_inventory.render.fleet import junit_xml

        write_atomically(junit, junit_xml(result, seconds), "junit")

    def table() -> list[Any]:
        from llm_inventory.render.fleet import fleet_tables

        return fleet_tables(result)

    emit(result, fmt, table)
    if annotations:
        from llm_inventory.render.fleet import github_annotations

        sys.stdout.write(github_annotations(result, fleet.source))
    if result.failed:
        raise CheckFailed(f"{result.failed:,} of {len(checks):,} deployments fail: "
                          + ", ".join(c.name for c in checks if c.status == "fail")[:300])
