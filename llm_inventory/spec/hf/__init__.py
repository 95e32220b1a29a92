"""Hugging Face `config.json` → ModelSpec.

Each supported `model_type` has a builder that reads the config the way transformers' own
configuration and modelling code do and describes the model's tensors and state. The
registry (`registry.py`) says which family module holds each builder; `from_hf_config`
dispatches on `model_type`, else on `architectures[0]`, else on `text_config.model_type`;
a decoder config none of them reads but that carries the standard keys gets a generic,
labelled estimate (`generic.py`, `exact: false`). The configuration classes' defaults for
absent keys are package data (`defaults.py`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from llm_inventory.bounds import LIST, RAW_NUMBER, config_bound
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.hf import reads, registry
from llm_inventory.spec.hf.registry import Builder
from llm_inventory.spec.model import ModelSpec

__all__ = ["Builder", "HFConfig", "builders", "from_hf_config", "supported_model_types"]


class _Noted(dict[str, Any]):
    """A config mapping that notes each key looked up in it (reads.note), so direct lookups
    in `HFConfig.data` count as reads too. Copies (`dict(data)`, `{**data}`) note nothing."""

    label = ""

    def get(self, key: str, default: Any = None) -> Any:
        reads.note(self.label, key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        reads.note(self.label, key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            reads.note(self.label, key)
        return super().__contains__(key)


class HFConfig:
    """Typed, validated access to one `config.json` mapping (or a nested sub-config).

    Every key asked for is noted under the config's label (see reads.py): what a builder
    never asked for is what it did not understand."""

    def __init__(self, data: dict[str, Any], label: str, name: str | None = None,
                 defaults: Mapping[str, Any] | None = None) -> None:
        noted = _Noted(data)
        noted.label = label
        self.data: dict[str, Any] = noted
        self.label = label
        self.name = name or str(data.get("_name_or_path") or "")
        # The configuration class's defaults for absent keys (package data, see defaults.py).
        self.defaults: Mapping[str, Any] = defaults or {}

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as parsed (the class default, else `default`, when absent), once every
        number in it is finite and within ±2**53 (bounds.RAW_NUMBER), so arithmetic on it
        cannot overflow."""
        value = self.data.get(key)
        if value is None:
            return self._default(key, default)
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

    def _default(self, key: str, default: Any) -> Any:
        """An absent key's value: the class default, else the caller's fallback."""
        value = self.defaults.get(key)
        return default if value is None else value

    def _fail(self, key: str, message: str) -> InputError:
        return InputError(f"{self.label}: {key}", message)

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        """An integer field (≥ minimum, ≤ the key's bound in `bounds.config_bound`); the
        transformers default when absent."""
        value = self.data.get(key)
        if value is None:
            default = self._default(key, default)
            if default is None:
                raise self._fail(key, "is required for this model type and missing")
            return int(default)
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

    def number(self, key: str, default: float | None = None) -> float:
        value = self.data.get(key)
        if value is None:
            default = self._default(key, default)
            if default is None:
                raise self._fail(key, "is required for this model type and missing")
            return float(default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, f"must be a number, got {excerpt(value)}")
        if not -RAW_NUMBER <= value <= RAW_NUMBER:  # NaN, infinities, huge integers
            raise self._fail(key, f"must be a finite number within ±{RAW_NUMBER:,}, got "
                             f"{excerpt(value)}")
        return float(value)

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key)
        if value is None:
            default = self._default(key, default)
            if default is None:
                raise self._fail(key, "is required for this model type and missing")
            return bool(default)
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

    def superseded(self, *keys: str) -> None:
        """Declare keys a builder leaves unread because another key it read overrides them
        (`sliding_window_pattern` under an explicit `layer_types`): they are understood,
        and do not make the count an estimate."""
        for key in keys:
            reads.note(self.label, key)

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


def builders() -> dict[str, Builder]:
    """Every registered builder, by `model_type`, importing every family module.

    A family module that is missing or broken raises: it is never skipped.
    """
    return {model_type: registry.builder(model_type) for model_type in registry.MODELS}


def supported_model_types() -> list[str]:
    """Every model type the importer reads (the registry's table; nothing is imported)."""
    return registry.supported_model_types()


def from_hf_config(data: dict[str, Any], label: str, name: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a parsed `config.json` mapping.

    Dispatch: the registered `model_type`; else, as vLLM does, the model type whose
    architecture class `architectures[0]` names; else, for a wrapper config, the
    `text_config`'s model type (its language model alone). Either fallback adds a note.
    """
    from llm_inventory.spec.hf import dispatch

    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError(f"{label}: model_type", "missing; this does not look like a "
                         "Hugging Face config.json")
    route = dispatch.route(data, label)
    from pydantic import ValidationError

    from llm_inventory.spec.errors import from_validation

    if route is None:
        from llm_inventory.spec.hf import generic

        if generic.readable(data) is None:
            raise InputError(
                f"{label}: model_type",
                f"unsupported model_type {excerpt(model_type)} (and no generic estimate: it lacks "
                + ", ".join(generic.missing_keys(data)) + "); supported: "
                + ", ".join(supported_model_types()),
            )
        try:
            return generic.generic(data, label, name)
        except ValidationError as exc:
            raise from_validation(exc, label) from exc
    with reads.recording() as read:
        try:
            spec = dispatch.build(route, name)
        except ValidationError as exc:
            raise from_validation(exc, label) from exc
        unread = reads.unread(data, label, read, reads.classes())
    if route.note:
        spec = spec.model_copy(update={"notes": [*spec.notes, route.note]})
    if route.wrapped:
        spec = _with_estimated_towers(spec, data, label)
    return earned(spec, "" if route.tested else route.note, unread)


def _with_estimated_towers(spec: ModelSpec, data: dict[str, Any], label: str) -> ModelSpec:
    """A wrapper read through its text_config: its towers, estimated generically."""
    from llm_inventory.spec.hf import generic
    from llm_inventory.spec.model import Family

    if spec.decoder is None or spec.decoder.hidden_size is None:
        return spec
    encoders, notes = generic.tower_estimates(data, label, spec.decoder.hidden_size)
    update: dict[str, Any] = {"notes": [*spec.notes, *notes]}
    if encoders:
        update.update(family=Family.VLM, encoder=encoders[0], extra_encoders=encoders[1:])
    return spec.model_copy(update=update)


def earned(spec: ModelSpec, fallback: str, unread: list[str]) -> ModelSpec:
    """The spec as exact only when its model type was read by its own builder and every key
    of the file was read or is shape-irrelevant (reads.py); else an estimate saying why."""
    if not fallback and not unread:
        return spec
    why = []
    if fallback:
        why.append(fallback)
    if unread:
        shown = ", ".join(unread[:12]) + (f" and {len(unread) - 12} more"
                                          if len(unread) > 12 else "")
        why.append(f"keys the importer does not read, which may shape the model: {shown}")
    estimated = "estimated: " + "; ".join(why)
    if spec.estimated:
        estimated = f"{spec.estimated}; {estimated}"
    return spec.model_copy(update={
        "exact": False, "estimated": estimated,
        "notes": [*spec.notes, *([] if not unread else [why[-1]])]})
