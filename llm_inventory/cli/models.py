"""`inventory models`: the built-in presets, or one preset in detail."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import FormatOption, UnitsOption, units_of
from llm_inventory.render.output import OutputFormat, Units


def models(
    model: Annotated[
        str | None,
        typer.Argument(
            metavar="MODEL", autocompletion=complete.models,
            help="Show one model in detail (a preset name or alias such as llama-3.1-70b, or "
            "any MODEL other commands take: a file or folder) with its notes, layer kinds and "
            "parameters per component.",
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """List the built-in model presets: family, parameters, weight bytes, KV per token, source.

    Parameters are counted exactly from each preset's shapes (total and active per token);
    weight bytes are the checkpoint's own dtype and quantization; KV per token is the
    persistent state one token adds across all layers at the model's dtype. Every preset
    names the public file its shapes were copied from.

    Example: inventory models llama-3.1-70b
    """
    from llm_inventory.engine.catalog import ModelCatalog, catalog_entry, model_detail
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.model import ModelSpec
    from llm_inventory.spec.presets import Preset, find_preset, load_preset, presets

    def build(preset: Preset) -> tuple[ModelSpec | None, str | None]:
        try:
            return load_preset(preset.name), None
        except InputError as exc:
            return None, exc.message

    def entry(preset: Preset, spec: ModelSpec | None, error: str | None) -> Any:
        return catalog_entry(preset.name, aliases=list(preset.aliases),
                             description=preset.description, source=preset.source,
                             file=preset.file, spec=spec, error=error)

    system = units_of(units)
    if model is not None:
        try:
            preset: Preset | None = find_preset(model)
        except InputError:
            if not model.strip():
                raise
            preset = None  # not a preset: any other MODEL the loader reads
        if preset is not None:
            spec = load_preset(preset.name)
            detail = model_detail(entry(preset, spec, None), spec)
        else:
            from llm_inventory.spec.loader import load_model

            spec = load_model(model)
            detail = model_detail(catalog_entry(
                spec.name, aliases=[], description="", source=spec.source or "", file=model,
                spec=spec), spec)

        def one() -> list[Any]:
            from llm_inventory.render.models import model_detail_table

            return model_detail_table(detail, system, preset=preset is not None)

        emit(detail, fmt, one)
        return

    catalog = ModelCatalog(models=[entry(p, *build(p)) for p in presets()])

    def table() -> list[Any]:
        from llm_inventory.render.models import models_table

        return models_table(catalog, system)

    emit(catalog, fmt, table)
