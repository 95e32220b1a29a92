"""Mistral Large 4's attention (transformers 5.25 `models/mistral_large4`,
`MistralLarge4TextAttention` and `MistralLarge4TextIndexer`): DeepSeek Sparse Attention over
an MLA latent, with full-rank queries, a learned per-head softmax scaling and NoPE layers.

- Tensors: one full `q_proj` (heads × (nope + rope), no query LoRA); `kv_a_proj_with_mqa`
  to kv_lora_rank plus the rope part, its RMSNorm `kv_a_layernorm`; `kv_b_proj` to
  heads × (nope + v); `o_proj`; `softmax_scaling.scale` and `.bias` (one each per head:
  `MistralLarge4TextSoftmaxScaling`). A NoPE layer (`no_rope_layers` 0, the layer's `rope`
  off) has no rope part: its `kv_a_proj_with_mqa` yields kv_lora_rank alone and its key
  folds the rope width into the nope part (kv_b_proj: heads × (nope + rope + v)).
- The indexer reads the hidden state, not a query latent: `q_input_norm` (a LayerNorm of
  hidden, weight and bias), `wq_b` (hidden → index heads × index head_dim), its own
  `softmax_scaling` (per index head), then `DeepseekV32Indexer`'s `wk`, `k_norm` (weight and
  bias) and `weights_proj`. A layer whose `indexer_types` entry is "shared" has none.
- State per token and layer: the latent, kv_lora_rank plus the rope part (512 + 64 on a
  rope layer, 512 on a NoPE layer), and the indexer key (index head_dim) where the layer
  runs its own indexer; sized as `indexed_mla` state (`kinds/indexed_mla.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.indexed_mla import IndexedLatentAttention, indexer_of
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.mla import _mla
from llm_inventory.spec.model import Component, Shard, Stack

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."


def _rope_and_nope(stack: Stack) -> tuple[int, int]:
    """The layer's (rope, nope) key widths: a NoPE layer folds the rope part into nope."""
    m = _mla(stack)
    if stack.rope:
        return m.qk_rope_head_dim, m.qk_nope_head_dim
    return 0, m.qk_nope_head_dim + m.qk_rope_head_dim


class ScaledSparseLatentAttention(IndexedLatentAttention):
    name = "scaled_dsa"
    state = "indexed_mla"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        m, hidden, heads = _mla(stack), stack.hidden_size or 0, stack.heads or 0
        a, rep = Component.ATTENTION, Shard.REPLICATED
        rope, nope = _rope_and_nope(stack)
        yield from linear(f"{prefix}.q_proj", heads * (m.qk_nope_head_dim + m.qk_rope_head_dim),
                          hidden, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.kv_a_proj_with_mqa", m.kv_lora_rank + rope, hidden, a,
                          rep, stack.qkv_bias)
        yield f"{prefix}.kv_a_layernorm.weight", (m.kv_lora_rank,), a, rep, False, 0
        yield from linear(f"{prefix}.kv_b_proj", heads * (nope + m.v_head_dim),
                          m.kv_lora_rank, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.o_proj", hidden, heads * m.v_head_dim, a, Shard.ROW,
                          stack.o_bias)
        yield f"{prefix}.softmax_scaling.scale", (heads,), a, Shard.COLUMN, False, 0
        yield f"{prefix}.softmax_scaling.bias", (heads,), a, Shard.COLUMN, False, 0
        if stack.shares_indexer:
            return
        ix, p = indexer_of(stack), f"{prefix}.indexer"
        yield f"{p}.q_input_norm.weight", (hidden,), a, rep, False, 0
        yield f"{p}.q_input_norm.bias", (hidden,), a, rep, False, 0
        yield from linear(f"{p}.wq_b", ix.heads * ix.head_dim, hidden, a, rep, False)
        yield f"{p}.softmax_scaling.scale", (ix.heads,), a, rep, False, 0
        yield f"{p}.softmax_scaling.bias", (ix.heads,), a, rep, False, 0
        yield from linear(f"{p}.wk", ix.head_dim, hidden, a, rep, False)
        yield f"{p}.k_norm.weight", (ix.head_dim,), a, rep, False, 0
        yield f"{p}.k_norm.bias", (ix.head_dim,), a, rep, False, 0
        yield f"{p}.weights_proj.weight", (ix.heads, hidden), a, rep, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        rope, _ = _rope_and_nope(stack)
        own = 0 if stack.shares_indexer else indexer_of(stack).head_dim
        return StateLayer(kind=self.state, first=index,
                          latent_dim=_mla(stack).kv_lora_rank + rope, index_dim=own)

    def rotary_dim(self, stack: Stack) -> int:
        return _rope_and_nope(stack)[0]

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        """Only what every layer shares: the latent and key widths differ on NoPE layers."""
        m, heads, ix = _mla(stack), stack.heads or 0, indexer_of(stack)
        return [
            ShapeRule("attention output width (heads × value head_dim)",
                      re.compile(_L + r"(self_attn\.o_proj|attn_output)\.weight$"), -1,
                      heads * m.v_head_dim),
            ShapeRule("query width (heads × (nope + rope))",
                      re.compile(_L + r"self_attn\.q_proj\.weight$"), 0,
                      heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)),
            ShapeRule("indexer query width (index heads × index head_dim)",
                      re.compile(_L + r"self_attn\.indexer\.wq_b\.weight$"), 0,
                      ix.heads * ix.head_dim),
        ]


KIND = ScaledSparseLatentAttention()
