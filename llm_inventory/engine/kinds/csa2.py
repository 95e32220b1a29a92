"""DeepSeek-V4.1's attention layers (transformers main `models/deepseek_v41`,
`DeepseekV41Attention`, at commit 0a2080b43eb64e6d448186a4f3f0bc9c618f4797; transformers
5.25 has no such class): every layer attends over a sliding window of one K = V latent, and
a layer with a compress ratio (`compress_ratios[i]` > 0) also over its group's *shared*
compressed KV ("CSA2"), which only the group's source layer computes and keeps
(`csa2_source`). This module is the kind of every other layer (`csa2`): a window alone
(ratio 0), or a reader of its group's compressed KV.

- Tensors (`attn.*`): `wq_a` (q_lora_rank × hidden) → `q_norm` → `wq_b` (heads × head_dim),
  one K = V projection `wkv` (head_dim × hidden) and `kv_norm`, the grouped output
  projection `wo_a` (o_groups × o_lora_rank rows over heads × head_dim ÷ o_groups) and
  `wo_b`, and one sink per head (`attn_sink`). An index-source layer
  (`index_source_layer_ids`; here `shares_indexer` false) adds the indexer's query
  projection `indexer.wq_b` (index heads × index head_dim over q_lora_rank) and
  `indexer.weights_proj` (index heads × hidden); the others reuse the previous index
  source's top-k and have no indexer.
- State: the window, `sliding_window` − 1 entries of head_dim kept between calls
  (`DynamicSlidingWindowLayer` for these layers; transformers stores the vector as keys and
  again as values), bounded, so fixed bytes per sequence, one entry per token at the KV
  dtype. A reader keeps nothing of the compressed KV it reads: its source does.
- Layout: transformers' (entries at the cache dtype; the fp8 window and fp4 entries the
  modelling code fake-quantizes to are stored at the cache dtype there too), and each kind
  pages as its own group. vLLM has no V4.1 model; TensorRT-LLM has one
  (tensorrt_llm/_torch/models/modeling_deepseekv41.py, its CSA2 attention backend) whose
  paged layout was not read, so engine figures for V4.1 follow this, not it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import attended
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.compressed import (
    CompressedAttention,
    WindowOnly,
    compression,
)
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Indexer, Shard, Stack
from llm_inventory.units import bytes_for

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."


def indexer(stack: Stack) -> Indexer:
    if stack.indexer is None:
        raise InputError("decoder.indexer", "DeepSeek-V4.1 index-source layers need the "
                         "indexer block")
    return stack.indexer


class SharedCompressedAttention(CompressedAttention):
    """A DeepSeek-V4.1 layer; `csa2_source` adds the compressor and the group's state."""

    module = "attn"
    source = False

    def ratio(self, stack: Stack) -> int | None:
        return stack.compress_ratio

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        cmp, hidden, heads, hd = (compression(stack), stack.hidden_size or 0, stack.heads or 0,
                                  stack.head_dim or 0)
        a, rep = Component.ATTENTION, Shard.REPLICATED
        yield from linear(f"{prefix}.wq_a", cmp.q_lora_rank, hidden, a, rep, False)
        yield f"{prefix}.q_norm.weight", (cmp.q_lora_rank,), a, rep, False, 0
        yield from linear(f"{prefix}.wq_b", heads * hd, cmp.q_lora_rank, a, Shard.COLUMN,
                          False)
        yield from linear(f"{prefix}.wkv", hd, hidden, a, rep, False)
        yield f"{prefix}.kv_norm.weight", (hd,), a, rep, False, 0
        yield from linear(f"{prefix}.wo_a", cmp.o_groups * cmp.o_lora_rank,
                          heads * hd // cmp.o_groups, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.wo_b", hidden, cmp.o_groups * cmp.o_lora_rank, a,
                          Shard.ROW, False)
        yield f"{prefix}.attn_sink", (heads,), a, Shard.COLUMN, False, 0
        if self.source:
            ratio = self.ratio(stack)
            if ratio is None:
                raise InputError("decoder.compress_ratio", "a csa2_source layer needs its "
                                 "compress ratio")
            yield from linear(f"{prefix}.compressor.wkv", hd, hidden, a, rep, False)
            if ratio > 1:
                yield from linear(f"{prefix}.compressor.wgate", hd, hidden, a, rep, False)
            yield f"{prefix}.compressor.norm.weight", (hd,), a, rep, False, 0
        if not stack.shares_indexer:
            ix = indexer(stack)
            yield from linear(f"{prefix}.indexer.wq_b", ix.heads * ix.head_dim,
                              cmp.q_lora_rank, a, rep, False)
            yield from linear(f"{prefix}.indexer.weights_proj", ix.heads, hidden, a, rep,
                              False)
            if self.source:
                yield from linear(f"{prefix}.indexer.wk", ix.head_dim, hd, a, rep, False)
                yield f"{prefix}.indexer.k_norm.weight", (ix.head_dim,), a, rep, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        return StateLayer(kind=self.state, first=index, window=stack.sliding_window,
                          latent_dim=stack.head_dim or 0,
                          k_head_dim=compression(stack).rope_dim)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        """QKᵀ and AV over the window, plus, on a layer with a compress ratio, the
        compressed entries its group's top-k lets it read (at most index_topk of the
        t ÷ ratio entries), and an index source's scoring of every entry."""
        width = 2 * (stack.heads or 0) * 2 * (stack.head_dim or 0)
        flops = width * attended(stack.sliding_window, start, stop)
        ratio = self.ratio(stack)
        if ratio is None or stack.indexer is None:
            return flops
        ix = stack.indexer
        entries = sum(t // ratio for t in range(start + 1, stop + 1))
        if not stack.shares_indexer:
            flops += 2 * ix.heads * (ix.head_dim + 1) * entries
        read = sum(min(t // ratio, ix.topk) for t in range(start + 1, stop + 1))
        return flops + width * read

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        heads, hd = stack.heads or 0, stack.head_dim or 0
        return [ShapeRule("query width (heads × head_dim)",
                          re.compile(_L + r"attn\.wq_b\.weight$"), 0, heads * hd),
                ShapeRule("key-and-value width (head_dim)",
                          re.compile(_L + r"attn\.wkv\.weight$"), 0, hd)]

    def _entry(self, layer: StateLayer, dtype: str) -> int:
        return bytes_for(layer.latent_dim, dtype)


class SharedKVReader(WindowOnly, SharedCompressedAttention):
    name = "csa2"


KIND = SharedKVReader()
