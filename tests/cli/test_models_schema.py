"""`inventory models` and `inventory schema` through Typer's runner: JSON parsed first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Invoke

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# --- inventory models -----------------------------------------------------------------------


def _models(invoke: Invoke) -> dict[str, dict[str, Any]]:
    run = invoke("models", "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["schema_version"] == 1
    return {m["name"]: m for m in data["models"]}


def test_models_json_lists_every_preset_with_its_source(invoke: Invoke) -> None:
    models = _models(invoke)
    for name in ("llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b",
                 "whisper-large-v3", "bge-large", "flux-dev"):
        assert name in models
    assert all(m["source"] and m["file"] for m in models.values())


def test_models_json_figures(invoke: Invoke) -> None:
    models = _models(invoke)
    llama = models["llama-3.1-70b"]
    # transformers 5.24.0, meta device: 70,553,706,496 (tests/data/models/reference.json);
    # KV: 2 x 8 KV heads x 128 x 2 B x 80 layers = 327,680 B per token (the seed's 320 KiB).
    assert llama["family"] == "dense"
    assert llama["parameters"] == 70_553_706_496
    assert llama["kv_bytes_per_token"] == 327_680
    assert llama["weight_bytes"] == 2 * 70_553_706_496
    mixtral = models["mixtral-8x7b"]
    assert (mixtral["parameters"], mixtral["active_parameters"]) == (46_702_792_704,
                                                                     12_879_925_248)
    # MLA keeps one latent of 512 + 64 per layer: 576 x 2 B x 61 layers.
    assert models["deepseek-v3"]["kv_bytes_per_token"] == 576 * 2 * 61
    assert models["bge-large"]["kv_bytes_per_token"] is None
    flux = models["flux-dev"]
    assert flux["family"] == "diffusion" and flux["parameters_given"] is True
    assert flux["parameters"] == 4_762_310_656 + 123_060_480 + 11_901_408_320 + 83_819_683


def test_models_yaml_matches_json(invoke: Invoke) -> None:
    as_json = invoke("models", "-f", "json").json()
    as_yaml = yaml.safe_load(invoke("models", "-f", "yaml").stdout)
    assert as_json == as_yaml


def test_models_table(invoke: Invoke) -> None:
    run = invoke("models")
    assert run.code == 0
    assert "llama-3.1-70b" in run.stdout
    assert "320 KiB" in run.stdout
    assert "FLUX.1" not in run.stdout  # the table shows names, the detail view descriptions
    assert run.stderr == ""


def test_models_detail_by_name_and_alias(invoke: Invoke) -> None:
    detail = invoke("models", "llama-3.1-70b", "-f", "json").json()
    assert detail["schema_version"] == 1
    assert detail["name"] == "llama-3.1-70b"
    assert sum(c["parameters"] for c in detail["by_component"]) == detail["parameters"]
    assert detail["layer_kinds"] == [{"kind": "full", "layers": 80}]
    by_alias = invoke("models", "meta-llama/Llama-3.1-70B", "-f", "json").json()
    assert by_alias == detail


def test_models_detail_table_keeps_brackets(invoke: Invoke) -> None:
    run = invoke("models", "flux-dev")
    assert run.code == 0
    assert "FLUX.1 [dev]" in run.stdout  # not swallowed as console markup
    assert "11.9 B flow transformer" in run.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["models", "lama-3.1-70b"], "did you mean llama-3.1-70b"),
        (["models", "no-such-model"], "is not a preset"),
        (["models", " "], "is not a preset"),
        (["models", "--format", "xml"], "--format"),
        (["models", "llama-3.1-70b", "extra"], "unexpected extra argument"),
        (["models", "--no-such-flag"], "--no-such-flag"),
        (["schema", "--format", "csv"], "--format"),
        (["schema", "extra"], "unknown schema 'extra'; use model or fleet"),
        (["schema", "fleet", "extra"], "unexpected extra argument"),
    ],
)
def test_bad_input_is_one_line_exit_2(invoke: Invoke, args: list[str], needle: str) -> None:
    run = invoke(*args)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert needle.lower() in run.stderr.lower()
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("command", ["models", "schema"])
def test_help_has_an_example(invoke: Invoke, command: str) -> None:
    run = invoke(command, "--help")
    assert run.code == 0
    assert f"Example: inventory {command}" in run.stdout


# --- inventory schema -----------------------------------------------------------------------


def _schema(invoke: Invoke) -> dict[str, Any]:
    run = invoke("schema")
    assert run.code == 0, run.stderr
    document: dict[str, Any] = run.json()
    return document


def test_schema_is_json_schema_of_the_model_description(invoke: Invoke) -> None:
    schema = _schema(invoke)
    assert schema["$id"].startswith("urn:llm-inventory:")
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["title"] == "llm-inventory model description"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert {"name", "family"} <= set(schema["required"])
    assert {"name", "family", "dtype", "decoder", "encoder", "diffusion", "coarse",
            "quantization"} <= set(schema["properties"])
    assert {"Stack", "MoE", "MLA", "Encoder", "Media", "Diffusion", "Coarse"} <= set(
        schema["$defs"])


def test_schema_yaml_matches_json(invoke: Invoke) -> None:
    assert yaml.safe_load(invoke("schema", "-f", "yaml").stdout) == _schema(invoke)


def test_schema_table_lists_the_top_level_fields(invoke: Invoke) -> None:
    run = invoke("schema", "--format", "table")
    assert run.code == 0
    for field in ("name", "family", "decoder", "diffusion", "coarse"):
        assert field in run.stdout


_TYPES: dict[str, Any] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _errors(schema: dict[str, Any], value: Any, root: dict[str, Any], at: str = "") -> list[str]:
    """A minimal JSON Schema check: the keywords pydantic emits for the model description."""
    if "$ref" in schema:
        return _errors(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], value, root, at)
    if "anyOf" in schema:
        # The closest option speaks for the value (a Stack, rather than null).
        return min((_errors(s, value, root, at) for s in schema["anyOf"]), key=len)
    found: list[str] = []
    if "type" in schema and not _is(schema["type"], value):
        return [f"{at}: expected {schema['type']}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{at}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        found.append(f"{at}: {value} < {schema['minimum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        found.append(f"{at}: {value} <= {schema['exclusiveMinimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        found.append(f"{at}: {value} > {schema['maximum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found += [f"{at}.{k}: required" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                found += _errors(props[key], item, root, f"{at}.{key}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{at}.{key}: unknown key")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += _errors(schema["additionalProperties"], item, root, f"{at}.{key}")
    if isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                found += _errors(sub, item, root, f"{at}[{i}]")
    return found


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "devices.yaml"))
def test_schema_validates_every_example(invoke: Invoke, name: str) -> None:
    schema = _schema(invoke)
    document = yaml.safe_load((EXAMPLES / name).read_text())
    assert _errors(schema, document, schema) == []


def test_schema_catches_a_misspelt_key(invoke: Invoke) -> None:
    schema = _schema(invoke)
    document = yaml.safe_load((EXAMPLES / "dense-70b.yaml").read_text())
    document["decoder"]["layrs"] = 80
    document["family"] = "transformer"
    errors = _errors(schema, document, schema)
    assert ".decoder.layrs: unknown key" in errors
    assert any(e.startswith(".family:") for e in errors)
