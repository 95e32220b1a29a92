"""Llama-Nemotron NAS models (`nemotron-nas`, `DeciLMForCausalLM`; Llama-3.3-Nemotron-Super-49B,
Llama-3.1-Nemotron-Ultra-253B, Nemotron-51B). transformers has no class for them: the facts
below are the checkpoint's own modelling code (`modeling_decilm.py`, `DeciLMDecoderLayer`),
as vLLM reimplements it (`vllm/model_executor/models/nemotron_nas.py`).

A Llama decoder whose every layer has its own `block_configs` entry:
- attention: `no_op` (no attention and no input norm: the layer keeps no KV), or
  `replace_with_linear` (`self_attn.linear_attn`, Linear(hidden, hidden) without bias, and its
  input norm: no KV either), else grouped-query attention with heads / `n_heads_in_group` KV
  heads (a `window_length` makes it a sliding-window layer);
- ffn: `no_op` (no MLP, no post-attention norm), `replace_with_linear` (`mlp.linear_mlp`,
  Linear(hidden, hidden)), else a SiLU-gated MLP of `intermediate_size`, or of
  `_ffn_mult_to_intermediate_size`: int(2 × ffn_mult × hidden / 3) rounded up to a multiple
  of 256.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, rope_scaling
from llm_inventory.spec.model import (
    Component,
    ExtraTensor,
    LayerKind,
    LayerOverride,
    ModelSpec,
    Stack,
)


def ffn_mult_to_intermediate_size(ffn_mult: float, hidden: int) -> int:
    """DeciLM's `_ffn_mult_to_intermediate_size`: int(2 × mult × hidden / 3), rounded up to a
    multiple of 256."""
    size = int(2 * ffn_mult * hidden / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


def _part(c: HFConfig, index: int, block: Any, key: str) -> dict[str, Any]:
    value = block.get(key) if isinstance(block, dict) else None
    if not isinstance(value, dict):
        raise InputError(f"{c.label}: block_configs[{index}].{key}",
                         f"must be a mapping, got {value!r}")
    return value


def _flag(c: HFConfig, where: str, part: dict[str, Any], key: str) -> bool:
    value = part.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InputError(f"{c.label}: {where}.{key}", f"must be true or false, got {value!r}")
    return value


def _positive(c: HFConfig, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{c.label}: {where}", f"must be a positive integer, got {value!r}")
    return value


def nemotron_nas(c: HFConfig) -> ModelSpec:
    """Llama-Nemotron NAS: per-layer attention (GQA, linear or none) and FFN widths."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    blocks = c.data.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != layers:
        raise InputError(f"{c.label}: block_configs",
                         f"must list one block per layer ({layers}), got "
                         f"{len(blocks) if isinstance(blocks, list) else blocks!r}")
    kinds: list[str] = []
    shapes: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    tensors: dict[str, list[int]] = defaultdict(list)
    windows: list[int] = []
    for i, block in enumerate(blocks):
        attn, ffn = _part(c, i, block, "attention"), _part(c, i, block, "ffn")
        where = f"block_configs[{i}]"
        for key in ("sparsify", "num_sink_tokens"):
            if attn.get(key) not in (None, False):
                raise InputError(f"{c.label}: {where}.attention.{key}",
                                 "is not modelled: only no-op, linear and grouped-query "
                                 "attention blocks are read")
        kv_heads: int | None = None
        window: int | None = None
        if _flag(c, f"{where}.attention", attn, "no_op"):
            kinds.append("mlp_only")
        else:
            tensors["input_layernorm.weight"].append(i)
            if _flag(c, f"{where}.attention", attn, "replace_with_linear"):
                kinds.append("mlp_only")
                tensors["self_attn.linear_attn.weight"].append(i)
            else:
                group = _positive(c, f"{where}.attention.n_heads_in_group",
                                  attn.get("n_heads_in_group"))
                if heads % group:
                    raise InputError(f"{c.label}: {where}.attention.n_heads_in_group",
                                     f"must divide the {heads} heads, got {group}")
                kv_heads = heads // group
                if attn.get("window_length") is not None:
                    window = _positive(c, f"{where}.attention.window_length",
                                       attn["window_length"])
                    windows.append(window)
                kinds.append(LayerKind.SLIDING if window else LayerKind.FULL)
        width = 0
        if not _flag(c, f"{where}.ffn", ffn, "no_op"):
            tensors["post_attention_layernorm.weight"].append(i)
            if _flag(c, f"{where}.ffn", ffn, "replace_with_linear"):
                tensors["mlp.linear_mlp.weight"].append(i)
            elif ffn.get("intermediate_size") is not None:
                width = _positive(c, f"{where}.ffn.intermediate_size",
                                  ffn["intermediate_size"])
            else:
                mult = ffn.get("ffn_mult")
                if isinstance(mult, bool) or not isinstance(mult, int | float) or mult <= 0:
                    raise InputError(f"{c.label}: {where}.ffn.ffn_mult",
                                     f"must be a positive number, got {mult!r}")
                width = ffn_mult_to_intermediate_size(float(mult), hidden)
        shapes[(kv_heads, width, window)].append(i)
    first = next(((kv, w) for kv, w, _ in shapes if kv), (heads, 0))
    overrides = [
        LayerOverride(layers=index, kv_heads=kv, intermediate_size=width,
                      mlp="gated" if width else "none", sliding_window=window)
        for (kv, width, window), index in shapes.items()]
    extra = [ExtraTensor(name=f"layers.{{i}}.{name}",
                         shape=[hidden] if name.endswith("norm.weight") else [hidden, hidden],
                         component=Component.NORMS if name.endswith("norm.weight") else (
                             Component.ATTENTION if "attn" in name else Component.MLP),
                         layers=index, linear=not name.endswith("norm.weight"))
             for name, index in tensors.items()]
    # The top-level intermediate_size and num_key_value_heads are null: every layer says its own.
    return decoder_model(c, Stack(
        layers=layers, hidden_size=hidden, heads=heads, kv_heads=first[0],
        head_dim=c.integer("head_dim", hidden // heads), intermediate_size=first[1],
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=c.flag("attention_bias"), o_bias=c.flag("attention_bias"),
        mlp_bias=c.flag("mlp_bias"), rope_scaling=rope_scaling(c), norms_per_layer=0,
        layer_types=kinds, sliding_window=windows[0] if windows else None,
        overrides=overrides, extra=extra))
