"""Rules shared by the softmax-attention kinds (full, sliding, chunked, cross, shared KV).

- Tensors: q/k/v/o projections with their biases, optional q/k norms (per head, or over the
  whole width) and per-head attention sinks.
- State: K + V = kv_heads × (k_head_dim + v_head_dim) elements per token per layer. Tensor
  parallelism shards KV heads while tp ≤ kv_heads (tp must divide them) and replicates each
  head past that (kv_heads must divide tp), so a rank never holds less than one head.
- Score FLOPs: QKᵀ and AV add 2 × heads × (k_dim + v_dim) per attended position.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.base import Kind, ShapeRule, round_up
from llm_inventory.engine.parallel import kv_heads_per_device, kv_replication, kv_tp_problem
from llm_inventory.errors import InputError
from llm_inventory.spec.names import Component, Shard

if TYPE_CHECKING:  # no pydantic at import: `kinds/uniform.py` sizes with these rules alone
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import Stack

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."


def qkv_width(stack: Stack, tp: int) -> int:
    """Elements per token of the fused q/k/v output on one rank."""
    heads = stack.heads or 0
    if not heads:
        return 0
    return (heads * stack.k_dim + 2 * stack.n_kv_heads * stack.v_dim) // tp


def head_limits(stack: Stack, tp: int) -> list[str]:
    """Query heads split whole over the TP ranks."""
    if stack.heads and stack.heads % tp:
        return [f"tp {tp} does not divide the {stack.heads} attention heads"]
    return []


def attended(cap: int | None, start: int, stop: int) -> int:
    """Σ over positions t in (start, stop] of min(t, cap): the positions each token attends."""

    def upto(n: int) -> int:
        if cap is None or n <= cap:
            return n * (n + 1) // 2
        return cap * (cap + 1) // 2 + (n - cap) * cap

    return upto(stop) - upto(start)


class Attention(Kind):
    """Causal softmax attention over a KV cache; subclasses cap what a token attends."""

    module = "self_attn"

    # --- the model ------------------------------------------------------------------------

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        yield from projections(prefix, stack, cross=self.reads_encoder)

    def window(self, stack: Stack) -> int | None:
        """Positions a token attends at most (None: every earlier position)."""
        return None

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        if not stack.n_kv_heads:
            return None  # a coarse stack without attention shapes
        from llm_inventory.engine.kinds.layer import StateLayer

        return StateLayer(kind=self.state, first=index, kv_heads=stack.n_kv_heads,
                          k_head_dim=stack.k_dim, v_head_dim=stack.v_dim,
                          window=self.window(stack))

    def score_width(self, stack: Stack) -> int:
        return 2 * (stack.heads or 0) * (stack.k_dim + stack.v_dim)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        return self.score_width(stack) * attended(self.window(stack), start, stop)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        reasons = head_limits(stack, tp)
        warnings: list[str] = []
        if stack.heads:
            problem = kv_tp_problem(stack.n_kv_heads, tp)
            if problem:
                reasons.append(problem)
            elif tp > stack.n_kv_heads:
                warnings.append(f"each of the {stack.n_kv_heads} KV heads is replicated on "
                                f"{tp // stack.n_kv_heads} ranks (KV bytes and k/v weights too)")
        return reasons, warnings

    def activation_width(self, stack: Stack, tp: int) -> int:
        return qkv_width(stack, tp)

    def rotary_dim(self, stack: Stack) -> int:
        return int(stack.k_dim * stack.partial_rotary_factor)

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        heads, kv = stack.heads or 0, stack.n_kv_heads
        return [
            ShapeRule("query width (heads × head_dim)",
                      re.compile(_L + r"(self_attn\.q_proj|attn_q)\.weight$"), 0,
                      heads * stack.k_dim),
            ShapeRule("key width (KV heads × head_dim)",
                      re.compile(_L + r"(self_attn\.k_proj|attn_k)\.weight$"), 0,
                      kv * stack.k_dim),
            ShapeRule("value width (KV heads × value head_dim)",
                      re.compile(_L + r"(self_attn\.v_proj|attn_v)\.weight$"), 0,
                      kv * stack.v_dim),
            ShapeRule("attention output width (heads × value head_dim)",
                      re.compile(_L + r"(self_attn\.o_proj|attn_output)\.weight$"), -1,
                      heads * stack.v_dim),
        ]

    # --- the state ------------------------------------------------------------------------

    def validate(self, layer: StateLayer) -> None:
        if layer.kv_heads < 1 or layer.k_head_dim + layer.v_head_dim < 1:
            raise InputError("kv_heads",
                             f"a {layer.kind} layer needs KV heads and a head dimension")

    def check_split(self, layer: StateLayer, tp: int) -> None:
        kv_heads_per_device(layer.kv_heads, tp)

    def heads_per_device(self, layer: StateLayer, tp: int) -> int | None:
        return max(1, layer.kv_heads // tp) if layer.kv_heads else 0

    def replicated(self, layer: StateLayer, tp: int) -> bool:
        return kv_replication(layer.kv_heads, tp) > 1

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        heads = self.heads_per_device(layer, tp) or 0
        return heads * (layer.k_head_dim + layer.v_head_dim)

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return round_up(tokens, block_size)


def projections(prefix: str, s: Stack, cross: bool = False) -> Iterator[Entry]:
    """q/k/v/o projections (+ biases, q/k norms, sinks) of one attention block.

    An output gate doubles q_proj's rows (queries and a per-element gate, as Qwen3-Next's
    gated attention computes them); keys that double as values drop v_proj (Gemma 4).
    """
    hidden, heads, kv = s.hidden_size or 0, s.heads or 0, s.n_kv_heads
    hd, vd = s.k_dim, s.v_dim
    k_bias = s.qkv_bias if s.k_bias is None else s.k_bias
    a = Component.ATTENTION
    q_rows = heads * hd * (2 if s.attn_output_gate and not cross else 1)
    yield from linear(f"{prefix}.q_proj", q_rows, hidden, a, Shard.COLUMN, s.qkv_bias)
    yield from linear(f"{prefix}.k_proj", kv * hd, hidden, a, Shard.KV, k_bias)
    if not s.k_eq_v or cross:
        yield from linear(f"{prefix}.v_proj", kv * vd, hidden, a, Shard.KV, s.qkv_bias)
    yield from linear(f"{prefix}.o_proj", hidden, heads * vd, a, Shard.ROW, s.o_bias)
    qk_norm = "head" if cross and s.cross_qk_norm else ("none" if cross else s.qk_norm)
    if qk_norm == "head":
        yield f"{prefix}.q_norm.weight", (hd,), a, Shard.REPLICATED, False, 0
        yield f"{prefix}.k_norm.weight", (hd,), a, Shard.REPLICATED, False, 0
    elif qk_norm == "full":
        yield f"{prefix}.q_norm.weight", (heads * hd,), a, Shard.COLUMN, False, 0
        yield f"{prefix}.k_norm.weight", (kv * hd,), a, Shard.KV, False, 0
    if s.sinks and not cross:
        yield f"{prefix}.sinks", (heads,), a, Shard.COLUMN, False, 0
