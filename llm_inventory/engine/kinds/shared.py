"""Attention that reads another layer's KV cache: its own projections, no state of its own."""

from __future__ import annotations

from llm_inventory.engine.kinds.attention import Attention
from llm_inventory.engine.kinds.base import StateLayer
from llm_inventory.spec.model import Stack


class SharedKV(Attention):
    name = "shared"
    grows = False
    release = "stores nothing: the layer reads another layer's cache"

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
