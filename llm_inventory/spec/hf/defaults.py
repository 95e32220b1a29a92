"""Configuration classes' defaults, from package data (`data/hf-defaults/<model_type>.json`).

One file per transformers configuration class (keyed by its `model_type`), read on first use.
It cites the class's source and holds:
- `defaults`: the class's default for each key the importer reads. A config that leaves a
  key out (or sets it to null) takes it, as the class's `__init__` would.
- `nested_only`: keys those defaults fill only in a nested config (`text_config`,
  `vision_config` …), where transformers writes just the values that differ from the class
  (`PretrainedConfig.to_diff_dict`). A top-level config.json carries them itself — its shape,
  and its context length, unknown when absent — so there they are never filled in, and in
  a nested config an explicit null is not filled either.
- `aliases`: the class's `attribute_map` names a file may use for a key instead
  (`{"num_experts": "num_local_experts"}` reads `num_local_experts` when `num_experts` is
  absent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class ClassDefaults:
    """One configuration class's defaults, as the importer applies them."""

    model_type: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    nested_only: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def filled(self) -> dict[str, Any]:
        """The defaults an absent or null key takes wherever the config sits."""
        return {k: v for k, v in self.defaults.items() if k not in self.nested_only}

    def aliased(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The mapping with each absent key read from its alias, when the file uses that."""
        out = dict(data)
        for key, alias in self.aliases.items():
            if key not in out and alias in out:
                out[key] = out[alias]
        return out


def _path(model_type: str) -> Any:
    return resources.files("llm_inventory.data").joinpath("hf-defaults").joinpath(
        f"{model_type}.json")


def has_class_defaults(model_type: str) -> bool:
    """Whether a defaults file exists for this model type (a name from a user's file)."""
    return bool(_NAME.match(model_type)) and _path(model_type).is_file()


@cache
def class_defaults(model_type: str) -> ClassDefaults:
    """The defaults of the class registered for `model_type`.

    Raises FileNotFoundError when the package has no file for it: every model type the
    registry builds, and every nested class a builder reads, ships one.
    """
    if not _NAME.match(model_type):
        raise FileNotFoundError(f"no class defaults for model type {model_type!r}")
    data = json.loads(_path(model_type).read_text("utf-8"))
    return ClassDefaults(
        model_type=model_type,
        defaults=data.get("defaults", {}),
        nested_only=frozenset(data.get("nested_only", ())),
        aliases=data.get("aliases", {}),
        source=f"{data['class']}: {data['source']}",
    )
