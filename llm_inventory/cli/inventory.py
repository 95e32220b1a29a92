"""`inventory inventory MODEL` and `inventory compare MODEL MODEL …`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import (
    ContextOption,
    DtypeOption,
    FormatOption,
    FramesOption,
    ImageSizeOption,
    ImagesOption,
    KvDtypeOption,
    MergeOption,
    PatchOption,
    ReportOption,
    TemporalOption,
    UnitsOption,
    parse_image_size,
    tokens_parser,
    units_of,
)
from llm_inventory.render.output import OutputFormat, Units

if TYPE_CHECKING:
    from llm_inventory.engine.inventory import InventoryRequest

PromptOption = Annotated[
    int | None,
    typer.Option(parser=tokens_parser("prompt_tokens"), metavar="TOKENS",
                 help="Text prompt tokens for the prefill shapes (default 1,000)."),
]
BatchOption = Annotated[int, typer.Option(min=1, help="Decode batch: sequences per step.")]
def _request(
    context: int, prompt_tokens: int | None, batch: int, dtype: str | None,
    kv_dtype: str | None, images: int, image_text: str | None, patch: int | None,
    merge: int | None, frames: int, temporal_patch: int | None, device: str | None = None,
) -> InventoryRequest:
    from llm_inventory.engine.inventory import InventoryRequest
    from llm_inventory.spec.devices import resolve_device

    image_size = parse_image_size(image_text)
    return InventoryRequest(
        device=resolve_device(device) if device is not None else None,
        context=context, prompt_tokens=prompt_tokens, batch=batch, dtype=dtype,
        kv_dtype=kv_dtype, images=images,
        image_width=image_size[0] if image_size else None,
        image_height=image_size[1] if image_size else None,
        patch_size=patch, merge=merge, frames=frames, temporal_patch=temporal_patch,
    )


def inventory(
    model: Annotated[str, typer.Argument(
        metavar="MODEL", autocompletion=complete.models,
        help="Preset, Hugging Face id (org/name[@revision]), YAML model file, config.json, "
             "model or Hub cache folder, or GGUF file.")],
    context: ContextOption = "8000",  # type: ignore[assignment]
    prompt_tokens: PromptOption = None,
    batch: BatchOption = 1,
    dtype: DtypeOption = None,
    kv_dtype: KvDtypeOption = None,
    images: ImagesOption = 1,
    image_size: ImageSizeOption = None,
    patch: PatchOption = None,
    merge: MergeOption = None,
    frames: FramesOption = 1,
    temporal_patch: TemporalOption = None,
    device: Annotated[str | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Show roofline timings on this device: its ridge point and where prefill and "
             "decode fall.")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """The inventory of one topology: parameter bytes, persistent state, prefill and
    decode shapes, conditional communication, and the stages a plan can place apart.

    Example: inventory inventory examples/dense-70b.yaml --context 8000
    """
    from llm_inventory.engine.inventory import build_inventory
    from llm_inventory.render.output import emit
    from llm_inventory.spec.loader import load_model

    spec = load_model(model)
    request = _request(context, prompt_tokens, batch, dtype, kv_dtype, images, image_size,
                       patch, merge, frames, temporal_patch, device)
    result = build_inventory(spec, request)

    def table() -> list[Any]:
        from llm_inventory.render.inventory import inventory_tables

        return inventory_tables(result, units_of(units))

    emit(result, fmt, table)


def compare(
    models: Annotated[list[str], typer.Argument(
        metavar="MODEL", autocompletion=complete.models,
        help="Two or more presets, model files or folders.")],
    context: ContextOption = "8000",  # type: ignore[assignment]
    prompt_tokens: PromptOption = None,
    batch: BatchOption = 1,
    dtype: DtypeOption = None,
    kv_dtype: KvDtypeOption = None,
    images: ImagesOption = 1,
    image_size: ImageSizeOption = None,
    patch: PatchOption = None,
    merge: MergeOption = None,
    frames: FramesOption = 1,
    temporal_patch: TemporalOption = None,
    engine: Annotated[str | None, typer.Option(
        "--engine", "-e", metavar="ENGINE[@VERSION],…", autocompletion=complete.engines,
        help="One model across serving engines instead: each engine's best plan on "
             "--device, a column each (JSON: a list of placement results).")] = None,
    device: Annotated[str | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Each model on this device (see `inventory devices`): fits or not, the "
             "smallest fit, the longest context, the concurrency at --context; with "
             "--engine, the device the engines are compared on.")] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="With --device: devices available (default: one node)."
    )] = None,
    no_local_calibration: Annotated[bool, typer.Option(
        "--no-local-calibration",
        help="With --engine: ignore the profile learned by `inventory calibrate`.")] = False,
    report: ReportOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Topologies side by side: the same facts, one column each, rows aligned.
    JSON is a list of inventories. With --device (and --count), each model on those
    devices: fits, smallest fit, longest context, concurrency. With --engine, one model
    across serving engines.

    Example: inventory compare examples/dense-70b.yaml examples/moe-8x7b.yaml
    """
    from llm_inventory.bounds import COMPARED
    from llm_inventory.cli.files import check_report
    from llm_inventory.engine.inventory import build_inventory
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.loader import load_model

    check_report(report)
    if report is not None and (engine is not None or device is None):
        raise InputError("report", "compare writes a report of each model on --device "
                         "(and --count); not with --engine or topologies alone")
    if engine is not None:
        _compare_engines(models, engine, device, count, context, kv_dtype, dtype, fmt, units,
                         no_local_calibration)
        return
    if device is not None or count is not None:
        _compare_fits(models, device, count, context, kv_dtype, dtype, fmt, report)
        return
    if len(models) < 2:
        raise InputError("models", "compare needs at least two models")
    COMPARED.check("models", len(models))  # a work bound, before any model loads
    request = _request(context, prompt_tokens, batch, dtype, kv_dtype, images, image_size,
                       patch, merge, frames, temporal_patch)
    results = [build_inventory(load_model(m), request) for m in models]

    def table() -> list[Any]:
        from llm_inventory.render.inventory import compare_table

        return compare_table(results, units_of(units), request)

    emit(results, fmt, table)


