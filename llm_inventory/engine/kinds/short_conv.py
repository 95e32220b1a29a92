"""Gated short convolution (LFM2): in_proj to three hidden-wide streams (B, C, x), a
depthwise causal conv of `kernel` taps over B·x, C gating, out_proj; its state is the conv
window alone (shared rules of fixed-state kinds: `recurrent.py`).

- Tensors (transformers `Lfm2ShortConv`, models/lfm2/modeling_lfm2.py): in_proj
  (hidden → 3 × hidden), conv (hidden, 1, kernel), out_proj; biases when `conv_bias`.
- State per sequence and layer: (kernel − 1) × hidden in the model's dtype
  (`MambaStateShapeCalculator.short_conv_state_shape`, `short_conv_state_dtype`,
  vllm/model_executor/layers/mamba/mamba_utils.py; vLLM's `Lfm2ForCausalLM` passes
  conv_L_cache as the kernel, vllm/model_executor/models/lfm2.py).
- TP: the hidden channels split over the ranks (tp divides hidden_size).
- FLOPs beyond the projections: 2 × kernel × hidden per token.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Shard, ShortConv, Stack


def _conv(stack: Stack) -> ShortConv:
    if stack.short_conv is None or not stack.hidden_size:
        raise InputError("decoder.short_conv",
                         "short_conv layers need the short_conv block and hidden_size")
    return stack.short_conv


class ShortConvolution(FixedState):
    requires = "short_conv"
    name = "short_conv"
    module = "conv"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        sc, hidden, x = _conv(stack), stack.hidden_size or 0, Component.MIXER
        yield from linear(f"{prefix}.in_proj", 3 * hidden, hidden, x, Shard.COLUMN, sc.bias)
        yield f"{prefix}.conv.weight", (hidden, 1, sc.kernel), x, Shard.COLUMN, False, 0
        if sc.bias:
            yield f"{prefix}.conv.bias", (hidden,), x, Shard.COLUMN, False, 0
        yield from linear(f"{prefix}.out_proj", hidden, hidden, x, Shard.ROW, sc.bias)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        sc = _conv(stack)
        return StateLayer(kind=self.state, first=index, conv_channels=stack.hidden_size or 0,
                          conv_window=sc.kernel - 1, dtype=sc.state_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        return 2 * _conv(stack).kernel * (stack.hidden_size or 0) * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        hidden = stack.hidden_size or 0
        if hidden % tp:
            return [f"tp {tp} does not divide the {hidden} short-conv channels"], []
        return [], []

    def activation_width(self, stack: Stack, tp: int) -> int:
        return 3 * (stack.hidden_size or 0) // tp


KIND = ShortConvolution()
