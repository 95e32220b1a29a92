"""DeepSeek-V4.1's layer kinds (`csa2`, `csa2_source`), against transformers main's
`DeepseekV41Attention` at commit 0a2080b4 (shapes below are its modules' shapes; whole-model
counts and caches are held to the meta-built model in tests/spec/test_deepseek_v41_2026.py)."""

from __future__ import annotations

import math

import pytest

from llm_inventory.engine import kinds
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Compression, Indexer, Stack

HIDDEN, HEADS, HD, Q, GROUPS, O_RANK, ROPE = 256, 8, 64, 96, 4, 48, 16
IX_HEADS, IX_DIM = 4, 32


def _stack(**changes: object) -> Stack:
    base = Stack(layers=1, hidden_size=HIDDEN, heads=HEADS, kv_heads=1, head_dim=HD,
                 intermediate_size=128, vocab_size=100, layer_types=["csa2"],
                 sliding_window=16,
                 compression=Compression(q_lora_rank=Q, o_groups=GROUPS, o_lora_rank=O_RANK,
                                         rope_dim=ROPE),
                 indexer=Indexer(heads=IX_HEADS, head_dim=IX_DIM, topk=8))
    return base.model_copy(update=changes)


def _count(kind: str, stack: Stack) -> dict[str, int]:
    return {name.rsplit("attn.", 1)[-1]: math.prod(shape)
            for name, shape, *_ in kinds.get(kind).tensors("layers.0.attn", stack)}


CORE = {"wq_a.weight": Q * HIDDEN, "q_norm.weight": Q, "wq_b.weight": HEADS * HD * Q,
        "wkv.weight": HD * HIDDEN, "kv_norm.weight": HD,
        "wo_a.weight": GROUPS * O_RANK * (HEADS * HD // GROUPS),
        "wo_b.weight": HIDDEN * GROUPS * O_RANK, "attn_sink": HEADS}
QUERY = {"indexer.wq_b.weight": IX_HEADS * IX_DIM * Q, "indexer.weights_proj.weight":
         IX_HEADS * HIDDEN}


def test_a_reader_is_the_core_and_an_index_source_adds_the_indexer_query() -> None:
    assert _count("csa2", _stack(shares_indexer=True)) == CORE
    assert _count("csa2", _stack(compress_ratio=2)) == CORE | QUERY


def test_a_source_adds_its_compressor_and_the_indexer_keys() -> None:
    pooled = _count("csa2_source", _stack(compress_ratio=4))
    assert pooled == CORE | QUERY | {
        "compressor.wkv.weight": HD * HIDDEN, "compressor.wgate.weight": HD * HIDDEN,
        "compressor.norm.weight": HD, "indexer.wk.weight": IX_DIM * HD,
        "indexer.k_norm.weight": IX_DIM}
    plain = _count("csa2_source", _stack(compress_ratio=1, shares_indexer=True))
    assert plain == CORE | {"compressor.wkv.weight": HD * HIDDEN,
                            "compressor.norm.weight": HD}


def test_a_reader_keeps_its_window_alone() -> None:
    kind = kinds.get("csa2")
    layer = kind.state_layer(_stack(compress_ratio=2), 0, 0)
    assert layer is not None
    assert kind.elements_per_token(layer) == 0
    assert kind.sequence_bytes(layer, 10, "bf16", None) == 10 * HD * 2
    assert kind.sequence_bytes(layer, 1000, "bf16", None) == 16 * HD * 2
    assert kind.tokens_held(layer, 1000, None) == 16
    assert "window" in kind.release


def test_a_source_keeps_its_groups_entries_keys_and_partial_group() -> None:
    kind = kinds.get("csa2_source")
    layer = kind.state_layer(_stack(compress_ratio=4), 3, 0)
    assert layer is not None and layer.ratio == 4 and layer.index_dim == IX_DIM
    assert kind.elements_per_token(layer) == (HD + IX_DIM) // 4
    state = 2 * 3 * HD * 4  # three tokens' latent and gate logits, fp32
    assert kind.fixed_bytes(layer, "bf16") == 16 * HD * 2 + state
    entries = 1000 // 4
    assert kind.sequence_bytes(layer, 1000, "bf16", None) == (
        entries * (HD + IX_DIM) * 2 + 16 * HD * 2 + state)
    # paged: whole blocks of 64 tokens hold 16 entries each
    assert kind.tokens_held(layer, 1000, 64) == 16 * 16
    assert kind.page_group(16) == ("compressed", None)
    plain = kind.state_layer(_stack(compress_ratio=1, shares_indexer=True), 0, 0)
    assert plain is not None and plain.state_elements == 0 and plain.index_dim == 0


def test_a_source_needs_its_ratio() -> None:
    with pytest.raises(InputError, match="compress_ratio"):
        kinds.get("csa2_source").state_layer(_stack(), 0, 0)


def test_tensor_parallelism_splits_heads_and_output_groups_whole() -> None:
    reasons, warnings = kinds.get("csa2").tp_limits(_stack(), 8)
    assert reasons == ["tp 8 does not divide the 4 output groups"]
    assert warnings and "replicated" in warnings[0]
    assert kinds.get("csa2_source").tp_limits(_stack(compress_ratio=2), 4)[0] == []
