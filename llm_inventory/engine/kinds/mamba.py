"""Mamba (v1) and Mamba-2 state-space mixers: a fixed state per sequence, overwritten every
step (the shared rules of fixed-state kinds are in `recurrent.py`).

- Tensors as transformers lays them out: in_proj, a depthwise conv1d, x_proj and dt_proj
  (Mamba-1) or per-head dt_bias / A_log / D and a gated norm (Mamba-2), out_proj. The
  expanded width is expand × hidden, or the config's own (Nemotron-H: heads × head_dim,
  Falcon-H1: mamba_d_ssm).
- State per sequence and layer: the conv window, (d_conv − 1) × conv channels, plus the SSM
  state, d_inner × d_state (Mamba-1) or heads × head_dim × d_state (Mamba-2)
  (`MambaStateShapeCalculator.mamba1_state_shape` / `mamba2_state_shape`,
  vllm/model_executor/layers/mamba/mamba_utils.py). Tensor parallelism splits both with the
  mixer's heads; Mamba-2's B/C groups are widened to tp when tp does not divide them.
- TP: tp divides the Mamba-2 heads, and the groups or there is one group (vLLM
  `MambaMixer2`, vllm/model_executor/layers/mamba/mamba_mixer2.py).
- Scan FLOPs: about 6 × d_inner × d_state per token.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.errors import InputError
from llm_inventory.spec.model import SSM, Component, Shard, Stack


def _ssm(stack: Stack) -> SSM:
    if stack.ssm is None or not stack.hidden_size:
        raise InputError("decoder.ssm", "mamba layers need the ssm block and hidden_size")
    return stack.ssm


def ssm_dims(s: Stack) -> tuple[int, int, int, int]:
    """(d_inner, dt_rank or heads, conv channels, SSM state elements) of a Mamba mixer."""
    m = _ssm(s)
    hidden = s.hidden_size or 0
    d_inner = m.d_inner or m.expand * hidden
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


class Mamba(FixedState):
    requires = "ssm"
    name = "mamba"
    state = "recurrent"
    module = "mixer"

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
        out_bias = m.proj_bias if m.out_proj_bias is None else m.out_proj_bias
        yield from linear(f"{prefix}.out_proj", hidden, d_inner, x, row, out_bias)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        m = _ssm(stack)
        _, _, conv, ssm = ssm_dims(stack)
        return StateLayer(kind=self.state, first=index, state_elements=ssm,
                          conv_channels=conv, conv_window=m.d_conv - 1,
                          conv_groups=m.n_groups if m.version == 2 else 0,
                          group_channels=2 * m.d_state if m.version == 2 else 0,
                          dtype=m.state_dtype, conv_dtype=m.conv_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        d_inner, _, _, _ = ssm_dims(stack)
        return 6 * d_inner * _ssm(stack).d_state * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        if tp == 1:
            return [], []
        d_inner, second, _, _ = ssm_dims(stack)
        m = _ssm(stack)
        if m.version == 2 and second % tp:
            return [f"tp {tp} does not divide the {second} Mamba-2 heads"], []
        if m.version == 2 and m.n_groups % tp and m.n_groups != 1:
            return [f"tp {tp} does not divide the {m.n_groups} Mamba-2 groups"], []
        if d_inner % tp:
            return [f"tp {tp} does not divide the Mamba inner width {d_inner}"], []
        return [], []

    def activation_width(self, stack: Stack, tp: int) -> int:
        d_inner, _, conv, _ = ssm_dims(stack)
        return (2 * d_inner + conv) // tp


KIND = Mamba()
