"""Tensor names → component, role and layer, for Hugging Face and GGUF (llama.cpp) names.

The patterns are `names.py`'s table, read in order. Names differing only in their numbers
share one classification, so it is cached on the name with digits masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from llm_inventory.checkpoint import names
from llm_inventory.spec.model import (
    CheckpointFacts,
    CheckpointTally,
    CheckpointTensor,
    Component,
    TensorRole,
)

_ROLES = tuple((role, re.compile(pattern)) for role, pattern in names.ROLES)
_COMPONENTS = tuple((component, re.compile(pattern)) for component, pattern in names.COMPONENTS)
_LAYER = re.compile(names.LAYER)
# Bytes translation is the fastest way to mask digits (str.translate goes through a dict).
_MASK = bytes.maketrans(b"123456789", b"000000000")


def role_of(name: str) -> TensorRole:
    """Whether a tensor is a parameter, a quantization scale/zero point/index or a buffer."""
    for role, pattern in _ROLES:
        if pattern.search(name):
            return role
    return TensorRole.WEIGHT


def _component(name: str) -> Component:
    for component, pattern in _COMPONENTS:
        if pattern.search(name):
            return component
    return Component.OTHER


@lru_cache(maxsize=16384)
def _classify_masked(masked: bytes) -> tuple[Component, TensorRole]:
    text = masked.decode("utf-8", errors="replace")
    return _component(text), role_of(text)


def classify(name: str) -> tuple[Component, TensorRole, int | None]:
    """(component, role, decoder layer index or None) of one tensor name."""
    component, role = _classify_masked(name.encode("utf-8", errors="replace").translate(_MASK))
    layer = None
    if component not in (Component.ENCODER, Component.PROJECTOR):
        match = _LAYER.search(name)
        if match is not None:
            layer = int(match.group(1))
    return component, role, layer


def _tally(totals: dict[str, list[int]]) -> list[CheckpointTally]:
    return [CheckpointTally(key=str(k), tensors=v[0], elements=v[1], bytes=v[2])
            for k, v in sorted(totals.items(), key=lambda kv: (-kv[1][2], kv[0]))]


def _add(totals: dict[str, list[int]], key: str, elements: int, size: int) -> None:
    entry = totals.get(key)
    if entry is None:
        totals[key] = [1, elements, size]
    else:
        entry[0] += 1
        entry[1] += elements
        entry[2] += size


def dtype_tallies(tensors: Iterable[CheckpointTensor]) -> list[CheckpointTally]:
    """Tensors, elements and bytes per stored dtype, largest first."""
    totals: dict[str, list[int]] = {}
    for t in tensors:
        _add(totals, t.dtype or "?", t.elements or 0, t.bytes or 0)
    return _tally(totals)


def component_key(tensor: CheckpointTensor, stack_layers: int | None) -> str:
    """The component a tensor is tallied under: `mtp` past the decoder's layer count."""
    if stack_layers is not None and tensor.layer is not None and tensor.layer >= stack_layers:
        return "mtp"
    return str(tensor.component)


def build_facts(
    *,
    fmt: str,
    path: str,
    files: list[str],
    tensors: list[CheckpointTensor],
    headers_read: bool,
    total_bytes: int,
    stack_layers: int | None,
    metadata: dict[str, str] | None = None,
    notes: list[str] | None = None,
) -> CheckpointFacts:
    """Summarise a tensor list into the facts a ModelSpec carries (one pass)."""
    dtypes: dict[str, list[int]] = {}
    components: dict[str, list[int]] = {}
    roles: dict[str, list[int]] = {}
    for t in tensors:
        elements, size = t.elements or 0, t.bytes or 0
        _add(dtypes, t.dtype or "?", elements, size)
        _add(components, component_key(t, stack_layers), elements, size)
        _add(roles, t.role, elements, size)
    return CheckpointFacts(
        format="gguf" if fmt == "gguf" else "safetensors",
        path=path,
        files=files,
        headers_read=headers_read,
        tensor_count=len(tensors),
        total_bytes=total_bytes,
        elements=sum(v[1] for v in dtypes.values()) if headers_read else None,
        by_dtype=_tally(dtypes) if headers_read else [],
        by_component=_tally(components),
        by_role=_tally(roles),
        metadata=metadata or {},
        notes=notes or [],
        tensors=tensors,
    )
