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
    close = closest(name)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise InputError(
        "model",
        f"{name!r} is not a preset, a model file or a folder{hint}; `inventory models` "
        f"lists the {len(presets())} presets",
    )


def closest(name: str, n: int = 3) -> list[str]:
    """The presets whose name or alias reads most like `name` (a Hub id compares by its
    name part), best first."""
    wanted = _key(name.rsplit("/", 1)[-1])
    keys: dict[str, str] = {}
    for preset in presets():
        for key in (preset.name, *preset.aliases):
            keys.setdefault(_key(key.rsplit("/", 1)[-1]), preset.name)
    # a name that extends a preset's (an -Instruct-2507 release of it) reads most alike
    stems = sorted((k for k in keys if wanted.startswith(k) and len(k) > 3), key=len,
                   reverse=True)
    found = stems + difflib.get_close_matches(wanted, list(keys), n=3 * n, cutoff=0.5)
    return list(dict.fromkeys(keys[k] for k in found))[:n]


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
