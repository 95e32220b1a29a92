"""Persistent-state sizing: the seed's worked numbers, each kind's rule, and invariants."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from llm_inventory.engine.parallel import pp_partition
from llm_inventory.engine.state import (
    StateLayer,
    StateRequest,
    size_state,
    uniform_layers,
)
from llm_inventory.errors import InputError

SEED_STACK = uniform_layers("full", 80, kv_heads=8, head_dim=128)


def seed(**overrides: object) -> StateRequest:
    fields: dict[str, object] = {"layers": SEED_STACK, "tokens": 8000}
    fields.update(overrides)
    return StateRequest.model_validate(fields)


def test_seed_dense_decoder() -> None:
    """The chapter's cache formula: 2 × 8 × 128 × 2 B = 4,096 B; ×80 = 320 KiB; ×8,000."""
    result = size_state(seed())
    assert result.bytes_per_token_per_layer == 4096
    assert result.bytes_per_token == 327_680 == 320 * 1024
    assert result.bytes_per_sequence == 2_621_440_000
    assert round(result.bytes_per_sequence / 2**30, 2) == 2.44


def test_four_way_tp_is_625_mib_per_device() -> None:
    """The seed's four-way split: each device owes a quarter, 625 MiB per sequence."""
    device = size_state(seed(tp=4)).per_device
    assert device.bytes == 655_360_000 == 625 * 2**20
    assert device.kv_heads_per_device == 2
    assert not device.replicated


def test_tp_beyond_kv_heads_replicates_one_head() -> None:
    result = size_state(seed(tp=16))
    assert result.per_device.bytes == 327_680_000
    assert result.per_device.kv_heads_per_device == 1
    assert result.per_device.replicated
    assert result.device_sum_bytes == 2 * result.total_bytes


@pytest.mark.parametrize("tp", [3, 5, 6, 12, 20])
def test_impossible_tp(tp: int) -> None:
    with pytest.raises(InputError) as error:
        size_state(seed(tp=tp))
    assert error.value.field == "tp"


def test_scaling_rules() -> None:
    base = size_state(seed()).total_bytes
    wide = StateRequest(layers=uniform_layers("full", 80, kv_heads=32, head_dim=128),
                        tokens=8000)
    assert size_state(wide).total_bytes == 4 * base
    assert size_state(seed(dtype="fp8")).total_bytes == base // 2
    assert size_state(seed(dtype="fp32")).total_bytes == base * 2
    assert size_state(seed(sequences=4)).total_bytes == 4 * base
    assert size_state(seed(tokens=8192)).bytes_per_sequence == 8192 * 327_680


def test_sliding_window_caps() -> None:
    stack = uniform_layers("sliding", 80, kv_heads=8, head_dim=128, window=4096)
    result = size_state(StateRequest(layers=stack, tokens=8000))
    assert result.kinds[0].tokens_held == 4096
    assert result.bytes_per_sequence == 4096 * 327_680
    short = size_state(StateRequest(layers=stack, tokens=1000))
    assert short.bytes_per_sequence == 1000 * 327_680


def test_paged_block_rounding() -> None:
    assert size_state(seed(tokens=8001, block_size=16)).kinds[0].tokens_held == 8016
    assert size_state(seed(tokens=8000, block_size=16)).kinds[0].tokens_held == 8000
    # An unaligned sliding window spans one block more than its width.
    stack = uniform_layers("sliding", 1, kv_heads=8, head_dim=128, window=4096)
    held = size_state(StateRequest(layers=stack, tokens=8000, block_size=16)).kinds[0]
    assert held.tokens_held == (256 + 1) * 16


def test_mla_latent_is_not_doubled_nor_sharded() -> None:
    """DeepSeek-V2-Lite: 27 layers × 576 × 2 B = 31,104 B per token on every TP rank."""
    stack = uniform_layers("mla", 27, latent_dim=576)
    result = size_state(StateRequest(layers=stack, tokens=1, tp=4))
    assert result.bytes_per_token == 31_104
    assert result.per_device.bytes_per_token == 31_104
    assert result.per_device.replicated


def test_separate_k_and_v_widths() -> None:
    stack = uniform_layers("full", 1, kv_heads=2, head_dim=192, v_head_dim=128)
    assert size_state(StateRequest(layers=stack, tokens=1)).bytes_per_token == 2 * 320 * 2


def test_mixed_kinds_make_a_row_each() -> None:
    """A Jamba-like stack: 4 attention layers, 28 recurrent layers of fixed fp32 state."""
    layers = tuple(
        StateLayer(kind="full", first=i, kv_heads=8, k_head_dim=128, v_head_dim=128)
        if i % 8 == 4
        else StateLayer(kind="recurrent", first=i, state_elements=1000, dtype="fp32")
        for i in range(32)
    )
    result = size_state(StateRequest(layers=layers, tokens=100))
    rows = {row.kind: row for row in result.kinds}
    assert rows["full"].layers == 4
    assert rows["recurrent"].layers == 28
    assert rows["recurrent"].bytes_per_sequence == 28 * 4000
    assert result.fixed_bytes_per_sequence == 28 * 4000
    assert result.bytes_per_token == 4 * 4096
    assert result.bytes_per_token_per_layer is None


