"""Mistral Large 4's attention kind (`scaled_dsa`): full-rank queries, softmax scaling, an
indexer over the hidden state, NoPE layers without a rope part; its state is indexed MLA's.
Tensor shapes follow `MistralLarge4TextAttention` / `MistralLarge4TextIndexer`
(transformers 5.25 models/mistral_large4), as the meta-built model names them."""

from __future__ import annotations

import json

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

KIND = kinds.get("scaled_dsa")
SMALL = DATA / "configs-2026-late" / "constructed--mistral_large4_text-small.json"


def _decoder():  # type: ignore[no-untyped-def]
    spec = from_hf_config(json.loads(SMALL.read_text()), SMALL.name)
    assert spec.decoder is not None
    return spec


def _shapes(index: int) -> dict[str, tuple[int, ...]]:
    stack = _decoder().decoder.at(index)
    return {name: shape for name, shape, *_ in KIND.tensors("self_attn", stack)}


def test_a_rope_layer_with_its_own_indexer() -> None:
    """Layer 0 of the small config: 8 heads, nope 64 + rope 32, v 96, latent 128, 4 index
    heads of 64 over a 1,024-wide hidden state."""
    shapes = _shapes(0)
    assert shapes["self_attn.q_proj.weight"] == (8 * 96, 1024)
    assert shapes["self_attn.kv_a_proj_with_mqa.weight"] == (128 + 32, 1024)
    assert shapes["self_attn.kv_b_proj.weight"] == (8 * (64 + 96), 128)
    assert shapes["self_attn.softmax_scaling.scale"] == (8,)
    assert shapes["self_attn.indexer.wq_b.weight"] == (4 * 64, 1024)
    assert shapes["self_attn.indexer.q_input_norm.bias"] == (1024,)
    assert shapes["self_attn.indexer.softmax_scaling.bias"] == (4,)


def test_a_nope_layer_folds_rope_into_the_key_and_a_shared_layer_has_no_indexer() -> None:
    shapes = _shapes(1)  # NoPE, indexer "shared"
    assert shapes["self_attn.kv_a_proj_with_mqa.weight"] == (128, 1024)
    assert shapes["self_attn.kv_b_proj.weight"] == (8 * (64 + 32 + 96), 128)
    assert shapes["self_attn.q_proj.weight"] == (8 * 96, 1024)
    assert not any(".indexer." in name for name in shapes)
    assert KIND.rotary_dim(_decoder().decoder.at(1)) == 0
    assert KIND.rotary_dim(_decoder().decoder.at(0)) == 32


def test_state_per_layer() -> None:
    """Latent 128 + 32 on rope layers, 128 on NoPE ones; a 64-element indexer key where the
    layer runs its own indexer (layers 0, 3, 5), sized as indexed MLA state (fp8 key plus
    one fp32 scale per 128 elements: 64 + 0 scales)."""
    layers = state_layers(_decoder())
    assert {layer.kind for layer in layers} == {"indexed_mla"}
    result = size_state(StateRequest(layers=layers, tokens=10))
    expected = {(160, 64): 2, (128, 0): 2, (160, 0): 3, (128, 64): 1}
    rows = dict.fromkeys(expected, 0)
    for layer in layers:
        rows[(layer.latent_dim, layer.index_dim)] += layer.count
    assert rows == expected
    assert result.bytes_per_token == sum(
        n * (latent * 2 + index) for (latent, index), n in expected.items())