def _compare_fits(models: list[str], device: str | None, count: int | None, context: int,
                  kv_dtype: str | None, dtype: str | None, fmt: OutputFormat,
                  report: Path | None = None) -> None:
    """`compare A B C --device D --count N`: each model on those devices."""
    from llm_inventory.engine.compare_fit import model_fit
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    if device is None:
        raise InputError("device", "--count needs --device (see `inventory devices`)")
    chosen = resolve_device(device)
    request = PlacementRequest(device=chosen, count=count or chosen.devices_per_node or 1,
                               context=context, dtype=dtype, kv_dtype=kv_dtype)
    from llm_inventory.spec.devices import list_devices

    fits = [model_fit(load_model(m), request, m, list_devices()) for m in models]

    def table() -> list[Any]:
        from llm_inventory.render.compare_fit import compare_fit_tables

        return compare_fit_tables(fits)

    emit(fits, fmt, table)
    if report is not None:
        from llm_inventory.cli.files import write_atomically
        from llm_inventory.render.report import compare_page

        write_atomically(report, compare_page(fits, (
            f"{', '.join(models)} on {request.count:,} × {chosen.id} at "
            f"{request.context or 8000:,} tokens")), "report")


def _compare_engines(models: list[str], engine: str, device: str | None, count: int | None,
                     context: int, kv_dtype: str | None, dtype: str | None, fmt: OutputFormat,
                     units: Units, no_local_calibration: bool = False) -> None:
    """`compare MODEL --engine a,b --device D`: the model's best plan on each engine."""
    from llm_inventory.cli.placement import engine_list
    from llm_inventory.cli.profile_store import local_calibration, profile_trust
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    if len(models) != 1:
        raise InputError("models", "compare --engine takes one model")
    if device is None:
        raise InputError("device", "compare --engine needs --device (see `inventory devices`)")
    names = engine_list(engine)
    chosen = resolve_device(device)
    spec = load_model(models[0])
    request = PlacementRequest(device=chosen, count=count or chosen.devices_per_node or 1,
                               context=context, dtype=dtype, kv_dtype=kv_dtype)
    results = []
    for name in names:  # each engine with the local calibration profile's entries, if any
        with local_calibration(None, no_local_calibration, name, chosen, spec.name) as found:
            result = plan_placement(spec, request.model_copy(update={"engine": name}))
        if found:
            result = result.model_copy(update={"trust": {
                **result.trust, "reserve": profile_trust(found)}})
        results.append(result)

    def table() -> list[Any]:
        from llm_inventory.render.placement import engines_side_by_side

        return engines_side_by_side(results, units_of(units))[:2]

    emit(results, fmt, table)
