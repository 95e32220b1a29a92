"""Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): per head a key × value state
matrix updated by a gated delta rule, fed through a short causal conv over q, k and v
(shared rules of fixed-state kinds: `recurrent.py`).

- Tensors (transformers `Qwen3NextGatedDeltaNet`, models/qwen3_next/modeling_qwen3_next.py,
  and `Qwen3_5GatedDeltaNet`, models/qwen3_5/modeling_qwen3_5.py): input projections to
  q and k (key heads × key dim each), v and the output gate z (value heads × value dim
  each), and per value head β and the decay a — fused as in_proj_qkvz + in_proj_ba in
  Qwen3-Next, split as in_proj_qkv, in_proj_z, in_proj_b, in_proj_a in Qwen3.5; a depthwise
  conv1d over q, k, v (no bias); per value head dt_bias and A_log; a gated RMSNorm over the
  value head dim; out_proj.
- State per sequence and layer: conv window (kernel − 1) × (2 × key heads × key dim + value
  heads × value dim), and the recurrent state value heads × value dim × key dim
  (`MambaStateShapeCalculator.gated_delta_net_state_shape`,
  vllm/model_executor/layers/mamba/mamba_utils.py). The conv window is in the model's dtype,
  the state in `mamba_ssm_dtype` where the config names one (vLLM
  `Qwen3_5ForConditionalGenerationConfig`, vllm/model_executor/models/config.py; Qwen3-Next
  names none, so vLLM keeps it in the model dtype while transformers' cache holds fp32).
- TP: vLLM shards the key and value heads (`Qwen3NextGatedDeltaNet`,
  vllm/model_executor/models/qwen3_next.py), so tp divides both, and conv channels follow.
- FLOPs beyond the projections: about 6 × state elements per token (decay, the delta
  update and the read-out each touch the state) — an estimate.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, LinearAttention, Shard, Stack


def linear_block(stack: Stack, kind: str) -> LinearAttention:
    """The stack's linear-attention facts (InputError naming the block when absent)."""
    if stack.linear_attention is None or not stack.hidden_size:
        raise InputError("decoder.linear_attention",
                         f"{kind} layers need the linear_attention block and hidden_size")
    return stack.linear_attention


def head_limits(what: str, heads: dict[str, int], tp: int) -> list[str]:
    """Reasons `tp` cannot split these head counts."""
    return [f"tp {tp} does not divide the {n} {what} {name}"
            for name, n in heads.items() if n % tp]


def _dims(la: LinearAttention) -> tuple[int, int, int]:
    """(key width, value width, conv channels)."""
    key, value = la.key_heads * la.key_head_dim, la.v_heads * la.v_dim
    return key, value, 2 * key + value


class GatedDeltaNet(FixedState):
    requires = "linear_attention"
    name = "gdn"
    module = "linear_attn"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        la, hidden, x = linear_block(stack, self.name), stack.hidden_size or 0, Component.MIXER
        key, value, conv = _dims(la)
        col, heads = Shard.COLUMN, la.v_heads
        if la.fused_projections:
            yield from linear(f"{prefix}.in_proj_qkvz", 2 * key + 2 * value, hidden, x, col,
                              False)
            yield from linear(f"{prefix}.in_proj_ba", 2 * heads, hidden, x, col, False)
        else:
            yield from linear(f"{prefix}.in_proj_qkv", conv, hidden, x, col, False)
            yield from linear(f"{prefix}.in_proj_z", value, hidden, x, col, False)
            yield from linear(f"{prefix}.in_proj_b", heads, hidden, x, col, False)
            yield from linear(f"{prefix}.in_proj_a", heads, hidden, x, col, False)
        yield f"{prefix}.conv1d.weight", (conv, 1, la.conv_kernel), x, col, False, 0
        yield f"{prefix}.dt_bias", (heads,), x, col, False, 0
        yield f"{prefix}.A_log", (heads,), x, col, False, 0
        yield f"{prefix}.norm.weight", (la.v_dim,), x, Shard.REPLICATED, False, 0
        yield from linear(f"{prefix}.out_proj", hidden, value, x, Shard.ROW, False)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        la = linear_block(stack, self.name)
        _, _, conv = _dims(la)
        return StateLayer(kind=self.state, first=index,
                          state_elements=la.v_heads * la.v_dim * la.key_head_dim,
                          conv_channels=conv, conv_window=max(0, la.conv_kernel - 1),
                          dtype=la.state_dtype, conv_dtype=la.conv_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        la = linear_block(stack, self.name)
        return 6 * la.v_heads * la.v_dim * la.key_head_dim * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        la = linear_block(stack, self.name)
        return head_limits("linear-attention", {"key heads": la.key_heads,
                                                "value heads": la.v_heads}, tp), []

    def activation_width(self, stack: Stack, tp: int) -> int:
        key, value, _ = _dims(linear_block(stack, self.name))
        return (2 * key + 2 * value) // tp


KIND = GatedDeltaNet()
