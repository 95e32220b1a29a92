"""Sparse MLA (DeepSeek-V3.2, GLM-5) as vLLM stores it in a packed per-token record.

No config names this kind: `indexed_mla.sparse_record` turns an indexed MLA layer into it
when an engine keeps the latent in one of vLLM's packed sparse-MLA layouts. The layer keeps
`latent_dim` (kv_lora_rank + rope), the rope part in `k_head_dim`, the indexer key in
`index_dim`, and the record's number format as its `dtype`:

- `fp8_ds_mla` (dtype fp8; what `--kv-cache-dtype fp8` becomes for these models): the
  NoPE latent in fp8 with one fp32 scale per 128 values, the rope part in bf16 — 512 + 16 +
  128 = 656 bytes for DeepSeek-V3.2 (`FlashMLASparseBackend.get_kv_cache_shape`,
  vllm/v1/attention/backends/mla/flashmla_sparse.py: a last dimension of 656 uint8).
- `nvfp4_ds_mla` (dtype nvfp4): the NoPE latent in packed e2m1 (two values a byte) with one
  e4m3 scale per 16 values, the rope part in fp8 — 256 + 64 + 32 = 352 bytes (FlashMLA's
  SM100 sparse decode record `nvfp4.fp8rope`, vllm-project/FlashMLA#18, wired into vLLM by
  vllm#51724).
- Beside it, the indexer key as before: fp8 with an fp32 scale per 128 values (132 bytes).
Paging and lifetime are indexed MLA's.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.indexed_mla import IndexedLatentAttention, index_key_bytes
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.units import normalize_dtype

# vLLM's --kv-cache-dtype words for the packed records, and the number format of each.
LAYOUTS = {"fp8_ds_mla": "fp8", "nvfp4_ds_mla": "nvfp4"}
FP8_SCALE_GROUP = 128  # NoPE values per fp32 scale (fp8_ds_mla)
FP4_SCALE_GROUP = 16  # NoPE values per e4m3 scale (nvfp4_ds_mla)


def record_bytes(nope: int, rope: int, dtype: str) -> int:
    """Bytes of one token's packed latent record of `nope` + `rope` values."""
    if dtype == "fp8":
        return nope + nope // FP8_SCALE_GROUP * 4 + rope * 2
    if dtype == "nvfp4":
        return nope // 2 + nope // FP4_SCALE_GROUP + rope
    raise InputError("kv_dtype", f"no packed sparse-MLA record in {dtype}; vLLM has "
                     + ", ".join(LAYOUTS))


class PackedLatentAttention(IndexedLatentAttention):
    name = "packed_mla"

    def validate(self, layer: StateLayer) -> None:
        if not 0 < layer.k_head_dim < layer.latent_dim:
            raise InputError("packed_mla", "a packed record needs the rope part of the latent")

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        own = normalize_dtype(layer.dtype or dtype, "kv_dtype")
        rope = layer.k_head_dim
        return record_bytes(layer.latent_dim - rope, rope, own) + index_key_bytes(
            layer.index_dim)

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        return self.tokens_held(layer, tokens, block_size) * self.bytes_per_token(
            layer, dtype, tp)


KIND = PackedLatentAttention()
