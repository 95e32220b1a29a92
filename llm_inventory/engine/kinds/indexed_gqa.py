"""GQA softmax attention with MiniMax-M3's lightning indexer (block-sparse attention).

- Tensors: q/k/v/o and per-head q/k norms, as `full`; plus the indexer (transformers
  `MiniMaxM3VLIndexer`, models/minimax_m3_vl/modeling_minimax_m3_vl.py): a query projection
  of index heads × index head_dim and one key of index head_dim, both from the hidden state,
  and RMS norms of index head_dim on each; no value or output projection (the checkpoint
  disables the index-value path, `sparse_disable_index_value`). Named as the checkpoint
  names them (`index_q_proj`, `index_k_proj`, `index_q_norm`, `index_k_norm`: vLLM
  `MiniMaxM3MTP.load_weights`, vllm/models/minimax_m3/nvidia/mtp.py). vLLM fuses them into
  qkv_proj (`MinimaxM3QKVParallelLinearWithIndexer`, vllm/model_executor/layers/linear.py):
  the index query shards as the KV heads do (replicated past them, so index heads must
  equal KV heads), the index key stays whole on every rank.
- State per token and layer: K + V of the KV heads, as `full`, plus one index key of
  index head_dim elements, whole on every rank and in bf16 whatever the KV cache's dtype
  (`MiniMaxM3IndexerCache`, vllm/models/minimax_m3/common/indexer.py; its dtype is
  `AttentionConfig.indexer_kv_dtype`, "bf16" by default). transformers caches the same key
  as `idx_keys` (`MiniMaxM3VLSparseCacheLayer`).
- Paging (vLLM): the K/V (`MiniMaxM3SparseAttention.get_kv_cache_spec`:
  `FullAttentionSpec`) and the index keys (`MiniMaxM3IndexerCache.get_kv_cache_spec`:
  `MLAAttentionSpec`, one head of index head_dim) are full-attention specs, as are the dense
  layers' K/V, so `UniformTypeKVCacheSpecs` (vllm/v1/kv_cache_interface.py) keeps every
  layer in one group whose page is the sum of the layers' pages: this kind pages with
  `full`, a request needing ⌈max_model_len ÷ block⌉ blocks. Both backends support only
  128-token kernel blocks (`MiniMaxM3SparseBackend.get_supported_kernel_block_sizes`,
  vllm/models/minimax_m3/common/sparse_attention.py): the block size is the launch's.
- Score FLOPs: a query attends at most index_topk positions (top-k blocks × block size);
  the indexer scores every earlier position, 2 × index heads × index head_dim per pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import attended
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.full import FullAttention
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Indexer, Shard, Stack
from llm_inventory.units import bytes_for

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."
INDEX_KEY_DTYPE = "bf16"  # vLLM AttentionConfig.indexer_kv_dtype's default


def _indexer(stack: Stack) -> Indexer:
    if stack.indexer is None:
        raise InputError("decoder.indexer", "indexed_gqa layers need the indexer block")
    return stack.indexer


class IndexedGroupedAttention(FullAttention):
    name = "indexed_gqa"
    release = ("held until the sequence ends (K/V and one index key per token; the indexer "
               "only picks which blocks a token reads)")

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        yield from super().tensors(prefix, stack)
        ix, hidden, a = _indexer(stack), stack.hidden_size or 0, Component.ATTENTION
        yield from linear(f"{prefix}.index_q_proj", ix.heads * ix.head_dim, hidden, a, Shard.KV,
                          False)
        yield from linear(f"{prefix}.index_k_proj", ix.head_dim, hidden, a, Shard.REPLICATED,
                          False)
        yield f"{prefix}.index_q_norm.weight", (ix.head_dim,), a, Shard.REPLICATED, False, 0
        yield f"{prefix}.index_k_norm.weight", (ix.head_dim,), a, Shard.REPLICATED, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        layer = super().state_layer(stack, index, encoder_tokens)
        if layer is None:
            return None
        return layer.model_copy(update={"index_dim": _indexer(stack).head_dim})

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        ix = _indexer(stack)
        return (self.score_width(stack) * attended(ix.topk, start, stop)
                + 2 * ix.heads * ix.head_dim * attended(None, start, stop))

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        reasons, warnings = super().tp_limits(stack, tp)
        ix = _indexer(stack)
        if tp > 1 and ix.heads != stack.n_kv_heads:
            reasons.append(f"vLLM splits the {ix.heads} index heads as the {stack.n_kv_heads} "
                           "KV heads and needs as many of each")
        if tp > 1:
            warnings.append("the indexer's key projection and its keys are replicated on "
                            "every TP rank")
        return reasons, warnings

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        ix = _indexer(stack)
        return [*super().shape_rules(stack), ShapeRule(
            "index query width (index heads × index head_dim)",
            re.compile(_L + r"self_attn\.(index_q_proj|indexer\.q_proj)\.weight$"), 0,
            ix.heads * ix.head_dim)]

    def page_group(self, window: int | None) -> tuple[str, int | None]:
        return ("full", None)

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return super().token_elements(layer, tp) + layer.index_dim

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        return (bytes_for(super().token_elements(layer, tp), dtype)
                + bytes_for(layer.index_dim, INDEX_KEY_DTYPE))

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        held = self.tokens_held(layer, tokens, block_size)
        return (bytes_for(super().token_elements(layer, tp) * held, dtype)
                + bytes_for(layer.index_dim * held, INDEX_KEY_DTYPE))


KIND = IndexedGroupedAttention()
