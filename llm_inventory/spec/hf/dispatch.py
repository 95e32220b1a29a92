"""Which registered builder reads a config, and with which class defaults.

The registered `model_type` decides. A config whose model type is unknown is read by the
model type whose architecture class `architectures[0]` names, as vLLM resolves a model by
its class name (`vllm/model_executor/models/registry.py`); a wrapper config (one with a
`text_config`) whose model type is unknown is read as its language model, the
`text_config`'s own model type or class. Either fallback says so in a note on the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_inventory.spec.hf import HFConfig, reads, registry
from llm_inventory.spec.hf.defaults import class_defaults
from llm_inventory.spec.model import ModelSpec

# Keys a wrapper's text model takes from the wrapper when it does not set them itself.
_INHERITED = ("_name_or_path", "torch_dtype", "dtype", "quantization_config")


# Model types with no transformers class that are read by another type's builder, and whose
# count that way is tested against a reference (tests/data/oracle-2026.json): only these
# stay exact when read through `architectures`. Kimi-K2's checkpoint code is DeepSeek-V3's.
TESTED_AS: dict[str, str] = {"kimi_k2": "deepseek_v3"}


@dataclass(frozen=True)
class Route:
    model_type: str
    data: dict[str, Any]
    label: str
    note: str = ""

    @property
    def tested(self) -> bool:
        """Whether the model type is read by its own builder, or by one tested for it."""
        return not self.note or TESTED_AS.get(str(self.own)) == self.model_type

    own: str | None = None
    wrapped: bool = False  # the text_config of a wrapper read alone: its towers are not


def _known(data: dict[str, Any]) -> tuple[str, str] | None:
    """(registered model type, how it was found) for one mapping, or None."""
    model_type = data.get("model_type")
    if isinstance(model_type, str) and model_type in registry.MODELS:
        return model_type, ""
    names = data.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str):
        found = registry.model_type_of_architecture(names[0])
        if found is not None:
            return found, names[0]
    return None


def route(data: dict[str, Any], label: str) -> Route | None:
    """How to read `data`, or None when no registered builder can."""
    own = str(data.get("model_type"))
    known = _known(data)
    if known is not None:
        model_type, by_class = known
        if not by_class:
            return Route(model_type, data, label)
        return Route(model_type, {**data, "model_type": model_type}, label, own=own, note=(
            f"model_type {own!r} is not one this tool reads; its architecture {by_class} "
            f"is {model_type}'s, so it is read as {model_type}"))
    text = data.get("text_config")
    if not isinstance(text, dict):
        return None
    inner = _known(text)
    if inner is None or not registry.is_text_model(inner[0]):
        return None
    model_type = inner[0]
    merged = {**{k: data[k] for k in _INHERITED if k in data}, **text,
              "model_type": model_type}
    return Route(model_type, merged, f"{label}: text_config", own=own, wrapped=True, note=(
        f"model_type {own!r} is not one this tool reads; its text_config is read alone, as "
        f"{model_type}: the vision or audio towers and projectors it wraps are not counted "
        "by their own architecture"))


def build(r: Route, name: str | None) -> ModelSpec:
    """Run the route's builder over the config and its class defaults."""
    cls = class_defaults(r.model_type)
    reads.note_class(r.label, r.model_type, cls.aliases)
    config = HFConfig(cls.aliased(r.data), r.label, name, defaults=cls.filled)
    return registry.builder(r.model_type)(config)
