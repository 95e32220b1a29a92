"""Residual short convolutions beside attention (Inkling): four depthwise causal convs of
`kernel` taps, no bias, each added back to its input — on K and on V after their
projections, and on the attention and the MLP outputs before each residual add. A mixer
run beside every layer's attention (`Stack.parallel_mixers`); its state is four conv
windows, fixed per sequence (shared rules of fixed-state kinds: `recurrent.py`).

- Tensors (transformers 5.25 `InklingShortConvolution`, models/inkling/modeling_inkling.py):
  `self_attn.k_sconv` and `self_attn.v_sconv` of K/V heads × head dim channels, the layer's
  `attn_sconv` and `mlp_sconv` of hidden channels, each a (channels, 1, kernel) weight.
  transformers keeps them in float32 (`_keep_in_fp32_modules_strict`); they are counted here
  at the model's dtype, a few thousand parameters a layer. A family whose convolutions carry
  other weights (Inkling 2) lists them itself (`ResidualConv.weights` false); the state and
  its rules are the same.
- State per sequence and layer: the four windows, 2 × K/V heads × head dim + 2 × hidden
  channels, in float32 (transformers' `LinearAttentionLayer.conv_states[0..3]`, computed in
  float32 by `InklingShortConvolution.forward`). Kept as kernel − 1 positions, the window a
  causal-conv update reads, as the other conv windows here (transformers' cache keeps all
  kernel positions).
- TP: the K and V windows split with the K/V heads (a rank holds ⌈heads ÷ tp⌉ of them); the
  two residual windows are hidden-wide on every rank, since both act after the reductions.
  No mainline engine has an Inkling model file: this split is assumed, not read.
- FLOPs beyond the projections: 2 × kernel × channels per token.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, ResidualConv, Shard, Stack
from llm_inventory.units import bytes_for


def _conv(stack: Stack) -> ResidualConv:
    if stack.residual_conv is None or not stack.hidden_size:
        raise InputError("decoder.residual_conv",
                         "residual_conv mixers need the residual_conv block and hidden_size")
    return stack.residual_conv


def _channels(stack: Stack) -> int:
    """All four windows' channels in one layer."""
    return 2 * stack.n_kv_heads * stack.k_dim + 2 * (stack.hidden_size or 0)


class ResidualConvolution(FixedState):
    requires = "residual_conv"
    name = "residual_conv"
    module = "self_attn"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        conv, x = _conv(stack), Component.MIXER
        if not conv.weights:
            return
        kernel = conv.kernel
        layer = prefix.rsplit(".", 1)[0]
        kv = stack.n_kv_heads * stack.k_dim
        for name in ("k_sconv", "v_sconv"):
            yield f"{prefix}.{name}.conv1d.weight", (kv, 1, kernel), x, Shard.KV, False, 0
        for name in ("attn_sconv", "mlp_sconv"):
            yield (f"{layer}.{name}.conv1d.weight", (stack.hidden_size or 0, 1, kernel), x,
                   Shard.REPLICATED, False, 0)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        conv = _conv(stack)
        return StateLayer(kind=self.state, first=index, kv_heads=stack.n_kv_heads,
                          k_head_dim=stack.k_dim, conv_channels=2 * (stack.hidden_size or 0),
                          conv_window=conv.kernel - 1, dtype=conv.state_dtype,
                          conv_dtype=conv.state_dtype)

    def validate(self, layer: StateLayer) -> None:
        if layer.conv_channels + layer.kv_heads * layer.k_head_dim < 1:
            raise InputError("conv_channels", "a residual_conv layer needs its channels "
                             "(the hidden size, the K/V heads and their head dim)")

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        heads = -(-layer.kv_heads // tp)
        channels = 2 * heads * layer.k_head_dim + layer.conv_channels
        return bytes_for(channels * layer.conv_window, layer.conv_dtype or dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        return 2 * _conv(stack).kernel * _channels(stack) * (stop - start)


KIND = ResidualConvolution()
