"""GLM-5.3-Flash's sparse attention (transformers 5.25 `models/glm5_next`,
`Glm5NextTextAttention` and `Glm5NextTextIndexer`): DeepSeek Sparse Attention over an MLA
latent whose lightning indexer scores pools of `index_kpool` tokens instead of tokens.

- Tensors: the MLA projections (query LoRA `q_a_proj`, `q_a_layernorm`, `q_b_proj`;
  `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`), and where the layer runs
  its own indexer (`indexer_types` "full") DeepSeek-V3.2's indexer (`wq_b` over the query
  latent, `wk`, `k_norm` with weight and bias, `weights_proj`) plus the pool's compression:
  `index_kpool_compress_ape` (index_kpool × index head_dim, a learned offset per position in
  the pool) and `index_kpool_compress_gate` (index head_dim × hidden, the gate each token's
  share of its pool's key is scored by). A "shared" layer reuses the previous full layer's
  selection and has no indexer.
- State per token and layer: the latent (kv_lora_rank + rope, 512 + 0: the layers are NoPE)
  and, on a layer with its own indexer, the record `DynamicIndexedLayer` keeps for it
  (transformers `Glm5NextTextIndexer.forward`, `cache.update_indexer`): the key, the gate
  score (index head_dim each) and a validity flag, 2 × index head_dim + 1 elements, all at
  the cache's dtype, in one tensor with the latent's dtype. That is transformers' cache: no
  engine's layout for the pooled record was read (vLLM's main tree has no glm5_next model;
  SGLang's `Glm5NextDecoderLayer`, python/sglang/srt/models/glm5_next.py, builds these
  layers as `DeepseekV2AttentionMLA` in its NSA pool, whose record for the gate score was
  not read), so the importer labels the state an estimate for such models.
- Paging: as indexed MLA, every token of the sequence held; vLLM would serve it with its
  sparse MLA backend in blocks of 64 (`sparse_mla`), but keeps no packed record for it.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry
from llm_inventory.engine.kinds.indexed_mla import IndexedLatentAttention, indexer_of
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.mla import _mla
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Shard, Stack
from llm_inventory.units import bytes_for


def _pool(stack: Stack) -> int:
    pool = indexer_of(stack).pool
    if not pool:
        raise InputError("decoder.indexer.pool", "pooled_dsa layers need the indexer's pool")
    return pool


class PooledSparseLatentAttention(IndexedLatentAttention):
    name = "pooled_dsa"
    release = ("held until the sequence ends (one latent and one indexer record per token; "
               "the indexer only picks which pools of tokens a query reads)")

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        yield from super().tensors(prefix, stack)
        if stack.shares_indexer:
            return
        ix, hidden, a, rep = indexer_of(stack), stack.hidden_size or 0, Component.ATTENTION, \
            Shard.REPLICATED
        p = f"{prefix}.indexer"
        yield f"{p}.index_kpool_compress_ape", (_pool(stack), ix.head_dim), a, rep, False, 0
        yield f"{p}.index_kpool_compress_gate", (ix.head_dim, hidden), a, rep, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        m = _mla(stack)
        own = 0 if stack.shares_indexer else 2 * indexer_of(stack).head_dim + 1
        return StateLayer(kind=self.state, first=index,
                          latent_dim=m.kv_lora_rank + m.qk_rope_head_dim, index_dim=own)

    def sparse_record(self, layer: StateLayer, stack: Stack, layout: str
                      ) -> StateLayer | None:
        return None  # no engine keeps this record packed

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        return bytes_for(layer.latent_dim + layer.index_dim, dtype)

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        held = self.tokens_held(layer, tokens, block_size)
        return bytes_for((layer.latent_dim + layer.index_dim) * held, dtype)


KIND = PooledSparseLatentAttention()
