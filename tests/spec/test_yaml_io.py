"""YAML input: libyaml's parser, the pure-Python parser's words for errors, the alias cap,
and the bundled catalogs parsed once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_inventory.errors import InputError
from llm_inventory.spec import devices, presets, yaml_io
from tests.conftest import ROOT

BUNDLED = sorted([*(ROOT / "llm_inventory" / "data").glob("**/*.yaml"),
                  *(ROOT / "examples").glob("*.yaml")])


def test_the_libyaml_loader_is_used() -> None:
    # PyYAML's standard wheels carry libyaml; without it every YAML read is ~8× slower.
    assert yaml_io.SAFE_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_both_parsers_read_every_bundled_file_alike(path: Path) -> None:
    text = path.read_text("utf-8")
    assert yaml_io.parse_yaml(text, path.name) == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("text", [
    "a: [1, 2",
    "a: b: c",
    "a:\n  - x\n - y",
    "x: *nope",
    "\tkey: 1",
    "name: tiny\nfamily: [dense\n",
])
def test_malformed_yaml_is_reported_in_the_pure_python_parsers_words(text: str) -> None:
    with pytest.raises(yaml.MarkedYAMLError) as python:
        yaml.load(text, Loader=yaml.SafeLoader)
    mark = python.value.problem_mark
    assert mark is not None
    with pytest.raises(InputError) as ours:
        yaml_io.parse_yaml(text, "m.yaml")
    assert str(ours.value) == (f"m.yaml: malformed YAML at line {mark.line + 1}, column "
                               f"{mark.column + 1}: {python.value.problem}")


def test_aliases_past_the_cap_are_refused() -> None:
    many = "a: &x [1, 2]\nb: [" + ", ".join(["*x"] * (yaml_io.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(InputError, match=f"uses more than {yaml_io.MAX_ALIASES} YAML aliases"):
        yaml_io.parse_yaml(many, "bomb.yaml")
    few = "a: &x [1, 2]\nb: [" + ", ".join(["*x"] * yaml_io.MAX_ALIASES) + "]\n"
    assert yaml_io.parse_yaml(few, "ok.yaml")["b"][0] == [1, 2]


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    calls: list[Any] = []
    real: Callable[..., Any] = getattr(yaml, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0][:20])
        return real(*args, **kwargs)

    monkeypatch.setattr(yaml, name, counted)
    return calls


def test_the_catalog_and_the_preset_index_are_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads, event_passes = _counting(monkeypatch, "load"), _counting(monkeypatch, "parse")
    devices._catalog.cache_clear()
    devices._catalog_index.cache_clear()
    presets.presets.cache_clear()
    try:
        for _ in range(3):
            devices.resolve_device("h100")
            devices.list_devices()
            presets.find_preset("llama-3.1-70b")
        assert len(loads) == 2
        # one event pass each (the depth, node and alias bounds), in libyaml's parser
        assert len(event_passes) <= 2
    finally:
        devices._catalog.cache_clear()
        devices._catalog_index.cache_clear()
        presets.presets.cache_clear()
