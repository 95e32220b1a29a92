"""A fleet manifest: the deployments a team keeps, read for `inventory check`.

The file is YAML (or JSON) with a top-level `deployments:` list; each entry names its
settings with `placement`'s own option names (`model`, `engine`, `device`, `count`,
`context`, `concurrency`, `dtype`, `kv_dtype`, …), plus optional latency targets (`ttft`,
`tpot`) and the engine command line it runs (`launch`). An optional `defaults:` mapping is
merged under every entry, so a fleet states its common engine or device once. Every problem
is one InputError naming the file, the entry (by name and line) and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from llm_inventory.errors import InputError, excerpt
from llm_inventory.units import parse_seconds, parse_tokens

FLEET_SCHEMA_ID = "urn:llm-inventory:schema:fleet:1"

# Counts and times take units in the file (32K, 500ms): the schema says so.
Tokens = Annotated[int | None, WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 1}, {"type": "string", "pattern": r"^\s*[0-9.]+\s*[kKmM]?\s*$"},
    {"type": "null"}]})]
Seconds = Annotated[float | None, WithJsonSchema({"anyOf": [
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string", "pattern": r"^\s*[0-9.eE+-]+\s*(ms|s)?\s*$"}, {"type": "null"}]})]


class Deployment(BaseModel):
    """One deployment of the fleet: what runs where, and what it must hold or meet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = Field(default=None, max_length=200,
                             description="How reports name it (default: model on device).")
    model: str = Field(max_length=1000, description="As `placement` takes MODEL: a preset, a "
                       "Hugging Face id, or a model file or folder (relative to the manifest).")
    engine: str = Field(default="vllm", max_length=200,
                        description="ENGINE[@VERSION], as `inventory engines` lists them.")
    device: str = Field(max_length=200, description="Device id or alias (`inventory devices`).")
    count: int | None = Field(default=None, ge=1, le=65_536,
                              description="Devices it runs on (default: one node).")
    per_node: int | None = Field(default=None, ge=1, le=65_536)
    tp: int | None = Field(default=None, ge=1, le=65_536)
    pp: int | None = Field(default=None, ge=1, le=65_536)
    ep: int | None = Field(default=None, ge=1, le=65_536)
    context: Tokens = Field(default=None, ge=1, description="Positions per sequence: "
                                "8000, 8k, 32K … (default as `placement`).")
    concurrency: int = Field(default=1, ge=1, le=10_000_000,
                             description="Requests at `context` that must fit at once.")
    dtype: str | None = Field(default=None, max_length=40)
    kv_dtype: str | None = Field(default=None, max_length=40)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    used: str | None = Field(default=None, max_length=100_000, description="Memory other "
                             "processes already hold, device by device: 30GiB,20GiB.")
    free: str | None = Field(default=None, max_length=100_000, description="Or the memory "
                             "each device has free: 50GiB,60GiB.")
    prompt_tokens: Tokens = Field(default=None, ge=1, description="Prompt length for "
                                      "the TTFT target (default 1,000).")
    ttft: Seconds = Field(default=None, description="Time-to-first-token target: "
                               "2s, 500ms, 0.5 (seconds).")
    tpot: Seconds = Field(default=None, description="Time-per-output-token target: "
                               "50ms, 0.05 (seconds).")
    launch: str | None = Field(default=None, max_length=4000, description="The engine "
                               "command line it runs (`vllm serve … --tensor-parallel-size 4`):"
                               " checked as `inventory launch` reads it.")

    @field_validator("context", "prompt_tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return parse_tokens(value, info.field_name)
        return value

    @field_validator("used", "free", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        """A list of sizes is the same as its comma-separated form."""
        if isinstance(value, list) and all(isinstance(v, str | int) and not isinstance(v, bool)
                                           for v in value):
            return ",".join(str(v) for v in value)
        return value

    @field_validator("ttft", "tpot", mode="before")
    @classmethod
    def _seconds(cls, value: Any, info: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str | int | float):
            return parse_seconds(value, info.field_name)
        return value


class FleetManifest(BaseModel):
    """A fleet: `deployments`, and `defaults` merged under each of them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: dict[str, Any] = Field(default_factory=dict, description="Settings every "
                                     "deployment takes unless it gives its own.")
    deployments: list[Deployment] = Field(min_length=1, max_length=10_000)


class Fleet(BaseModel):
    """A manifest read: its deployments, where each starts in the file, and its folder."""

    source: str
    folder: str
    deployments: list[Deployment]
    lines: list[int | None]


def fleet_schema() -> dict[str, Any]:
    """The JSON Schema of a fleet manifest, for editors and validators."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": FLEET_SCHEMA_ID,
            **FleetManifest.model_json_schema(), "title": "llm-inventory fleet manifest"}


def entry_label(source: str, index: int, raw: Any, line: int | None) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    where = f" (line {line})" if line else ""
    named = f" {excerpt(name)}" if isinstance(name, str) and name else ""
    return f"{source}: deployments.{index}{named}{where}"


def read_fleet(path: Path) -> Fleet:
    """The manifest at `path`: bounded reading, defaults merged, every entry validated."""
    from llm_inventory.spec.errors import from_validation
    from llm_inventory.spec.yaml_io import item_lines, parse_json, parse_yaml, read_text

    text = read_text(path)
    source = str(path)
    data = parse_json(text, source) if path.suffix == ".json" else parse_yaml(text, source)
    if not isinstance(data, dict):
        raise InputError(source, "expected a mapping with a `deployments:` list at the top "
                         f"level, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - {"defaults", "deployments"})
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], ["deployments", "defaults"], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"{source}: {excerpt(unknown[0])}", f"unknown key{hint}; a fleet "
                         "manifest holds `deployments:` and optional `defaults:`")
    entries = data.get("deployments")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{source}: deployments", "must be a non-empty list of deployments "
                         "(see `inventory schema fleet`)")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise InputError(f"{source}: defaults", "must be a mapping of deployment settings")
    lines: list[int | None] = list(item_lines(text, "deployments")) if path.suffix != ".json" \
        else []
    lines += [None] * (len(entries) - len(lines))
    deployments: list[Deployment] = []
    for index, raw in enumerate(entries):
        label = entry_label(source, index, raw, lines[index])
        if not isinstance(raw, dict):
            raise InputError(label, f"expected a mapping of settings, got {type(raw).__name__}")
        try:
            deployments.append(Deployment.model_validate({**defaults, **raw}))
        except ValidationError as exc:
            raise from_validation(exc, label) from exc
        except InputError as exc:  # a unit parser inside a validator
            raise InputError(f"{label}: {exc.field}", exc.message) from exc
    if len(deployments) > 10_000:
        raise InputError(f"{source}: deployments", "holds more than 10,000 deployments")
    return Fleet(source=source, folder=str(path.parent), deployments=deployments, lines=lines)
