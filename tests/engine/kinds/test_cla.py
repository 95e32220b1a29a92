"""The cla kind (Hunyuan cross-layer attention): no k/v projections, full attention's state,
its release rule, TP limits and paging; and vLLM's page-size unification for layers of
unequal pages, which per-layer KV head counts (MiMo-V2-Flash) make."""

from __future__ import annotations

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.serving.base import KvLayer
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.spec.model import Family, ModelSpec, Stack


def _stack(**kw: object) -> Stack:
    return Stack(layers=4, hidden_size=64, heads=4, kv_heads=2, head_dim=16,
                 intermediate_size=128, vocab_size=100, **kw)  # type: ignore[arg-type]


def test_cla_layers_have_no_kv_projections() -> None:
    full = count_parameters(ModelSpec(name="f", family=Family.DENSE, decoder=_stack()))
    cla = count_parameters(ModelSpec(name="c", family=Family.DENSE,
                                     decoder=_stack(layer_types=["full", "cla"])))
    # Two cla layers: no k_proj, no v_proj (2 KV heads × 16 wide, from 64) in each.
    assert full.total - cla.total == 2 * 2 * (2 * 16 * 64)
    names = [t[0] for t in kinds.get("cla").tensors("self_attn", _stack())]
    assert names == ["self_attn.q_proj.weight", "self_attn.o_proj.weight"]
    rules = [rule.what for rule in kinds.get("cla").shape_rules(_stack())]
    assert rules == ["query width (heads × head_dim)",
                     "attention output width (heads × value head_dim)"]


def test_cla_keeps_full_attention_state() -> None:
    """Each cla layer caches the K/V it reuses (Hunyuan's own code and vLLM both do)."""
    cla, full = kinds.get("cla"), kinds.get("full")
    layer = cla.state_layer(_stack(layer_types=["cla"]), 1, 0)
    assert layer is not None and layer.kind == "cla"
    twin = StateLayer(kind="full", kv_heads=2, k_head_dim=16, v_head_dim=16)
    assert cla.bytes_per_token(layer, "bf16") == full.bytes_per_token(twin, "bf16") == 128
    assert cla.tokens_held(layer, 1000, 16) == 1008
    assert cla.request_blocks(None, 16, 1000, 8192) == 63
    assert cla.tp_limits(_stack(), 3) == full.tp_limits(_stack(), 3)
    assert "reuses" in cla.release and cla.label(None).startswith("cla")


def test_smaller_pages_grow_their_block_size_as_vllm_unifies_them() -> None:
    """MiMo-V2-Flash on one device: 9 full layers of 4 KV heads × (192 + 128) (2,560 B a
    token) beside 39 sliding layers of 8 (5,120 B). vLLM's unify_kv_cache_spec_page_size
    doubles the full layers' block size to 32: groups of 9 layers, one full group needing
    ⌈32,000 ÷ 32⌉ = 1,000 blocks and five sliding groups ⌈(127 + 8,192) ÷ 16⌉ + 1 = 521 each."""
    layers = [KvLayer(kind="full", bytes_per_token=2560)] * 9 + [
        KvLayer(kind="sliding", window=128, bytes_per_token=5120)] * 39
    pool = pool_layout(layers, block_size=16, max_model_len=32000, max_num_batched_tokens=8192)
    assert (pool.page, pool.groups, pool.need) == (16 * 5120 * 9, 6, 1000 + 5 * 521)
    # Tokens are reported per the smallest block size (the widest layers', 16).
    assert pool.measure(pool.page * 60)[1] == 60 // 6 * 16


def test_one_kind_of_unequal_layers_stays_one_group() -> None:
    """Full layers of different widths are one group (vLLM's UniformTypeKVCacheSpecs)."""
    layers = [KvLayer(kind="full", bytes_per_token=2560)] * 2 + [
        KvLayer(kind="full", bytes_per_token=5120)] * 2
    pool = pool_layout(layers, block_size=16, max_model_len=1000, max_num_batched_tokens=8192)
    assert (pool.page, pool.groups, pool.need) == (16 * 15360, 1, 63)
