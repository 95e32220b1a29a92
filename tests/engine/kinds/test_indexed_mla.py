"""The indexed-MLA kind (DeepSeek-V3.2, GLM-5): latent at the KV dtype plus the indexer's
fp8 key with its scales, one paged group as vLLM's UniformTypeKVCacheSpecs makes it."""

from __future__ import annotations

import json

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.serving.base import device_layers_by_index
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

KIND = kinds.get("indexed_mla")


def _spec(name: str):  # type: ignore[no-untyped-def]
    path = DATA / name
    return from_hf_config(json.loads(path.read_text()), str(path))


def test_a_token_keeps_the_latent_and_an_fp8_indexer_key() -> None:
    """576 latent elements at bf16 (1,152 B) + 128 fp8 bytes + one fp32 scale (4 B): vLLM's
    `k_cache_head_dim` = head_dim + head_dim // 128 × 4."""
    layer = state_layers(_spec("configs-2026/DeepSeek-V3.2.json"))[0]
    assert (layer.latent_dim, layer.index_dim) == (576, 128)
    assert KIND.bytes_per_token(layer, "bf16") == 1152 + 132
    assert KIND.bytes_per_token(layer, "fp8") == 576 + 132
    assert KIND.token_elements(layer) == 704
    assert KIND.sequence_bytes(layer, 1000, "bf16", None) == 1000 * 1284
    assert KIND.sequence_bytes(layer, 1000, "bf16", 64) == 1024 * 1284


def test_shared_indexer_layers_keep_the_latent_alone() -> None:
    spec = _spec("configs-2026-more/zai-org--GLM-5.2.json")
    result = size_state(StateRequest(layers=state_layers(spec), tokens=10))
    rows = {(row.elements_per_token_per_layer, row.layers) for row in result.kinds}
    assert rows == {(704, 21), (576, 57)}
    assert result.bytes_per_token == 21 * 1284 + 57 * 1152


def test_vllm_pages_latent_and_indexer_keys_in_one_group() -> None:
    """UniformTypeKVCacheSpecs: both are full-attention specs, so one block table; a block's
    page is the sum of every layer's latent and indexer pages."""
    spec = _spec("configs-2026-more/zai-org--GLM-5.2.json")
    by_index = device_layers_by_index(state_layers(spec), 1, "bf16", 78)
    layers = [layer for one in by_index for layer in one]
    pool = pool_layout(layers, block_size=64, max_model_len=8192, max_num_batched_tokens=8192)
    assert pool.groups == 1
    assert pool.page == 64 * (21 * 1284 + 57 * 1152)
    assert pool.need == 8192 // 64


def test_release_and_tp() -> None:
    spec = _spec("configs-2026/DeepSeek-V3.2.json")
    assert spec.decoder is not None
    reasons, warnings = KIND.tp_limits(spec.decoder, 8)
    assert reasons == [] and any("indexer" in w for w in warnings)
    assert KIND.tp_limits(spec.decoder, 3)[0]  # 128 heads do not split over 3
    assert "until the sequence ends" in KIND.release
    layer = state_layers(spec)[0]
    assert KIND.replicated(layer, 2) and KIND.bytes_per_token(layer, "bf16", 8) == 1284
