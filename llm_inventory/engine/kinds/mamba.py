"""Mamba (v1) and Mamba-2 state-space mixers: a fixed state per sequence, overwritten every
step.

- Tensors as transformers lays them out: in_proj, a depthwise conv1d, x_proj and dt_proj
  (Mamba-1) or per-head dt_bias / A_log / D and a gated norm (Mamba-2), out_proj.
- State per sequence and layer: the conv window, (d_conv − 1) × conv channels, plus the SSM
  state, d_inner × d_state (Mamba-1) or heads × head_dim × d_state (Mamba-2). Tensor
  parallelism splits both with the mixer's channels.
- Scan FLOPs: about 6 × d_inner × d_state per token.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.base import Kind, StateLayer
from llm_inventory.errors import InputError
from llm_inventory.spec.model import SSM, Component, Shard, Stack
from llm_inventory.units import bytes_for


def _ssm(stack: Stack) -> SSM:
    if stack.ssm is None or not stack.hidden_size:
        raise InputError("decoder.ssm", "mamba layers need the ssm block and hidden_size")
    return stack.ssm


def ssm_dims(s: Stack) -> tuple[int, int, int, int]:
    """(d_inner, dt_rank or heads, conv channels, SSM state elements) of a Mamba mixer."""
    m = _ssm(s)
    hidden = s.hidden_size or 0
    d_inner = m.expand * hidden
    if m.version == 1:
        dt_rank = m.dt_rank or math.ceil(hidden / 16)
        return d_inner, dt_rank, d_inner, d_inner * m.d_state
    heads = m.heads or d_inner // m.head_dim
    conv = d_inner + 2 * m.n_groups * m.d_state
    return d_inner, heads, conv, heads * (d_inner // heads) * m.d_state


def ssm_state_elements(stack: Stack) -> int:
    """Elements of one sequence's Mamba state in one layer: conv window + SSM state."""
    _, _, conv, ssm = ssm_dims(stack)
    return (_ssm(stack).d_conv - 1) * conv + ssm


class Mamba(Kind):
    name = "mamba"
    state = "recurrent"
    module = "mixer"
    grows = False
    holds_tokens = False
    release = "fixed size, overwritten every step: freed when the sequence ends, never partially"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        m, hidden, x = _ssm(stack), stack.hidden_size or 0, Component.MIXER
        d_inner, second, conv, _ = ssm_dims(stack)
        col, row = Shard.COLUMN, Shard.ROW
        if m.version == 1:
            dt_rank = second
            yield from linear(f"{prefix}.in_proj", 2 * d_inner, hidden, x, col, m.proj_bias)
            yield f"{prefix}.conv1d.weight", (d_inner, 1, m.d_conv), x, col, False, 0
            if m.conv_bias:
                yield f"{prefix}.conv1d.bias", (d_inner,), x, col, False, 0
            yield from linear(f"{prefix}.x_proj", dt_rank + 2 * m.d_state, d_inner, x, row,
                              False)
            yield from linear(f"{prefix}.dt_proj", d_inner, dt_rank, x, col, True)
            yield f"{prefix}.A_log", (d_inner, m.d_state), x, col, False, 0
            yield f"{prefix}.D", (d_inner,), x, col, False, 0
            if m.inner_norms:
                rep = Shard.REPLICATED
                yield f"{prefix}.dt_layernorm.weight", (dt_rank,), x, rep, False, 0
                yield f"{prefix}.b_layernorm.weight", (m.d_state,), x, rep, False, 0
                yield f"{prefix}.c_layernorm.weight", (m.d_state,), x, rep, False, 0
        else:
            heads = second
            width = 2 * d_inner + 2 * m.n_groups * m.d_state + heads
            yield from linear(f"{prefix}.in_proj", width, hidden, x, col, m.proj_bias)
            yield f"{prefix}.conv1d.weight", (conv, 1, m.d_conv), x, col, False, 0
            if m.conv_bias:
                yield f"{prefix}.conv1d.bias", (conv,), x, col, False, 0
            for name in ("dt_bias", "A_log", "D"):
                yield f"{prefix}.{name}", (heads,), x, col, False, 0
            if m.gated_norm:
                yield f"{prefix}.norm.weight", (d_inner,), x, col, False, 0
        yield from linear(f"{prefix}.out_proj", hidden, d_inner, x, row, m.proj_bias)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        return StateLayer(kind=self.state, first=index,
                          state_elements=ssm_state_elements(stack),
                          dtype=_ssm(stack).state_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        d_inner, _, _, _ = ssm_dims(stack)
        return 6 * d_inner * _ssm(stack).d_state * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        if tp == 1:
            return [], []
        d_inner, second, _, _ = ssm_dims(stack)
        if _ssm(stack).version == 2 and second % tp:
            return [f"tp {tp} does not divide the {second} Mamba-2 heads"], []
        if d_inner % tp:
            return [f"tp {tp} does not divide the Mamba inner width {d_inner}"], []
        return [], []

    def activation_width(self, stack: Stack, tp: int) -> int:
        d_inner, _, conv, _ = ssm_dims(stack)
        return (2 * d_inner + conv) // tp

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        return bytes_for(-(-layer.state_elements // tp), dtype)


KIND = Mamba()
