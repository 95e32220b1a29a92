"""GLM-5.3-Flash's attention kind (`pooled_dsa`): MLA with query LoRA and no rope part, and
a lightning indexer that scores pools of `index_kpool` tokens. Tensor shapes follow
`Glm5NextTextAttention` / `Glm5NextTextIndexer` (transformers 5.25 models/glm5_next) as the
meta-built model names them; the state per token is the cache transformers allocates there
(tests/data/oracle-2026-glm5.json)."""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

KIND = kinds.get("pooled_dsa")
SMALL = DATA / "configs-2026-glm5" / "constructed--glm5_next-small.json"


def _spec() -> ModelSpec:
    return from_hf_config(json.loads(SMALL.read_text()), SMALL.name)


def _shapes(index: int) -> dict[str, tuple[int, ...]]:
    stack = _spec().decoder.at(index)  # type: ignore[union-attr]
    return {name: shape for name, shape, *_ in KIND.tensors("self_attn", stack)}


def test_a_layer_with_its_own_pooled_indexer() -> None:
    """Layer 1 of the small config: 8 heads of nope 48 (no rope), v 32, query LoRA 96,
    latent 64 with attention biases; 4 index heads of 32, pools of 8 tokens, hidden 256."""
    shapes = _shapes(1)
    assert shapes["self_attn.q_a_proj.weight"] == (96, 256)
    assert shapes["self_attn.q_a_proj.bias"] == (96,)
    assert shapes["self_attn.q_b_proj.weight"] == (8 * 48, 96)
    assert shapes["self_attn.kv_a_proj_with_mqa.weight"] == (64, 256)
    assert shapes["self_attn.kv_b_proj.weight"] == (8 * (48 + 32), 64)
    assert shapes["self_attn.o_proj.bias"] == (256,)
    assert shapes["self_attn.indexer.wq_b.weight"] == (4 * 32, 96)
    assert shapes["self_attn.indexer.index_kpool_compress_ape"] == (8, 32)
    assert shapes["self_attn.indexer.index_kpool_compress_gate"] == (32, 256)
    assert KIND.rotary_dim(_spec().decoder.at(1)) == 0  # type: ignore[union-attr]


def test_a_shared_layer_has_no_indexer_and_keeps_no_record() -> None:
    shapes = _shapes(2)  # indexer_types "shared"
    assert not any(".indexer." in name for name in shapes)
    layers = {layer.first: layer for layer in state_layers(_spec())
              if layer.kind == "pooled_dsa"}
    assert (layers[2].latent_dim, layers[2].index_dim) == (64, 0)
    assert (layers[1].latent_dim, layers[1].index_dim) == (64, 2 * 32 + 1)


def test_bytes_per_token_are_the_record_at_the_cache_dtype() -> None:
    """Two layers keep latent 64 + key 32 + gate 32 + flag 1, two the latent alone: at bf16
    (64 + 65) × 2 × 2 + 64 × 2 × 2 = 772 bytes a token; at fp8 half of it. No packed
    record: a fp8_ds_mla layout leaves the layer as it is."""
    layers = [layer for layer in state_layers(_spec()) if layer.kind == "pooled_dsa"]
    bf16 = size_state(StateRequest(layers=tuple(layers), tokens=10))
    assert bf16.bytes_per_token == 2 * (129 * 2) + 2 * (64 * 2) == 772
    fp8 = size_state(StateRequest(layers=tuple(layers), tokens=10, dtype="fp8"))
    assert fp8.bytes_per_token == 386
    stack = _spec().decoder
    assert stack is not None
    assert all(KIND.sparse_record(layer, stack, "fp8_ds_mla") is None for layer in layers)
    assert "pools of tokens" in KIND.release


def test_a_stack_without_the_pool_is_refused_by_name() -> None:
    stack = _spec().decoder
    assert stack is not None and stack.indexer is not None
    bare = stack.model_copy(update={"indexer": stack.indexer.model_copy(update={"pool": None})})
    with pytest.raises(InputError, match="indexer.pool"):
        list(KIND.tensors("self_attn", bare.at(1)))
