"""The layer-kind registry: one module per kind, registered in `BUILT_IN`, in order.

Adding a kind is one module defining `KIND` (a `Kind` subclass instance), its name in
`BUILT_IN`, and its test in `tests/engine/kinds/`; nothing outside this package learns its
name. `register` adds a kind at run time (plugins, tests). Modules load on first use, and
the package itself imports no pydantic, so that `uniform` (the flag kinds of `inventory kv`
sized on plain integers) loads alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from llm_inventory.errors import InputError
from llm_inventory.spec.names import LayerKind

if TYPE_CHECKING:
    from llm_inventory.engine.kinds.base import Kind, ShapeRule
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import Stack

_BASE_NAMES = ("Kind", "ShapeRule", "StateLayer")


def __getattr__(name: str) -> Any:
    """`Kind`, `ShapeRule` and `StateLayer`, from `base` when first asked for."""
    if name in _BASE_NAMES:
        from llm_inventory.engine.kinds import base, layer

        return getattr(layer if name == "StateLayer" else base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# Module names under this package, in the order tables list their kinds: the built-in
# layer kinds' names (spec/names.py).
BUILT_IN = tuple(kind.value for kind in LayerKind)

_registry: dict[str, Kind] | None = None


def _kinds() -> dict[str, Kind]:
    global _registry
    if _registry is None:
        found: dict[str, Kind] = {}
        for module in BUILT_IN:
            kind = importlib.import_module(f"{__name__}.{module}").KIND
            found[kind.name] = kind
            found.setdefault(kind.state, kind)
        _registry = found
    return _registry


def register(kind: Kind) -> Kind:
    """Add (or replace) a kind under its layer name and its state name."""
    registry = _kinds()
    registry[kind.name] = kind
    registry[kind.state] = kind
    return kind


def unregister(kind: Kind) -> None:
    """Remove a kind added by `register` (tests restore the registry with it)."""
    registry = _kinds()
    for key in {kind.name, kind.state}:
        if registry.get(key) is kind:
            del registry[key]


def names() -> list[str]:
    """Every layer-kind name, built-in ones first, in registry order."""
    return list(dict.fromkeys(kind.name for kind in _kinds().values()))


def get(name: str) -> Kind:
    """The kind a layer or state name refers to; InputError when none is registered."""
    if _registry is None and name in BUILT_IN:  # its own module alone: no other kind loads
        own: Kind = importlib.import_module(f"{__name__}.{name}").KIND
        return own
    kind = _kinds().get(name)
    if kind is None:
        raise InputError("layer_types", f"unknown layer kind {name!r}; known: "
                         + ", ".join(names()))
    return kind


def order(name: str) -> int:
    """A kind's position in the registry (for stable listing)."""
    return names().index(get(name).name)


def of_layer(stack: Stack, index: int) -> Kind:
    """The kind of decoder layer `index`."""
    return get(stack.kind_of(index))


def mixers(stack: Stack, index: int) -> list[tuple[Kind, str]]:
    """(kind, module) of every mixer in layer `index`: its own, the ones every layer runs in
    parallel beside it (Falcon-H1's Mamba-2 beside attention, `parallel_mixers`), then the
    cross-attention to the encoder every layer of a `cross_attention` stack adds (Whisper's
    `encoder_attn`)."""
    own = of_layer(stack, index)
    found = [(own, own.module)]
    for name in stack.parallel_mixers:
        beside = get(name)
        found.append((beside, beside.module))
    if stack.cross_attention and not own.reads_encoder:
        found.append((get("cross"), "encoder_attn"))
    return found


def present(stack: Stack) -> list[Kind]:
    """The distinct kinds of a stack's mixers, in registry order."""
    seen = {id(kind): kind for i in range(stack.layers) for kind, _ in mixers(stack, i)}
    return sorted(seen.values(), key=lambda kind: order(kind.name))


def variants(stack: Stack) -> list[tuple[Kind, Stack]]:
    """Each distinct (kind, layer shape) of a stack's mixers — a kind whose layers differ by
    override appears once per shape — in registry order, then layer order."""
    seen: dict[tuple[int, int], tuple[int, Kind, Stack]] = {}
    for index in range(stack.layers):
        shaped = stack.at(index)
        for kind, _ in mixers(stack, index):
            seen.setdefault((id(kind), id(shaped)), (index, kind, shaped))
    ordered = sorted(seen.values(), key=lambda v: (order(v[1].name), v[0]))
    return [(kind, shaped) for _, kind, shaped in ordered]


def reads_encoder(stack: Stack) -> bool:
    """Whether any mixer of the stack attends to an encoder's output."""
    return any(kind.reads_encoder for kind in present(stack))


__all__ = ["BUILT_IN", "Kind", "ShapeRule", "StateLayer", "get", "mixers", "names", "of_layer",
           "present", "reads_encoder", "register", "unregister", "variants"]
