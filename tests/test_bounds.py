"""The bounds: every integer option has one, each is checked at parse with a telling line,
none is below a real value in the corpora, and YAML and JSON documents are bounded."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.main import get_command

from llm_inventory import bounds
from llm_inventory.cli.app import app
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec import yaml_io
from tests.conftest import ROOT, Invoke

GROUP: Any = get_command(app)


def _annotation(command: Any, name: str) -> Any:
    """The type the command's function declares for option `name` (Annotated stripped)."""
    function = getattr(command.callback, "__wrapped__", command.callback)
    hint = typing.get_type_hints(function).get(name)
    return hint


def _integer_options() -> list[tuple[str, Any]]:
    found = []
    for name, command in sorted(GROUP.commands.items()):
        for param in command.params:
            annotation = _annotation(command, str(param.name))
            if int in (annotation, *typing.get_args(annotation)) and not param.is_flag:
                found.append((name, param))
    return found


INTEGER_OPTIONS = _integer_options()


def test_every_integer_option_has_a_bound() -> None:
    assert len(INTEGER_OPTIONS) > 40
    missing = sorted({f"{c} {p.opts[0]}" for c, p in INTEGER_OPTIONS
                      if p.name not in bounds.OPTIONS})
    assert not missing


def test_every_bound_has_a_reason() -> None:
    found = [v for v in vars(bounds).values() if isinstance(v, bounds.Bound)]
    assert len(found) > 20
    for bound in found:
        assert bound.limit > bound.low >= 0
        assert bound.reason and "\n" not in bound.reason


@pytest.mark.parametrize(("command", "param"), INTEGER_OPTIONS,
                         ids=[f"{c}{p.opts[0]}" for c, p in INTEGER_OPTIONS])
def test_one_past_each_bound_is_refused_at_parse(invoke: Invoke, command: str,
                                                 param: Any) -> None:
    bound = bounds.OPTIONS[param.name]
    base = {"inventory": ["llama-3.1-8b"], "compare": ["llama-3.1-8b", "mixtral-8x7b"],
            "placement": ["llama-3.1-8b", "--device", "h100"],
            "recommend": ["llama-3.1-8b", "--device", "h100"],
            "pack": ["llama-3.1-8b", "--device", "h100"],
            "sweep": ["llama-3.1-8b", "--device", "h100"]}.get(command, [])
    after = {"launch": ["--", "vllm", "serve", "llama-3.1-8b"]}.get(command, [])
    run = invoke(command, *base, param.opts[0], str(bound.limit + 1), *after)
    assert run.code == 2
    assert run.stdout == ""
    assert param.opts[0] in run.stderr
    assert f"{bound.limit:,}" in run.stderr
    assert str(bound.limit + 1) in run.stderr


def _integers(data: Any, key: str = "") -> list[tuple[str, int]]:
    if isinstance(data, dict):
        return [found for k, v in data.items() for found in _integers(v, k)]
    if isinstance(data, list):
        return [found for v in data for found in _integers(v, key)]
    if isinstance(data, int) and not isinstance(data, bool):
        return [(key, data)]
    return []


def test_no_real_config_meets_a_config_bound() -> None:
    files = sorted((ROOT / "tests" / "data").glob("*/*.json"))
    checked = 0
    for path in files:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "model_type" not in data:
            continue
        for key, value in _integers(data):
            if key.endswith("_token_id") or key.endswith("token_index") or "tokens" in key:
                continue  # token ids and lists are not read as counts
            assert value <= bounds.config_bound(key).limit, (path.name, key, value)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize(("key", "bound"), [
    ("num_hidden_layers", bounds.LAYERS), ("max_window_layers", bounds.LAYERS),
    ("sliding_window_pattern", bounds.LAYERS), ("first_k_dense_replace", bounds.LAYERS),
    ("block_count", bounds.LAYERS), ("max_position_embeddings", bounds.CONTEXT),
    ("sliding_window", bounds.CONTEXT), ("num_local_experts", bounds.EXPERTS),
    ("n_routed_experts", bounds.EXPERTS), ("num_key_value_heads", bounds.HEADS),
    ("attention.head_count", bounds.HEADS), ("hidden_size", bounds.WIDTH),
    ("shared_expert_intermediate_size", bounds.WIDTH), ("vocab_size", bounds.VOCAB),
    ("some_new_width", bounds.WIDTH),
])
def test_config_keys_are_bounded_by_what_they_count(key: str, bound: bounds.Bound) -> None:
    assert bounds.config_bound(key) is bound


# --- excerpts ----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "shown"), [
    ("a" * 100_000, "'" + "a" * 40 + "'… (100,000 characters)"),
    (10**5000, "a 5,001-digit integer"),
    (-(10**50), "a negative 51-digit integer"),
    (2**64, "18446744073709551616"),
    ([1] * 1000, "[1, 1, 1, 1, 1, 1, ...] (1,000 entries)"),
    ({"a": [10**5000]}, "{'a': [a 5,001-digit integer]}"),
    ("\ud800", "'\\ud800'"),
    (True, "True"),
], ids=range(8))
def test_excerpt(value: object, shown: str) -> None:
    assert excerpt(value) == shown


# --- YAML and JSON documents --------------------------------------------------------------


def test_yaml_uses_libyaml_when_pyyaml_has_it() -> None:
    if yaml.__with_libyaml__:
        assert issubclass(yaml_io._Loader, yaml.CSafeLoader)
    assert issubclass(yaml_io._Loader, yaml.SafeLoader | yaml.CSafeLoader)


def _nest(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_nesting_up_to_the_bound_is_read() -> None:
    depth = bounds.DOCUMENT_DEPTH
    assert yaml_io.parse_yaml(_nest(depth), "f.yaml") is not None
    assert yaml_io.parse_json(_nest(depth), "f.json") is not None
    for text, parse in ((_nest(depth + 1), yaml_io.parse_yaml),
                        (_nest(depth + 1), yaml_io.parse_json)):
        with pytest.raises(InputError, match="nests deeper than 64 levels"):
            parse(text, "f")


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7)]
    with pytest.raises(InputError, match="200,000 YAML nodes"):
        yaml_io.parse_yaml("\n".join(lines), "bomb.yaml")


def test_aliases_are_counted() -> None:
    text = "a: &a 1\n" + "".join(f"k{i}: *a\n" for i in range(bounds.YAML_ALIASES + 1))
    with pytest.raises(InputError, match="more than 64 YAML aliases"):
        yaml_io.parse_yaml(text, "f.yaml")


def test_a_large_json_array_is_refused() -> None:
    with pytest.raises(InputError, match="200,000 JSON values"):
        yaml_io.parse_json("[" + ",".join(["1"] * 200_001) + "]", "f.json")


@pytest.mark.parametrize("text", ["!!int 1.5", "!!timestamp soon", "!!bool 24",
                                  "!!float abc", "x: " + "9" * 5000])
def test_values_a_tag_cannot_construct_are_one_line(text: str) -> None:
    with pytest.raises(InputError, match=r"line 1, column \d+: !!\w+ value .* cannot be read"):
        yaml_io.parse_yaml(text, "f.yaml")


def test_reading_errors_name_the_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be read: File name too long"):
        yaml_io.read_text(tmp_path / ("x" * 5000))
