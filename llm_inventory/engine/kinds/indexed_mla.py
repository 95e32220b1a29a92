"""MLA with DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5).

- Tensors: the MLA projections, plus the indexer (transformers `DeepseekV32Indexer`,
  models/deepseek_v32): `wq_b` (index heads × index head_dim from the query latent), `wk`
  (one key of index head_dim per token), its LayerNorm `k_norm` (weight and bias) and
  `weights_proj` (one weight per index head). A layer that reuses the previous indexed
  layer's top-k (GLM IndexShare, `indexer_types` "shared": `GlmMoeDsaAttention`, models/
  glm_moe_dsa) has no indexer.
- State per token and layer: the MLA latent (kv_lora_rank + rope) at the KV cache's dtype,
  plus the indexer key in fp8 with one fp32 scale per 128 elements: index_dim +
  index_dim // 128 × 4 bytes (128 + 4 = 132), as vLLM keeps it (`Indexer.__init__`'s
  `k_cache_head_dim`, vllm/model_executor/models/deepseek_v2.py) and as DeepSeek's own
  inference code does. transformers keeps the key in bf16 instead (`indexer_keys`).
- Paging (vLLM): the latent (`MLAAttentionSpec`, head size 576) and the indexer cache
  (`DeepseekV32IndexerCache.get_kv_cache_spec`: `MLAAttentionSpec`, one head of 132 uint8)
  are both full-attention specs with different page sizes, so `UniformTypeKVCacheSpecs`
  (vllm/v1/kv_cache_interface.py) puts every layer in one group whose page is the sum of
  the layers' pages: one block holds block_size tokens of both, a request needs
  ⌈max_model_len ÷ block⌉ blocks, as for plain MLA.
- Score FLOPs: the attention attends at most index_topk positions; the indexer scores every
  position, 2 × index heads × (index head_dim + 1) per pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import attended
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.mla import LatentAttention, _mla
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Indexer, Shard, Stack
from llm_inventory.units import bytes_for

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."
QUANT_BLOCK = 128  # elements per fp32 scale of the fp8 indexer key (vLLM Indexer)


def indexer_of(stack: Stack) -> Indexer:
    if stack.indexer is None:
        raise InputError("decoder.indexer", "indexed_mla layers need the indexer block")
    return stack.indexer


def index_key_bytes(index_dim: int) -> int:
    """Bytes of one fp8 indexer key with its fp32 scales (vLLM `k_cache_head_dim`)."""
    return index_dim + index_dim // QUANT_BLOCK * 4


def indexer_tensors(prefix: str, stack: Stack, q_rank: int) -> Iterator[Entry]:
    """The lightning indexer's weights under `prefix` (`…self_attn.indexer`). vLLM keeps
    them whole on every rank (`ReplicatedLinear`), and `weights_proj` unquantized."""
    ix, hidden, a, rep = indexer_of(stack), stack.hidden_size or 0, Component.ATTENTION, \
        Shard.REPLICATED
    yield from linear(f"{prefix}.wq_b", ix.heads * ix.head_dim, q_rank, a, rep, False)
    yield from linear(f"{prefix}.wk", ix.head_dim, hidden, a, rep, False)
    yield f"{prefix}.k_norm.weight", (ix.head_dim,), a, rep, False, 0
    yield f"{prefix}.k_norm.bias", (ix.head_dim,), a, rep, False, 0
    yield f"{prefix}.weights_proj.weight", (ix.heads, hidden), a, rep, False, 0


class IndexedLatentAttention(LatentAttention):
    name = "indexed_mla"
    sparse_mla = True
    release = ("held until the sequence ends (one latent and one indexer key per token; "
               "the indexer only picks which entries a token reads)")

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        yield from super().tensors(prefix, stack)
        if stack.shares_indexer:
            return
        q_rank = _mla(stack).q_lora_rank
        if not q_rank:
            raise InputError("decoder.mla.q_lora_rank",
                             "the indexer reads the query latent: q_lora_rank is required")
        yield from indexer_tensors(f"{prefix}.indexer", stack, q_rank)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        m = _mla(stack)
        own = 0 if stack.shares_indexer else indexer_of(stack).head_dim
        return StateLayer(kind=self.state, first=index,
                          latent_dim=m.kv_lora_rank + m.qk_rope_head_dim, index_dim=own)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        m, ix = _mla(stack), indexer_of(stack)
        width = 2 * (stack.heads or 0) * (m.qk_nope_head_dim + m.qk_rope_head_dim
                                          + m.v_head_dim)
        flops = width * attended(ix.topk, start, stop)
        if not stack.shares_indexer:
            flops += 2 * ix.heads * (ix.head_dim + 1) * attended(None, start, stop)
        return flops

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        reasons, warnings = super().tp_limits(stack, tp)
        if tp > 1:
            warnings.append("the indexer's weights and keys are replicated on every TP rank")
        return reasons, warnings

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        ix = indexer_of(stack)
        return [*super().shape_rules(stack), ShapeRule(
            "indexer query width (index heads × index head_dim)",
            re.compile(_L + r"self_attn\.indexer\.wq_b\.weight$"), 0, ix.heads * ix.head_dim)]

    def sparse_record(self, layer: StateLayer, stack: Stack, layout: str
                      ) -> StateLayer | None:
        """The layer in vLLM's packed record (`kinds/packed_mla.py`): the rope part of the
        latent in `k_head_dim`, the record's number format as the layer's dtype."""
        from llm_inventory.engine.kinds.packed_mla import LAYOUTS

        if layout not in LAYOUTS:
            return None
        return layer.model_copy(update={"kind": "packed_mla", "dtype": LAYOUTS[layout],
                                         "k_head_dim": _mla(stack).qk_rope_head_dim})

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return layer.latent_dim + layer.index_dim

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        return bytes_for(layer.latent_dim, dtype) + index_key_bytes(layer.index_dim)

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        held = self.tokens_held(layer, tokens, block_size)
        return bytes_for(layer.latent_dim * held, dtype) + held * index_key_bytes(
            layer.index_dim)


KIND = IndexedLatentAttention()
