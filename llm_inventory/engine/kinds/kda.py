"""Kimi Delta Attention (Kimi Linear): Gated DeltaNet with a per-channel decay from a
low-rank forget gate (shared rules of fixed-state kinds: `recurrent.py`).

- Tensors (transformers `KimiLinearDeltaAttention` and `KimiLinearForgetGate`,
  models/kimi_linear/modeling_kimi_linear.py): q, k and v projections (heads × head dim
  each), one depthwise conv1d over the three (vLLM keeps three, q/k/v_conv1d, of the same
  total), the forget gate f_a (hidden → head dim) and f_b (head dim → heads × head dim;
  Ling 3, `BailingHybridForgetGate` in models/bailing_hybrid: one full-rank f_proj) with
  a per-channel dt_bias and per-head A_log, β per head (b_proj), the output gate g_a / g_b
  (Kimi-K3: one full-rank g_proj), a gated RMSNorm over the head dim and o_proj.
- State per sequence and layer: conv window (kernel − 1) × 3 × heads × head dim, and the
  recurrent state heads × head dim × head dim, always fp32
  (`MambaStateShapeCalculator.kda_state_shape`, `MambaStateDtypeCalculator.kda_state_dtype`,
  vllm/model_executor/layers/mamba/mamba_utils.py).
- TP: the heads split over the ranks (tp divides them), conv channels with them.
- FLOPs beyond the projections: about 6 × state elements per token (an estimate).
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.gdn import head_limits, linear_block
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.spec.model import Component, Shard, Stack


class KimiDeltaAttention(FixedState):
    requires = "linear_attention"
    name = "kda"
    module = "self_attn"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        la, hidden, x = linear_block(stack, self.name), stack.hidden_size or 0, Component.ATTENTION
        heads, dim = la.key_heads, la.key_head_dim
        width, col, rep = heads * dim, Shard.COLUMN, Shard.REPLICATED
        for name in ("q_proj", "k_proj", "v_proj"):
            yield from linear(f"{prefix}.{name}", width, hidden, x, col, False)
        yield f"{prefix}.conv1d.weight", (3 * width, 1, la.conv_kernel), x, col, False, 0
        if la.full_rank_forget_gate:  # Ling 3: one full-rank forget gate
            yield from linear(f"{prefix}.forget_gate.f_proj", width, hidden, x, col, False)
        else:
            yield from linear(f"{prefix}.forget_gate.f_a_proj", dim, hidden, x, rep, False)
            yield from linear(f"{prefix}.forget_gate.f_b_proj", width, dim, x, col, False)
        yield f"{prefix}.forget_gate.dt_bias", (width,), x, col, False, 0
        yield f"{prefix}.forget_gate.A_log", (la.decay_entries or heads,), x, col, False, 0
        yield from linear(f"{prefix}.b_proj", heads, hidden, x, col, False)
        if la.full_rank_gate:  # Kimi-K3: one full-rank output gate
            yield from linear(f"{prefix}.g_proj", width, hidden, x, col, False)
        else:
            yield from linear(f"{prefix}.g_a_proj", dim, hidden, x, rep, False)
            yield from linear(f"{prefix}.g_b_proj", width, dim, x, col, False)
        yield f"{prefix}.o_norm.weight", (dim,), x, rep, False, 0
        yield from linear(f"{prefix}.o_proj", hidden, width, x, Shard.ROW, False)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        la = linear_block(stack, self.name)
        width = la.key_heads * la.key_head_dim
        return StateLayer(kind=self.state, first=index,
                          state_elements=width * la.key_head_dim,
                          conv_channels=3 * width, conv_window=max(0, la.conv_kernel - 1),
                          dtype=la.state_dtype, conv_dtype=la.conv_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        la = linear_block(stack, self.name)
        return 6 * la.key_heads * la.key_head_dim ** 2 * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        la = linear_block(stack, self.name)
        return head_limits("KDA", {"heads": la.key_heads}, tp), []

    def activation_width(self, stack: Stack, tp: int) -> int:
        la = linear_block(stack, self.name)
        return 3 * la.key_heads * la.key_head_dim // tp


KIND = KimiDeltaAttention()
