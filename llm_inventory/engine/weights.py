"""Bytes a checkpoint holds for each tensor: its dtype, or its quantized format with scales.

Rule for a quantized matmul weight of `out × in` elements (per expert when it has experts):
bits × elements, plus one scale per block (2-D block formats), per group of `group_size`
input elements, per output row (per-channel), or per tensor, plus zero points and GPTQ's
activation-order index where the format stores them; the bits are summed, then rounded up
to whole bytes. Embeddings, norms, biases, routers and whatever the checkpoint's `ignore`
list names stay at the unquantized dtype.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

from llm_inventory.engine.gguf_tensors import GgufQuantization, tensor_bytes
from llm_inventory.engine.tensors import TensorGroup
from llm_inventory.spec.model import Component, Quantization
from llm_inventory.units import dtype_bits

# Spellings of the same module across architectures, mapped to the names tensors carry here.
_MODULE_ALIASES = (
    ("block_sparse_moe", "mlp"),
    ("feed_forward", "mlp"),
    ("mlp.router", "mlp.gate"),
    ("self_attention", "self_attn"),
    ("language_model.model.", "model."),
    ("model.language_model.", "model."),
    ("transformer.h.", "model.layers."),
)


def _alias(text: str) -> str:
    for old, new in _MODULE_ALIASES:
        text = text.replace(old, new)
    return text


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_alias(pattern))


def matches_module(pattern: str, module: str) -> bool:
    """Whether an ignore-list pattern names `module` (or one of its parents).

    `re:` patterns are regular expressions matched from the start of the module name (the
    compressed-tensors rule); others are exact names or globs that may name the module, a
    parent of it (`model.layers.*.self_attn`) or its trailing path (`lm_head`, `mlp.gate`).
    """
    if pattern.startswith("re:"):
        return _regex(pattern[3:]).match(module) is not None
    target = _alias(pattern)
    parts = module.split(".")
    candidates = {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
    candidates |= {".".join(parts[k:]) for k in range(len(parts))}
    return any(fnmatch.fnmatchcase(c, target) for c in candidates)


def _module(name: str, layer: int | None) -> str:
    base = name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name
    return base.replace("{i}", str(layer)) if layer is not None else base


def is_ignored(group: TensorGroup, layer: int | None, ignore: list[str]) -> bool:
    """Whether a quantization `ignore` pattern names this tensor's module."""
    module = _module(group.name, layer)
    return any(matches_module(p, module) for p in ignore)


# A fused projection here that a per-module table may list as its parts.
_FUSED = {"gate_up_proj": ("gate_proj", "up_proj"), "qkv_proj": ("q_proj", "k_proj", "v_proj")}


def module_scheme(group: TensorGroup, q: Quantization, layer: int | None
                  ) -> Quantization | None:
    """The scheme a per-module table (modelopt MIXED_PRECISION) gives this tensor's module,
    None when it names none (stored unquantized), as vLLM resolves a layer's prefix
    (`ModelOptMixedPrecisionConfig._resolve_quant_algo`): the module itself, its fused
    parts, a parent (`mlp.experts` for every expert), or a child it contains."""
    if group.component is Component.EMBEDDINGS or len(group.shape) < 2:
        return None
    if not group.linear and group.component is not Component.LM_HEAD:
        return None
    module = _module(group.name, layer)
    if is_ignored(group, layer, q.ignore):
        return None
    table = q.per_module
    if module in table:
        return table[module]
    parent, _, leaf = module.rpartition(".")
    parts = [table.get(f"{parent}.{p}") for p in _FUSED.get(leaf, ())]
    if parts and all(parts):
        return parts[0]
    pieces = module.split(".")
    for k in range(len(pieces) - 1, 0, -1):
        found = table.get(".".join(pieces[:k]))
        if found is not None:
            return found
    child = module + "."
    return next((s for name, s in table.items() if name.startswith(child)), None)


