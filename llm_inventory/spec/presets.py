"""Built-in model presets: package data, loaded on first use.

`data/presets/index.yaml` lists each preset with the file holding its shapes (a Hugging
Face `config.json` copy or a model-description YAML) and where those shapes came from.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec


class Preset(BaseModel):
    """One entry of the preset index."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    file: str
    source: str
    description: str = ""
    aliases: list[str] = []
    notes: list[str] = []


def _data_text(name: str) -> str:
    folder = resources.files("llm_inventory.data").joinpath("presets")
    return folder.joinpath(name).read_text("utf-8")


@lru_cache(maxsize=1)
def presets() -> tuple[Preset, ...]:
    """Every preset in the index, in its order."""
    from llm_inventory.spec.yaml_io import parse_yaml

    data = parse_yaml(_data_text("index.yaml"), "presets/index.yaml")
    return tuple(Preset.model_validate(entry) for entry in data["presets"])


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def find_preset(name: str) -> Preset:
    """The preset called `name` (or one of its aliases); InputError listing the rest."""
    wanted = _key(name)
    for preset in presets():
        if wanted == _key(preset.name) or wanted in {_key(a) for a in preset.aliases}:
            return preset
    names = [p.name for p in presets()]
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise InputError(
        "model",
        f"{name!r} is not a preset, a model file or a folder{hint}; presets: "
        + ", ".join(names),
    )


def hub_id(name: str) -> str | None:
    """The Hugging Face id a preset stands for (its first `org/name` alias); None when
    `name` is no preset or the preset names no Hub id."""
    try:
        preset = find_preset(name)
    except InputError:
        return None
    return next((a for a in preset.aliases if a.count("/") == 1), None)


@lru_cache(maxsize=64)
def load_preset(name: str) -> ModelSpec:
    """Build the ModelSpec of a preset, its source recorded on the spec."""
    preset = find_preset(name)
    text = _data_text(preset.file)
    label = f"preset {preset.name}"
    if preset.file.endswith(".json"):
        from llm_inventory.spec.hf import from_hf_config
        from llm_inventory.spec.yaml_io import parse_json

        data: dict[str, Any] = parse_json(text, label)
        spec = from_hf_config(data, label, preset.name)
    else:
        from llm_inventory.spec.loader import spec_from_mapping
        from llm_inventory.spec.yaml_io import parse_yaml

        spec = spec_from_mapping(parse_yaml(text, label), label)
    return spec.model_copy(update={
        "name": preset.name,
        "source": preset.source,
        "notes": [*spec.notes, *preset.notes],
    })
