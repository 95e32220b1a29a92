"""Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one compressed latent per token.

- Tensors: low-rank queries (q_a, norm, q_b) or one full q projection, the shared KV latent
  projection with its norm, per-head up-projections (kv_b) and the output projection.
- State: kv_lora_rank + qk_rope_head_dim elements per token per layer, no factor of two, and
  whole on every TP rank (the latent is not split by head).
- Score FLOPs: 2 × heads × (nope + rope + v head dims) per attended position.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import attended, head_limits, qkv_width
from llm_inventory.engine.kinds.base import Kind, ShapeRule, round_up
from llm_inventory.errors import InputError
from llm_inventory.spec.names import Component, Shard

if TYPE_CHECKING:
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import MLA, Stack

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."


def _mla(stack: Stack) -> MLA:
    if stack.mla is None:
        raise InputError("decoder.mla", "mla layers need the mla block")
    return stack.mla


class LatentAttention(Kind):
    name = "mla"
    requires = "mla"
    release = "held until the sequence ends (one compressed latent per token)"
    joint_latent = True

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        m, hidden, heads = _mla(stack), stack.hidden_size or 0, stack.heads or 0
        a = Component.ATTENTION
        q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        if m.q_lora_rank:
            yield from linear(f"{prefix}.q_a_proj", m.q_lora_rank, hidden, a, Shard.REPLICATED,
                              stack.qkv_bias)
            yield f"{prefix}.q_a_layernorm.weight", (m.q_lora_rank,), a, Shard.REPLICATED, \
                False, 0
            yield from linear(f"{prefix}.q_b_proj", q_width, m.q_lora_rank, a, Shard.COLUMN,
                              False)
        else:
            yield from linear(f"{prefix}.q_proj", q_width, hidden, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim,
                          hidden, a, Shard.REPLICATED, stack.qkv_bias)
        yield f"{prefix}.kv_a_layernorm.weight", (m.kv_lora_rank,), a, Shard.REPLICATED, \
            False, 0
        yield from linear(f"{prefix}.kv_b_proj", heads * (m.qk_nope_head_dim + m.v_head_dim),
                          m.kv_lora_rank, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.o_proj", hidden, heads * m.v_head_dim, a, Shard.ROW,
                          stack.o_bias)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        m = _mla(stack)
        from llm_inventory.engine.kinds.layer import StateLayer

        return StateLayer(kind=self.state, first=index,
                          latent_dim=m.kv_lora_rank + m.qk_rope_head_dim)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        m = _mla(stack)
        width = 2 * (stack.heads or 0) * (m.qk_nope_head_dim + m.qk_rope_head_dim
                                          + m.v_head_dim)
        return width * attended(None, start, stop)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        warnings = ["the MLA latent is replicated on every TP rank"] if tp > 1 else []
        return head_limits(stack, tp), warnings

    def activation_width(self, stack: Stack, tp: int) -> int:
        return qkv_width(stack, tp)

    def rotary_dim(self, stack: Stack) -> int:
        return _mla(stack).qk_rope_head_dim

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        m, heads = _mla(stack), stack.heads or 0
        return [
            ShapeRule("attention output width (heads × value head_dim)",
                      re.compile(_L + r"(self_attn\.o_proj|attn_output)\.weight$"), -1,
                      heads * m.v_head_dim),
            ShapeRule("MLA query width (heads × (nope + rope))",
                      re.compile(_L + r"(self_attn\.q_b_proj|attn_q_b)\.weight$"), 0,
                      heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)),
            ShapeRule("MLA latent width (kv_lora_rank + rope)",
                      re.compile(_L + r"(self_attn\.kv_a_proj_with_mqa|attn_kv_a_mqa)\.weight$"),
                      0, m.kv_lora_rank + m.qk_rope_head_dim),
            ShapeRule("MLA key/value width (heads × (nope + v))",
                      re.compile(_L + r"(self_attn\.kv_b_proj|attn_kv_b)\.weight$"), 0,
                      heads * (m.qk_nope_head_dim + m.v_head_dim)),
        ]

    def validate(self, layer: StateLayer) -> None:
        if layer.latent_dim < 1:
            raise InputError("latent_dim", "an MLA layer needs its latent width")

    def replicated(self, layer: StateLayer, tp: int) -> bool:
        return tp > 1

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return layer.latent_dim

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return round_up(tokens, block_size)


KIND = LatentAttention()
