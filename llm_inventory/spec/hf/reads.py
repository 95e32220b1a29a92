"""Which config keys a builder read: the evidence behind an `exact` count.

While a config is built (`recording`), every `HFConfig` accessor (and any lookup in its
`data`) notes the key it asked for under the config's label (`path`, `path: vision_config`,
…). Afterwards `unread` walks the file's own keys: a key no builder asked for and that is not
on the reviewed list of shape-irrelevant keys (`irrelevant.py`) is one the count did not
understand, and the count is an estimate. The read set is the code itself, so it cannot
drift from it: a new builder is covered the moment it reads through `HFConfig`.

A nested mapping is judged key by key when a builder opened it as a config of its own
(`c.sub(key)`, `sub_config`); one read whole (`c.raw("rope_scaling")`) counts as understood,
except a sub-config (`*_config`), which must have been opened: a tower or language model
that was only looked at was not modelled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# label → keys read there; None when no build is being recorded.
_READS: ContextVar[dict[str, set[str]] | None] = ContextVar("hf_reads", default=None)
# label → (model type of the class reading it, {file's alias: key the builder reads}).
_CLASSES: ContextVar[dict[str, tuple[str, dict[str, str]]] | None] = ContextVar(
    "hf_classes", default=None)


def note(label: str, key: str) -> None:
    """Record that the config at `label` was asked for `key`."""
    reads = _READS.get()
    if reads is not None:
        reads.setdefault(label, set()).add(key)


def note_class(label: str, model_type: str, aliases: Mapping[str, str]) -> None:
    """The mapping at `label` is read as `model_type`'s class, which reads `alias` for `key`
    when the file uses it (`aliases` is {key: alias})."""
    found = _CLASSES.get()
    if found is not None:
        found[label] = (model_type, {alias: key for key, alias in aliases.items()})


@contextmanager
def recording() -> Iterator[dict[str, set[str]]]:
    """Record the keys read inside the block; yields label → keys."""
    reads: dict[str, set[str]] = {}
    token = _READS.set(reads)
    class_token = _CLASSES.set({})
    try:
        yield reads
    finally:
        _READS.reset(token)
        _CLASSES.reset(class_token)


def classes() -> dict[str, tuple[str, dict[str, str]]]:
    """label → (model type, {alias: key}) of the classes noted while recording."""
    return dict(_CLASSES.get() or {})


def _moot(key: str, value: Any, part: Mapping[str, Any], model_type: str) -> bool:
    """Whether an unread key cannot shape the count (irrelevant.py's lists)."""
    from llm_inventory.spec.hf.irrelevant import BY_CLASS, DEPENDS, INERT, SHAPE_IRRELEVANT

    if key in SHAPE_IRRELEVANT or key in BY_CLASS.get(model_type, {}):
        return True
    if key in INERT and value == INERT[key]:
        return True
    switch = DEPENDS.get(key)
    return switch is not None and part.get(switch, INERT.get(switch)) == INERT.get(switch)


def unread(data: Mapping[str, Any], label: str, reads: Mapping[str, set[str]],
           class_map: Mapping[str, tuple[str, Mapping[str, str]]] | None = None) -> list[str]:
    """The file's keys (dotted for nested ones) that no builder read and that are not on the
    shape-irrelevant lists, sorted."""
    from llm_inventory.spec.hf.irrelevant import WHOLE_MAPPINGS

    class_map = class_map or {}
    found: list[str] = []

    def walk(part: Mapping[str, Any], at: str, prefix: str, inherited: str = "") -> None:
        seen = reads.get(at, set())
        # A mapping opened without a class of its own is judged as its owner's, by the
        # name "owner type:key" (irrelevant.BY_CLASS).
        model_type, names = class_map.get(at, (inherited, {}))
        for key, value in part.items():
            if not isinstance(key, str) or _moot(key, value, part, model_type):
                continue
            read = key in seen or names.get(key) in seen
            nested = f"{at}: {key}"
            if isinstance(value, dict) and nested in reads:
                walk(value, nested, f"{prefix}{key}.", f"{model_type}:{key}")
            elif isinstance(value, dict) and key.endswith("_config") and value \
                    and key not in WHOLE_MAPPINGS:
                found.append(f"{prefix}{key}")  # a sub-config looked at, never modelled
            elif not read and value is not None:
                found.append(f"{prefix}{key}")

    walk(data, label, "")
    return sorted(found)
