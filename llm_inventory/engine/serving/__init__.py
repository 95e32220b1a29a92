"""The serving-engine registry: one module per engine and accounting era.

Adding an engine is one module defining `ENGINE` (a `ServingEngine`), one line in `ERAS`,
and its test in `tests/engine/serving/`; placement asks the engine and nothing else learns
its name. `--engine NAME@VERSION` picks the era whose range holds VERSION.
"""

from __future__ import annotations

import copy
import importlib
import re

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
    ("vllm", "0.33", "vllm_v33"),
    ("vllm", "0.30", "vllm_v30"),
    ("vllm", "0.29", "vllm_v29"),
    ("vllm", "0.28", "vllm_v28"),
    ("vllm", "0.26", "vllm_v26"),
    ("vllm", "0.25.1", "vllm_v25"),
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
    ("trtllm", "1.1", "trtllm_v11"), ("trtllm", "1.0", "trtllm"),
    ("trtllm", "0.9", "trtllm_engine_path"),
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


#: A release as engines spell it: dotted numbers, then at most a pre-release, post-release or
#: development tag (PEP 440's `rc1`, `.post1`, `.dev0`, `a1`, `b2`) and a local `+tag`.
_RELEASE = re.compile(r"(\d+(?:\.\d+)*)(?:[.-]?(?:rc|post|dev|a|b)\d*)*(?:\+[\w.]+)?")


def release(text: str) -> str:
    """The release a version string names: `0.5.10.post1` and `1.3.0rc1` answer as 0.5.10
    and 1.3.0 (a release candidate and a post-release share their release's rules);
    unchanged when it has no tag."""
    stripped = text.strip().lstrip("v")
    if stripped[:1] == "b" and stripped[1:2].isdigit():  # llama.cpp's b8000
        stripped = stripped[1:]
    found = _RELEASE.fullmatch(stripped)
    return found.group(1) if found else text.strip()


def _version(text: str, field: str) -> tuple[int, ...]:
    from llm_inventory.bounds import NUMBER_TEXT, version_parts
    from llm_inventory.errors import excerpt

    if len(text) > NUMBER_TEXT:  # bounded before any other reading
        return version_parts(field, text)
    try:
        return version_parts(field, release(text))
    except InputError as exc:
        if "not a dotted number" not in exc.message:
            raise
        raise InputError(field, f"version {excerpt(text)} is not a dotted number such as 0.19 "
                                "(a tag may follow: 0.5.10.post1, 1.3.0rc1)") from exc


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
            engine = _module(module).at_version(release(version))
            newest = _module(eras[0][1])
            if wanted > _version(newest.version, field):
                return _beyond(engine, release(version), newest)
            return engine
    lowest = eras[-1][0]
    raise InputError(field, f"{name} {version} predates the releases modelled (from {lowest})")


def _beyond(engine: ServingEngine, asked: str, newest: ServingEngine) -> ServingEngine:
    """`engine` answering for a release newer than the newest one its eras were read from
    (the newest era's default `version`), with a warning that says so."""
    found = copy.copy(engine)
    known = next((change for later, change in newest.later_releases.items()
                  if asked == later or asked.startswith(later + ".")), None)
    found.release_warning = (
        f"{newest.name} {asked} is newer than the newest release modelled ({newest.version}); "
        f"answered with {newest.label}'s rules, " + (
            f"which {asked} changes: {known}" if known is not None
            else "which may have changed since"))
    return found


def era_of(engine: ServingEngine) -> str:
    """The registry era (its module) an engine answers for at its version; a run-time
    engine is its own era."""
    if engine.name in _extra:
        return engine.name
    eras = [(low, module) for name, low, module in ERAS if name == engine.name]
    try:
        wanted = _version(engine.version, "engine")
    except InputError:
        return eras[0][1] if eras else engine.name
    for low, module in eras:
        if wanted >= _version(low, "engine"):
            return module
    return eras[-1][1] if eras else engine.name


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
           "ServingEngine", "StageShape", "all_eras", "era_of", "era_ranges", "get", "names",
           "register", "unregister"]
