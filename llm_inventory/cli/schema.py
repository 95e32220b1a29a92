"""`inventory schema`: the JSON Schema of the model description, for editors and validators."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from llm_inventory.render.output import OutputFormat

SCHEMA_ID = "urn:llm-inventory:schema:model-description:1"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema(
    what: Annotated[
        str,
        typer.Argument(
            metavar="[model|fleet]",
            help="model (default): the model description; fleet: the manifest of "
                 "`inventory check`.",
        ),
    ] = "model",
    fmt: Annotated[
        OutputFormat,
        typer.Option(
            "--format", "-f", case_sensitive=False,
            help="json (default) or yaml: the schema itself; table: its top-level fields.",
        ),
    ] = OutputFormat.JSON,
) -> None:
    """Print the JSON Schema of the model-description YAML (what MODEL files may contain),
    or with `fleet` of a fleet manifest (what `inventory check` reads).

    Point an editor's YAML language server at it for completion and checking as you type;
    every object forbids unknown keys, as the loader does. The table format lists the
    top-level fields with their types and defaults.

    Example: inventory schema --format yaml
    """
    from pydantic import RootModel

    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit

    if what == "fleet":
        from llm_inventory.spec.fleet import fleet_schema

        document = fleet_schema()
    elif what == "model":
        from llm_inventory.spec.model import ModelSpec

        document = {
            "$schema": SCHEMA_DIALECT,
            "$id": SCHEMA_ID,
            **ModelSpec.model_json_schema(),
            "title": "llm-inventory model description",
        }
    else:
        raise InputError("schema", f"unknown schema {what!r}; use model or fleet")
    result = RootModel[dict[str, Any]](document)

    def table() -> list[Any]:
        from llm_inventory.render.schema import schema_table

        return schema_table(document)

    emit(result, fmt, table)
