"""Attention that reads another layer's KV cache: its own queries and output, no key or
value projections and no state of its own.

Tensors: q_proj (+ bias), a per-head q_norm when the stack has q/k norms, o_proj (+ bias)
— what transformers builds for a KV-shared layer (Gemma 3n and Gemma 4 `kv_sharing_modes`
"reuse": `Gemma4TextAttention.__init__` creates k_proj, v_proj, k_norm and v_norm only when
`not self.is_kv_shared_layer`). Score FLOPs are counted over every earlier position (the
kind does not know whether the layer it reads is windowed: an upper bound for a layer that
reads a sliding one).
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import Attention
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.spec.model import Component, Shard, Stack


class SharedKV(Attention):
    name = "shared"
    grows = False
    release = "stores nothing: the layer reads another layer's cache"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        hidden, heads = stack.hidden_size or 0, stack.heads or 0
        a = Component.ATTENTION
        q_rows = heads * stack.k_dim * (2 if stack.attn_output_gate else 1)
        yield from linear(f"{prefix}.q_proj", q_rows, hidden, a, Shard.COLUMN, stack.qkv_bias)
        yield from linear(f"{prefix}.o_proj", hidden, heads * stack.v_dim, a, Shard.ROW,
                          stack.o_bias)
        if stack.qk_norm == "head":
            yield f"{prefix}.q_norm.weight", (stack.k_dim,), a, Shard.REPLICATED, False, 0
        elif stack.qk_norm == "full":
            yield f"{prefix}.q_norm.weight", (heads * stack.k_dim,), a, Shard.COLUMN, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        if not stack.n_kv_heads:
            return None
        return StateLayer(kind=self.state, first=index)

    def validate(self, layer: StateLayer) -> None:
        return None

    def check_split(self, layer: StateLayer, tp: int) -> None:
        return None

    def heads_per_device(self, layer: StateLayer, tp: int) -> int | None:
        return None

    def replicated(self, layer: StateLayer, tp: int) -> bool:
        return False

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return 0

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return 0


KIND = SharedKV()
