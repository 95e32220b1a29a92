"""The fixed-state kinds (Mamba, Gated DeltaNet, KDA, lightning attention, short convolution):
state per sequence on one TP rank as vLLM shapes it, TP limits, release and paging rules.

Expected shapes are written out from `MambaStateShapeCalculator`
(vllm/model_executor/layers/mamba/mamba_utils.py): gated_delta_net_state_shape
(conv_dim / tp, kernel − 1 + 0 spec tokens) and (v_heads / tp, v_dim, k_dim); kda_state_shape
(3 × heads × dim / tp, kernel − 1) and (heads / tp, dim, dim); mamba2_state_shape with the
groups widened to tp when tp does not divide them; linear_attention_state_shape
(heads / tp, dim, dim); short_conv_state_shape (hidden / tp, kernel − 1).
"""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

FIXED = ("mamba", "gdn", "kda", "lightning", "short_conv")


def _spec(relative: str) -> ModelSpec:
    return from_hf_config(json.loads((DATA / relative).read_text()), relative)


def _fixed(relative: str) -> StateLayer:
    return next(r for r in state_layers(_spec(relative)) if not r.elements_per_token())


def _bytes(layer: StateLayer, tp: int) -> int:
    kind = kinds.get(layer.kind)
    return kind.fixed_bytes(layer, layer.dtype or "bf16", tp)


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_gated_deltanet_state_per_rank(tp: int) -> None:
    """Qwen3.5-397B-A17B: 16 key heads, 64 value heads of 128, kernel 4; conv bf16, state
    fp32 (mamba_ssm_dtype)."""
    layer = _fixed("configs-2026-more/Qwen--Qwen3.5-397B-A17B.json")
    conv_dim = 128 * 16 * 2 + 128 * 64
    assert _bytes(layer, tp) == conv_dim // tp * 3 * 2 + 64 // tp * 128 * 128 * 4


def test_gated_deltanet_tp_must_divide_key_and_value_heads() -> None:
    stack = _spec("configs-2026/Qwen3-Next-80B-A3B.json").decoder
    assert stack is not None
    gdn = kinds.get("gdn")
    assert gdn.tp_limits(stack, 16) == ([], [])
    assert gdn.tp_limits(stack, 32)[0] == [
        "tp 32 does not divide the 16 linear-attention key heads"]
    assert len(gdn.tp_limits(stack, 3)[0]) == 2


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_kda_state_is_fp32_and_shards_by_head(tp: int) -> None:
    layer = _fixed("transformers-defaults-2026/kimi_linear.json")
    assert layer.dtype == "fp32" and layer.conv_dtype == "bf16"
    assert _bytes(layer, tp) == 3 * 32 * 128 // tp * 3 * 2 + 32 // tp * 128 * 128 * 4


@pytest.mark.parametrize(("tp", "conv_channels"), [
    (1, 1024 + 2 * 1 * 256), (2, 1024 // 2 + 2 * 256), (4, 1024 // 4 + 2 * 256)])
def test_mamba2_widens_one_group_to_tp_groups(tp: int, conv_channels: int) -> None:
    """Falcon-H1's defaults: one B/C group of d_state 256; vLLM gives every rank a copy."""
    layer = _fixed("transformers-defaults-2026/falcon_h1.json")
    assert _bytes(layer, tp) == conv_channels * 3 * 2 + 128 // tp * 8 * 256 * 2


def test_mamba2_groups_must_divide_or_be_one() -> None:
    stack = _spec("configs-2026/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json").decoder
    assert stack is not None
    mamba = kinds.get("mamba")
    assert mamba.tp_limits(stack, 8) == ([], [])
    assert mamba.tp_limits(stack, 16)[0] == ["tp 16 does not divide the 8 Mamba-2 groups"]


def test_lightning_state_has_no_conv_window() -> None:
    layer = _fixed("transformers-defaults-2026/minimax.json")
    assert layer.conv_channels == 0 and layer.conv_window == 0
    assert _bytes(layer, 4) == 32 // 4 * 128 * 128 * 2


def test_short_conv_keeps_kernel_minus_one_inputs() -> None:
    layer = _fixed("hybrid-derived/lfm2-conv-layers.json")
    assert layer.state_elements == 0 and layer.conv_window == 2
    assert _bytes(layer, 2) == 2048 // 2 * 2 * 2


@pytest.mark.parametrize("name", FIXED)
def test_every_fixed_kind_is_paged_one_page_per_request(name: str) -> None:
    kind = kinds.get(name)
    assert kind.paged_state and not kind.grows and not kind.holds_tokens
    assert "never partially" in kind.release
    assert kind.request_blocks(None, 784, 262_144, 8192) == 1


def test_fixed_state_does_not_grow_with_the_context() -> None:
    layers = state_layers(_spec("configs-2026/Qwen3.5-27B.json"))
    short, long = (size_state(StateRequest(layers=layers, tokens=t)) for t in (1_000, 100_000))
    assert short.fixed_bytes_per_sequence == long.fixed_bytes_per_sequence > 0
    # 48 GDN layers of (10,240 × 3) bf16 + 48 × 128 × 128 fp32.
    assert short.fixed_bytes_per_sequence == 48 * (10_240 * 3 * 2 + 48 * 128 * 128 * 4)
    assert long.bytes_per_token == 16 * 4 * 256 * 2 * 2


@pytest.mark.parametrize("relative", [
    "configs-2026/Qwen3-Next-80B-A3B.json", "transformers-defaults-2026/kimi_linear.json",
    "transformers-defaults-2026/minimax.json", "hybrid-derived/lfm2-conv-layers.json",
    "configs-2026/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json"])
def test_every_fixed_kind_adds_scan_flops(relative: str) -> None:
    stack = _spec(relative).decoder
    assert stack is not None
    for kind, shaped in kinds.variants(stack):
        if kind.paged_state:
            assert kind.score_flops(shaped, 0, 10, 0) > 0
            assert kind.activation_width(shaped, 1) > 0
