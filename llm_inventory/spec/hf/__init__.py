"""Hugging Face `config.json` → ModelSpec.

Each supported `model_type` has a builder that reads the config the way transformers' own
configuration and modelling code do (including their defaults for absent keys) and
describes the model's tensors and state. Builders live in family modules and register
themselves in `BUILDERS`; `from_hf_config` dispatches on `model_type`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

from llm_inventory.bounds import LIST, RAW_NUMBER, config_bound
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.model import ModelSpec

Builder = Callable[["HFConfig"], ModelSpec]

# Family modules, imported on first use; each defines BUILDERS: dict[str, Builder].
_FAMILY_MODULES = ("decoders", "hybrid", "multimodal", "encoders")


class HFConfig:
    """Typed, validated access to one `config.json` mapping (or a nested sub-config)."""

    def __init__(self, data: dict[str, Any], label: str, name: str | None = None) -> None:
        self.data = data
        self.label = label
        self.name = name or str(data.get("_name_or_path") or "")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as parsed (default when absent), once every number in it is finite and
        within ±2**53 (bounds.RAW_NUMBER), so arithmetic on it cannot overflow."""
        value = self.data.get(key)
        if value is None:
            return default
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif not isinstance(item, bool) and isinstance(item, int | float) and not (
                    -RAW_NUMBER <= item <= RAW_NUMBER):  # NaN compares false as well
                raise self._fail(key, f"holds {excerpt(item)}; numbers in a config must be "
                                 f"finite and within ±{RAW_NUMBER:,}")
        return value

    def _fail(self, key: str, message: str) -> InputError:
        return InputError(f"{self.label}: {key}", message)

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        """An integer field (≥ minimum, ≤ the key's bound in `bounds.config_bound`); the
        transformers default when absent."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self._fail(key, "is required for this model type and missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, f"must be an integer, got {excerpt(value)}")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise self._fail(key, f"must be an integer, got {excerpt(value)}")
        if value < minimum:
            raise self._fail(key, f"must be at least {minimum}, got {excerpt(value)}")
        bound = config_bound(key)
        if value > bound.limit:
            raise self._fail(key, f"must be at most {bound.limit:,} (the bound on {bound.unit}), "
                             f"got {excerpt(value)}")
        return int(value)

    def opt_integer(self, key: str, *, minimum: int = 1) -> int | None:
        return self.integer(key, minimum=minimum) if self.has(key) else None

    def number(self, key: str, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, f"must be a number, got {excerpt(value)}")
        if not -RAW_NUMBER <= value <= RAW_NUMBER:  # NaN, infinities, huge integers
            raise self._fail(key, f"must be a finite number within ±{RAW_NUMBER:,}, got "
                             f"{excerpt(value)}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(key, f"must be true or false, got {excerpt(value)}")
        return value

    def int_list(self, key: str) -> list[int] | None:
        value = self.data.get(key)
        if value is None:
            return None
        bound = config_bound(key)
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= bound.limit
            for v in value
        ):
            raise self._fail(key, f"must be a list of integers from 0 to {bound.limit:,}, got "
                             f"{excerpt(value)}")
        if len(value) > LIST.limit:
            raise self._fail(key, f"must have at most {LIST.limit:,} entries, got "
                             f"{len(value):,}")
        return list(value)

    def str_list(self, key: str) -> list[str] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, f"must be a list of strings, got {excerpt(value)}")
        if len(value) > LIST.limit:
            raise self._fail(key, f"must have at most {LIST.limit:,} entries, got "
                             f"{len(value):,}")
        return list(value)

    def sub(self, key: str) -> HFConfig:
        """A nested config (text_config, vision_config …); empty when absent."""
        value = self.data.get(key)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self._fail(key, f"must be a mapping, got {type(value).__name__}")
        return HFConfig(value, f"{self.label}: {key}", self.name)

    @property
    def dtype(self) -> str:
        """The checkpoint's unquantized weight dtype (`torch_dtype` / `dtype`), bf16 if unset."""
        from llm_inventory.units import normalize_dtype

        value = self.data.get("torch_dtype") or self.data.get("dtype") or "bfloat16"
        if not isinstance(value, str):
            raise self._fail("torch_dtype", f"must be a dtype name, got {excerpt(value)}")
        return normalize_dtype(value, f"{self.label}: torch_dtype")


_registry: dict[str, Builder] | None = None


def builders() -> dict[str, Builder]:
    """Every registered builder, by `model_type` (family modules load on first call)."""
    global _registry
    if _registry is None:
        found: dict[str, Builder] = {}
        for module in _FAMILY_MODULES:
            try:
                family = importlib.import_module(f"{__name__}.{module}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{module}":
                    raise
                continue
            found.update(family.BUILDERS)
        _registry = found
    return _registry


def supported_model_types() -> list[str]:
    return sorted(builders())


def from_hf_config(data: dict[str, Any], label: str, name: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a parsed `config.json` mapping."""
    config = HFConfig(data, label, name)
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError(f"{label}: model_type", "missing; this does not look like a "
                         "Hugging Face config.json")
    builder = builders().get(model_type)
    if builder is None:
        raise InputError(
            f"{label}: model_type",
            f"unsupported model_type {excerpt(model_type)}; supported: "
            + ", ".join(supported_model_types()),
        )
    from pydantic import ValidationError

    from llm_inventory.spec.errors import from_validation

    try:
        return builder(config)
    except ValidationError as exc:
        raise from_validation(exc, label) from exc