def quantizes(group: TensorGroup, q: Quantization, layer: int | None) -> bool:
    """Whether `q` applies to this tensor (in this layer)."""
    if q.per_module:
        return module_scheme(group, q, layer) is not None
    if not group.linear or group.component in (Component.EMBEDDINGS, Component.LM_HEAD):
        return False
    if group.component is Component.ROUTER:
        return False
    if q.experts_only and not group.experts:
        return False
    return not is_ignored(group, layer, q.ignore)


def scheme_of(group: TensorGroup, q: Quantization) -> Quantization:
    """The scheme a quantized matmul weight is stored in: the routed experts' own where the
    checkpoint keeps one (`Quantization.experts`), else `q`."""
    return q.experts if q.experts is not None and group.experts else q


def quantized_bits(shape: tuple[int, ...], experts: int, q: Quantization) -> float:
    """Bits one quantized matmul weight occupies, with its scales and zero points."""
    out, inp = shape[-2], shape[-1]
    copies = max(1, experts)
    if q.block is not None:
        scales = -(-out // q.block[0]) * -(-inp // q.block[1])
    elif q.group_size is not None:
        scales = out * -(-inp // q.group_size)
    elif q.per_channel:
        scales = out
    else:
        scales = 1
    bits = q.bits * out * inp + scales * q.scale_bits
    if q.zero_point:
        bits += scales * q.zero_point_bits
    if q.act_order_index:
        bits += inp * 32
    return bits * copies


def copy_bytes(group: TensorGroup, dtype: str, q: Quantization | None,
               layer: int | None) -> int:
    """Bytes of one copy of `group` (its tensor in `layer`) as the checkpoint stores it; a
    GGUF file type types each tensor as llama.cpp's quantizer does (`gguf_tensors`)."""
    if isinstance(q, GgufQuantization):
        return tensor_bytes(group, layer, q, dtype)
    if q is not None and q.per_module:
        scheme = module_scheme(group, q, layer)
        if scheme is not None:
            return -(-int(quantized_bits(group.shape, group.experts, scheme) + 0.5) // 8)
    elif q is not None and group.linear and quantizes(group, q, layer):
        return -(-int(quantized_bits(group.shape, group.experts, scheme_of(group, q)) + 0.5)
                 // 8)
    return -(-group.elements * dtype_bits(dtype) // 8)


_GROUP_BYTES: dict[tuple[TensorGroup, str, str], int] = {}
_MEMO_LIMIT = 1 << 16
# repr of each scheme object seen, computed once (a per-module table's runs long); the entry
# holds the object, so its id is not reused while cached.
_SCHEME_KEYS: dict[int, tuple[Quantization, str]] = {}


def _scheme_key(q: Quantization) -> str:
    hit = _SCHEME_KEYS.get(id(q))
    if hit is not None and hit[0] is q:
        return hit[1]
    if len(_SCHEME_KEYS) >= 256:
        _SCHEME_KEYS.clear()
    key = repr(q)
    _SCHEME_KEYS[id(q)] = (q, key)
    return key


def group_bytes(group: TensorGroup, dtype: str, q: Quantization | None) -> int:
    """Bytes of every copy of `group` as the checkpoint stores it.

    Memoised on (group, dtype, quantization): the per-layer ignore-list matching it needs
    is the same for every split a search sizes.
    """
    if q is None or not (group.linear or q.per_module or isinstance(q, GgufQuantization)):
        return -(-group.parameters * dtype_bits(dtype) // 8)
    key = (group, dtype, _scheme_key(q))
    found = _GROUP_BYTES.get(key)
    if found is None:
        if len(_GROUP_BYTES) >= _MEMO_LIMIT:
            _GROUP_BYTES.clear()
        found = sum(copy_bytes(group, dtype, q, layer) for layer in group.layers or (None,))
        _GROUP_BYTES[key] = found
    return found
