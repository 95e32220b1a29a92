"""The indexed-GQA kind (MiniMax-M3): K/V at the KV dtype plus the indexer's bf16 key, paged
with the full-attention layers in one group, as vLLM's UniformTypeKVCacheSpecs makes it."""

from __future__ import annotations

import json

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.serving.base import device_layers_by_index
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

KIND = kinds.get("indexed_gqa")
M3 = "configs-2026/MiniMax-M3.json"


def _spec(name: str = M3) -> ModelSpec:
    path = DATA / name
    return from_hf_config(json.loads(path.read_text()), str(path))


def _indexed() -> kinds.StateLayer:
    return next(run for run in state_layers(_spec()) if run.kind == "indexed_gqa")


def test_a_token_keeps_kv_and_a_bf16_index_key() -> None:
    """4 KV heads × (128 + 128) = 1,024 K/V elements at the KV dtype, plus 128 index-key
    elements in bf16 whatever that dtype is (vLLM `MiniMaxM3IndexerCache`, indexer_kv_dtype
    "bf16"): 2,048 + 256 bytes at bf16, 1,024 + 256 at fp8."""
    layer = _indexed()
    assert (layer.kv_heads, layer.k_head_dim, layer.index_dim) == (4, 128, 128)
    assert KIND.token_elements(layer) == 1152
    assert KIND.bytes_per_token(layer, "bf16") == 2048 + 256
    assert KIND.bytes_per_token(layer, "fp8") == 1024 + 256
    assert KIND.sequence_bytes(layer, 1000, "bf16", None) == 1000 * 2304
    assert KIND.sequence_bytes(layer, 1000, "fp8", 128) == 1024 * 1280


def test_the_state_table_counts_both_kinds() -> None:
    result = size_state(StateRequest(layers=state_layers(_spec()), tokens=10))
    rows = {(row.kind, row.elements_per_token_per_layer, row.layers) for row in result.kinds}
    assert rows == {("full", 1024, 3), ("indexed_gqa", 1152, 57)}
    assert result.bytes_per_token == 3 * 2048 + 57 * 2304


def test_vllm_pages_every_layer_in_one_group() -> None:
    """FullAttentionSpec (K/V) and MLAAttentionSpec (index keys) are one attention type:
    one block table; a block's page is the sum of every layer's pages."""
    by_index = device_layers_by_index(state_layers(_spec()), 1, "bf16", 60)
    layers = [layer for one in by_index for layer in one]
    pool = pool_layout(layers, block_size=128, max_model_len=8192, max_num_batched_tokens=8192)
    assert pool.groups == 1
    assert pool.page == 128 * (3 * 2048 + 57 * 2304)
    assert pool.need == 8192 // 128


def test_tensor_parallelism_replicates_kv_heads_and_the_index_key() -> None:
    spec = _spec()
    assert spec.decoder is not None
    stack = spec.decoder.at(3)
    reasons, warnings = KIND.tp_limits(stack, 8)
    assert reasons == []
    assert any("index" in w for w in warnings) and any("replicated on 2" in w for w in warnings)
    assert KIND.tp_limits(stack, 3)[0]  # 64 heads do not split over 3
    layer = _indexed()
    # 4 KV heads over 8 ranks: one head each (replicated twice), the index key whole.
    assert KIND.bytes_per_token(layer, "bf16", 8) == 256 * 2 + 256
    assert KIND.replicated(layer, 8) and not KIND.replicated(layer, 4)
    other = stack.model_copy(update={"indexer": stack.indexer.model_copy(update={"heads": 8})
                                     if stack.indexer else None})
    assert KIND.tp_limits(other, 2)[0] and not KIND.tp_limits(other, 1)[0]


def test_score_flops_cap_attention_at_the_selected_blocks() -> None:
    """Past 16 blocks of 128 a query attends 2,048 positions; the indexer scores all."""
    spec = _spec()
    assert spec.decoder is not None
    stack = spec.decoder.at(3)
    width = 2 * 64 * (128 + 128)
    at = 10_000
    assert KIND.score_flops(stack, at - 1, at, 0) == width * 2048 + 2 * 4 * 128 * at


def test_release_rule_and_tensors() -> None:
    assert "until the sequence ends" in KIND.release
    spec = _spec()
    assert spec.decoder is not None
    names = {name for name, *_ in KIND.tensors("self_attn", spec.decoder.at(3))}
    assert {"self_attn.index_q_proj.weight", "self_attn.index_k_proj.weight",
            "self_attn.index_q_norm.weight", "self_attn.index_k_norm.weight"} <= names
