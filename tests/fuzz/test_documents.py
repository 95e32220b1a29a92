"""Fuzz the documents the tool reads: real config.json files and YAML model descriptions,
mutated, and device files (harness invariants)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import values
from tests.fuzz.harness import ROOT, fuzz, run

CONFIGS = values.configs()
YAML_MODELS = values.yaml_models()
CATALOG = yaml.safe_load((ROOT / "llm_inventory" / "data" / "devices.yaml").read_text())
DEVICE_FILE = yaml.safe_load((ROOT / "examples" / "devices.yaml").read_text())

# What each document is fed to: every command that loads a model, and the placement search.
MODEL_COMMANDS = [
    ["inventory", "{}", "--format", "json"],
    ["inventory", "{}"],
    ["placement", "{}", "--device", "h100", "--format", "json"],
    ["kv", "--model", "{}", "--format", "json"],
    ["route", "--model", "{}", "--steps", "20"],
]


@contextmanager
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="inventory-fuzz-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _feed(command: list[str], path: Path) -> None:
    run([str(path) if part == "{}" else part for part in command])


def test_the_corpora_are_there() -> None:
    assert len(CONFIGS) >= 30
    assert len(YAML_MODELS) >= 5


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=lambda c: c[0])
@fuzz(15)
@given(data=st.data())
def test_mutated_config_json(command: list[str], data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(CONFIGS), label="config")
    document = data.draw(values.mutated(json.loads(source.read_text())))
    with folder() as where:
        path = where / "config.json"
        path.write_text(values.json_text(document), encoding="utf-8", errors="surrogatepass")
        _feed(command, data.draw(st.sampled_from([path, where]), label="path"))


@pytest.mark.parametrize("command", MODEL_COMMANDS[:3], ids=lambda c: c[0])
@fuzz(15)
@given(data=st.data())
def test_mutated_yaml_model(command: list[str], data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(YAML_MODELS), label="model")
    text = data.draw(values.yaml_text(yaml.safe_load(source.read_text())))
    with folder() as where:
        path = where / "model.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _feed(command, path)


@fuzz(25)
@given(data=st.data())
def test_mutated_devices_file(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from([DEVICE_FILE, {"devices": CATALOG["devices"][:3]},
                                      CATALOG["devices"][0]]), label="base")
    text = data.draw(values.yaml_text(base))
    with folder() as where:
        path = where / data.draw(st.sampled_from(["fleet.yaml", "fleet.json"]))
        if path.suffix == ".json":
            text = values.json_text(data.draw(values.mutated(base)))
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        ids = [d.get("id") for d in (base.get("devices", [base]) if isinstance(base, dict)
                                     else base) if isinstance(d, dict)]
        device = data.draw(st.sampled_from([str(i) for i in ids if i] or ["h100"]))
        command = data.draw(st.sampled_from([
            ["devices", "--devices-file", str(path), "--format", "json"],
            ["devices", device, "--devices-file", str(path)],
            ["placement", "llama-3.1-8b", "--devices-file", str(path), "--device", device,
             "--format", "json"],
        ]))
        run(command)