def test_cross_attention_is_fixed_per_request() -> None:
    layer = StateLayer(kind="cross", count=32, kv_heads=20, k_head_dim=64,
                       v_head_dim=64, encoder_tokens=1500)
    short = size_state(StateRequest(layers=(layer,), tokens=10))
    long = size_state(StateRequest(layers=(layer,), tokens=10_000))
    assert short.bytes_per_sequence == long.bytes_per_sequence == 32 * 2 * 20 * 64 * 1500 * 2


def test_shared_layers_store_nothing() -> None:
    layer = StateLayer(kind="shared", count=10)
    full = StateLayer(kind="full", first=10, count=10, kv_heads=1, k_head_dim=64,
                      v_head_dim=64)
    result = size_state(StateRequest(layers=(layer, full), tokens=100))
    assert result.bytes_per_sequence == 10 * 128 * 2 * 100


def test_every_kind_has_a_release_rule() -> None:
    from llm_inventory.engine import kinds

    for name in kinds.BUILT_IN:
        kind = kinds.get(name).state
        # a latent wider than its rope part (k_head_dim), and the packed record's format:
        # vLLM's packed sparse-MLA records exist in fp8 (fp8_ds_mla) and nvfp4 only
        layer = StateLayer(kind=kind, kv_heads=1, k_head_dim=1, v_head_dim=1, window=4,
                           latent_dim=2, encoder_tokens=1, state_elements=1,
                           dtype="fp8" if name == "packed_mla" else None)
        assert size_state(StateRequest(layers=(layer,), tokens=8)).kinds[0].release


def test_pp_partition_follows_vllm() -> None:
    assert pp_partition(80, 4) == [20, 20, 20, 20]
    assert pp_partition(10, 4) == [2, 3, 3, 2]
    assert pp_partition(61, 2) == [31, 30]
    assert pp_partition(7, 7) == [1] * 7
    with pytest.raises(InputError):
        pp_partition(4, 5)


def test_pp_reports_largest_stage() -> None:
    result = size_state(seed(pp=3))  # 80 layers → 26, 27, 27
    assert result.per_device.stage_layers == 27
    assert result.per_device.bytes == 27 * 4096 * 8000
    assert result.device_sum_bytes == result.total_bytes


# --- properties ---------------------------------------------------------------------------

heads = st.sampled_from([1, 2, 4, 8, 16, 32])
tps = st.sampled_from([1, 2, 4, 8, 16, 32, 64])


@given(tokens=st.integers(0, 10**6), extra=st.integers(0, 10**6), kv=heads,
       dim=st.sampled_from([64, 128, 256]))
def test_full_attention_is_linear_in_tokens(tokens: int, extra: int, kv: int, dim: int) -> None:
    stack = uniform_layers("full", 4, kv_heads=kv, head_dim=dim)
    a = size_state(StateRequest(layers=stack, tokens=tokens)).bytes_per_sequence
    b = size_state(StateRequest(layers=stack, tokens=tokens + extra)).bytes_per_sequence
    per_token = size_state(StateRequest(layers=stack, tokens=1)).bytes_per_sequence
    assert a == tokens * per_token
    assert b - a == extra * per_token


@given(window=st.integers(1, 10**5), tokens=st.integers(0, 10**6),
       block=st.sampled_from([None, 1, 16, 64]))
def test_sliding_is_monotone_and_flat_past_the_window(
    window: int, tokens: int, block: int | None
) -> None:
    stack = uniform_layers("sliding", 2, kv_heads=8, head_dim=128, window=window)

    def held(t: int) -> int:
        return size_state(StateRequest(layers=stack, tokens=t, block_size=block)).total_bytes

    assert held(tokens) <= held(tokens + 1)
    if tokens >= window + (block or 1) * 2:
        assert held(tokens) == held(tokens + 1000)


@given(kv=heads, tp=tps, pp=st.integers(1, 8), tokens=st.integers(0, 10**5),
       sequences=st.integers(1, 64))
def test_device_shares_cover_the_total(kv: int, tp: int, pp: int, tokens: int,
                                       sequences: int) -> None:
    assume(kv % tp == 0 or tp % kv == 0)
    stack = uniform_layers("full", 24, kv_heads=kv, head_dim=64)
    result = size_state(StateRequest(layers=stack, tokens=tokens, sequences=sequences, tp=tp,
                                     pp=pp))
    assert result.device_sum_bytes >= result.total_bytes >= 0
    if tokens:
        assert (result.device_sum_bytes == result.total_bytes) == (not result.per_device.replicated)
    assert result.per_device.bytes * tp * pp >= result.total_bytes
    for row in result.kinds:
        assert row.bytes_per_sequence >= 0 and row.total_bytes >= 0
