"""Lightning attention (MiniMax-Text-01, MiniMax-M1): linear attention with a fixed
per-head decay; per head a head dim × head dim state, no conv window (shared rules of
fixed-state kinds: `recurrent.py`).

- Tensors (transformers `MiniMaxLightningAttention`, models/minimax/modeling_minimax.py):
  a fused qkv_proj (3 × heads × head dim), an RMSNorm over heads × head dim, out_proj, and
  the output gate (hidden → heads × head dim); no biases.
- State per sequence and layer: heads × head dim × head dim in the model's dtype
  (`MambaStateShapeCalculator.linear_attention_state_shape` and
  `MambaStateDtypeCalculator.linear_attention_state_dtype`,
  vllm/model_executor/layers/mamba/mamba_utils.py; transformers' `MiniMaxCache` keeps the
  same [batch, heads, head dim, head dim]).
- TP: the heads split over the ranks (tp divides them).
- FLOPs beyond the projections: about 4 × state elements per token (decay and update, then
  the read-out) — an estimate.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.gdn import head_limits, linear_block
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.kinds.recurrent import FixedState
from llm_inventory.spec.model import Component, Shard, Stack


class Lightning(FixedState):
    requires = "linear_attention"
    name = "lightning"
    module = "self_attn"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        la, hidden, x = linear_block(stack, self.name), stack.hidden_size or 0, Component.ATTENTION
        width = la.key_heads * la.key_head_dim
        yield from linear(f"{prefix}.qkv_proj", 3 * width, hidden, x, Shard.COLUMN, False)
        yield f"{prefix}.norm.weight", (width,), x, Shard.COLUMN, False, 0
        yield from linear(f"{prefix}.out_proj", hidden, width, x, Shard.ROW, False)
        yield from linear(f"{prefix}.output_gate", width, hidden, x, Shard.COLUMN, False)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        la = linear_block(stack, self.name)
        return StateLayer(kind=self.state, first=index,
                          state_elements=la.key_heads * la.key_head_dim ** 2,
                          dtype=la.state_dtype)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        la = linear_block(stack, self.name)
        return 4 * la.key_heads * la.key_head_dim ** 2 * (stop - start)

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        la = linear_block(stack, self.name)
        return head_limits("lightning-attention", {"heads": la.key_heads}, tp), []

    def activation_width(self, stack: Stack, tp: int) -> int:
        la = linear_block(stack, self.name)
        return 3 * la.key_heads * la.key_head_dim // tp


KIND = Lightning()
