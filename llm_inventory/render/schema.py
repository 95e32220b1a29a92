"""A table of the model description's top-level fields, from its JSON Schema."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text


def _type(prop: dict[str, Any]) -> str:
    """A short type name: `integer`, `string | null`, `Stack | null`, `list[string]`."""
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in prop:
        return " | ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list[{_type(prop.get('items', {}))}]"
    return str(kind)


def schema_table(document: dict[str, Any]) -> list[Table | Text]:
    """One row per top-level field: its type, whether it is required, its default."""
    required = set(document.get("required", []))
    table = Table(show_header=True)
    table.add_column("field", no_wrap=True)
    table.add_column("type", overflow="fold")
    table.add_column("required", justify="center")
    table.add_column("default", overflow="fold")
    for name, prop in document.get("properties", {}).items():
        default = json.dumps(prop["default"]) if "default" in prop else ""
        table.add_row(Text(name), Text(_type(prop)), "yes" if name in required else "",
                      Text(default))
    return [
        Text(f"{document.get('title', 'schema')} · {document.get('$id', '')}", style="bold"),
        table,
        Text("nested objects: " + ", ".join(document.get("$defs", {})), style="dim"),
    ]
