"""DeepSeek-V4.1's KV-source layers (`kv_source_layer_ids`; transformers main
`models/deepseek_v41` at commit 0a2080b43eb64e6d448186a4f3f0bc9c618f4797,
`DeepseekV41Compressor`, `DeepseekV41Indexer`, `DeepseekV41CSACache`): the one layer of
each group that computes the group's compressed KV and keeps it for every layer up to the
next source ("CSA2 Reuse"). The layer's tensors and its window are those of `csa2` (see
there), plus:

- Tensors: the compressor, `compressor.wkv` (head_dim × hidden), a softmax gate
  `compressor.wgate` of the same shape when the ratio pools (> 1), and `compressor.norm`;
  where the source is also an index source, the indexer's key projection `indexer.wk`
  (index head_dim × head_dim, over the compressed latent) and `indexer.k_norm`.
- State (`DeepseekV41CSACache`): the window (`keys`, which is also `values`: one tensor),
  one compressed entry of head_dim per `ratio` tokens (`compressed_kv["compressor"]`) and,
  on an index source, one indexer key of index head_dim per entry
  (`compressed_kv["indexer"]`), both at the cache dtype and kept until the sequence ends;
  and a partial group of fewer than `ratio` tokens waiting to be pooled (`buffer_kv`,
  `buffer_gate`: head_dim each per token, fp32, since the pooling runs in fp32), fixed
  bytes per sequence. At ratio 1 nothing is buffered.
- Paging: compressed entries grow at one per `ratio` tokens, rounded to whole blocks when
  paged (as `csa`/`hca`: one block table shared by the compressed layers); this is
  transformers' cache, not an engine's (TensorRT-LLM's CSA2 layout was not read).
"""

from __future__ import annotations

from llm_inventory.engine.kinds.compressed import Compressing, compression
from llm_inventory.engine.kinds.csa2 import SharedCompressedAttention
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Stack
from llm_inventory.units import bytes_for


class SharedKVSource(SharedCompressedAttention, Compressing):
    name = "csa2_source"
    source = True
    release = ("the window slides (older entries are dead); the group's compressed entries "
               "and indexer keys stay until the sequence ends; the partial group is "
               "overwritten")

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        ratio, hd = stack.compress_ratio, stack.head_dim or 0
        if ratio is None:
            raise InputError("decoder.compress_ratio",
                             f"csa2_source layer {index} needs its compress ratio")
        index_dim = 0 if stack.shares_indexer or stack.indexer is None \
            else stack.indexer.head_dim
        return StateLayer(kind=self.state, first=index, window=stack.sliding_window,
                          latent_dim=hd, k_head_dim=compression(stack).rope_dim,
                          index_dim=index_dim, ratio=ratio,
                          state_elements=2 * (ratio - 1) * hd)

    def _per_entry(self, layer: StateLayer, dtype: str) -> int:
        """One compressed entry and its indexer key, both at the cache dtype."""
        return self._entry(layer, dtype) + bytes_for(layer.index_dim, dtype)


KIND = SharedKVSource()
