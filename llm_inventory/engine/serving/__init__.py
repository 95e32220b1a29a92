"""The serving-engine registry: one module per engine and accounting era.

Adding an engine is one module defining `ENGINE` (a `ServingEngine`), one line in `ERAS`,
and its test in `tests/engine/serving/`; placement asks the engine and nothing else learns
its name. `--engine NAME@VERSION` picks the era whose range holds VERSION.
"""

from __future__ import annotations

import importlib

from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvCapacity,
    KvLayer,
    LaunchCommand,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
)
from llm_inventory.errors import InputError

# (engine name, lowest version, module), newest era of each engine first; the first era of
# an engine is its default. Versions compare as dotted integers.
ERAS: tuple[tuple[str, str, str], ...] = (
    ("vllm", "0.21", "vllm_v21"),
    ("vllm", "0.11", "vllm"),
    ("vllm", "0.2", "vllm_v0"),
    ("sglang", "0.5.20", "sglang"),
    ("sglang", "0.5.10", "sglang_graph"),
    ("sglang", "0.5.6", "sglang_mamba"),
    ("sglang", "0.5.3", "sglang_reserve"),
    ("sglang", "0.4.10", "sglang_swa"),
    ("sglang", "0.4.8", "sglang_gpu"),
    ("sglang", "0.4.7", "sglang_047"),
    ("sglang", "0.4.6", "sglang_046"),
    ("sglang", "0.4", "sglang_tp"),
    ("llamacpp", "7880", "llamacpp"), ("llamacpp", "7000", "llamacpp_b7000"),
    ("llamacpp", "5913", "llamacpp_b5913"), ("llamacpp", "5300", "llamacpp_b5300"),
    ("llamacpp", "2862", "llamacpp_b2862"), ("ik_llama", "1", "llamacpp_ik"),
    ("trtllm", "1.0", "trtllm"), ("trtllm", "0.9", "trtllm_engine_path"),
)

_loaded: dict[str, ServingEngine] = {}
_extra: dict[str, ServingEngine] = {}


def _module(module: str) -> ServingEngine:
    if module not in _loaded:
        engine = importlib.import_module(f"{__name__}.{module}").ENGINE
        if not isinstance(engine, ServingEngine):
            raise TypeError(f"{module}.ENGINE is not a ServingEngine")
        _loaded[module] = engine
    return _loaded[module]


def _version(text: str, field: str) -> tuple[int, ...]:
    from llm_inventory.bounds import version_parts

    return version_parts(field, text)


def names() -> list[str]:
    """Every engine name, in registry order."""
    return list(dict.fromkeys([name for name, _, _ in ERAS] + list(_extra)))


def register(engine: ServingEngine) -> ServingEngine:
    """Add an engine at run time under its name (plugins, tests)."""
    _extra[engine.name] = engine
    return engine


def unregister(engine: ServingEngine) -> None:
    if _extra.get(engine.name) is engine:
        del _extra[engine.name]


def get(spec: str = "vllm", field: str = "engine") -> ServingEngine:
    """The engine `NAME` or `NAME@VERSION` names; InputError for an unknown one."""
    name, _, version = spec.strip().partition("@")
    name = name.strip().lower()
    if name in _extra:
        return _extra[name].at_version(version.strip()) if version else _extra[name]
    eras = [(low, module) for engine, low, module in ERAS if engine == name]
    if not eras:
        raise InputError(field, f"unknown engine {name!r}; known: {', '.join(names())}")
    if not version:
        return _module(eras[0][1])
    wanted = _version(version, field)
    for low, module in eras:
        if wanted >= _version(low, field):
            return _module(module).at_version(version.strip().lstrip("v"))
    lowest = eras[-1][0]
    raise InputError(field, f"{name} {version} predates the releases modelled (from {lowest})")


def era_ranges() -> list[tuple[ServingEngine, str, str | None]]:
    """Every era with the releases it covers: (engine, lowest, the next era's lowest or
    None), in registry order; run-time engines cover any release."""
    found: list[tuple[ServingEngine, str, str | None]] = []
    above: dict[str, str] = {}
    for name, low, module in ERAS:
        found.append((_module(module), low, above.get(name)))
        above[name] = low
    return found + [(engine, engine.version, None) for engine in _extra.values()]


def all_eras() -> list[ServingEngine]:
    """Every engine era, in registry order (for `inventory engines`)."""
    return [_module(module) for _, _, module in ERAS] + list(_extra.values())


__all__ = ["ERAS", "EngineSettings", "KvCapacity", "KvLayer", "LaunchCommand", "LaunchSettings",
           "PoolLayout",
           "ReserveEstimate",
           "ServingEngine", "StageShape", "all_eras", "era_ranges", "get", "names", "register",
           "unregister"]
