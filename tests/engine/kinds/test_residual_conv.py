"""The residual_conv kind (Inkling's four short convolutions beside attention): its weights,
its state per sequence on one TP rank, and what it refuses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

DEFAULTS = "configs-2026-inkling/transformers-defaults--inkling_text.json"
SMALL = "configs-2026-inkling/constructed--inkling_text-small.json"
KIND = kinds.get("residual_conv")


def _spec(relative: str) -> ModelSpec:
    return from_hf_config(json.loads((DATA / relative).read_text()), relative)


def _convs(relative: str) -> list[StateLayer]:
    return [layer for layer in state_layers(_spec(relative)) if layer.kind == "residual_conv"]


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16, 32])
def test_state_per_rank_splits_the_kv_windows_and_keeps_the_residual_ones(tp: int) -> None:
    """Inkling's defaults, kernel 4 (3 positions kept), fp32: a sliding layer's K and V
    windows cover 16 heads of 128 and split with them (one head a rank past 16 ranks); the
    two residual windows are 6,144 channels on every rank."""
    sliding = next(c for c in _convs(DEFAULTS) if c.kv_heads == 16)
    heads = -(-16 // tp)
    assert KIND.fixed_bytes(sliding, "bf16", tp) == (2 * heads * 128 + 2 * 6144) * 3 * 4


def test_each_layer_has_four_conv_weights_of_its_own_heads() -> None:
    """k_sconv and v_sconv under self_attn at the layer's K/V width (4 heads × 4 on the
    small file's sliding layers, 2 × 16 on its full ones), attn_sconv and mlp_sconv at the
    hidden size; kernel 3."""
    found = {(g.name, g.shape, g.layers) for g in model_tensors(_spec(SMALL))
             if "sconv" in g.name}
    at = "model.layers.{i}"
    every = tuple(range(7))
    assert found == {
        *((f"{at}.self_attn.{n}_sconv.conv1d.weight", (16, 1, 3), (0, 1, 3, 4)) for n in "kv"),
        *((f"{at}.self_attn.{n}_sconv.conv1d.weight", (32, 1, 3), (2, 5, 6)) for n in "kv"),
        *((f"{at}.{n}_sconv.conv1d.weight", (64, 1, 3), every) for n in ("attn", "mlp")),
    }


def test_the_state_is_fixed_released_whole_and_paged_as_one_page() -> None:
    assert not KIND.grows and KIND.paged_state
    layer = _convs(SMALL)[0]
    assert KIND.elements_per_token(layer) == 0
    assert KIND.sequence_bytes(layer, 10_000, "bf16", 16) == KIND.fixed_bytes(layer, "bf16")
    assert KIND.request_blocks(None, 16, 10_000, 1) == 1


def test_a_record_without_channels_is_refused() -> None:
    with pytest.raises(InputError, match="conv_channels"):
        KIND.validate(StateLayer(kind="residual_conv", conv_window=3))


def test_a_stack_without_the_block_is_refused_by_name() -> None:
    stack = _spec(SMALL).decoder
    assert stack is not None
    with pytest.raises(InputError, match="residual_conv"):
        KIND.state_layer(stack.model_copy(update={"residual_conv": None}), 0, 0)


@given(tp=st.integers(1, 64), heads=st.integers(1, 64), dim=st.integers(1, 256),
       hidden=st.integers(1, 8192), window=st.integers(0, 7))
def test_more_ranks_never_hold_more(tp: int, heads: int, dim: int, hidden: int,
                                    window: int) -> None:
    layer = StateLayer(kind="residual_conv", kv_heads=heads, k_head_dim=dim,
                       conv_channels=2 * hidden, conv_window=window, conv_dtype="fp32")
    assert KIND.fixed_bytes(layer, "bf16", tp + 1) <= KIND.fixed_bytes(layer, "bf16", tp)
    assert KIND.fixed_bytes(layer, "bf16", tp) >= 2 * hidden * window * 4


def test_a_family_listing_its_own_conv_weights_gets_none_from_the_kind() -> None:
    """Inkling 2 (`ResidualConv.weights` false): the same state, no tensors of the kind."""
    spec = _spec("configs-2026-inkling2/constructed--inkling2_text-small.json")
    stack = spec.decoder
    assert stack is not None and stack.residual_conv is not None
    assert not stack.residual_conv.weights
    assert list(KIND.tensors("model.layers.{i}.self_attn", stack)) == []
    assert {c.conv_window for c in state_layers(spec) if c.kind == "residual_conv"} == {2}
