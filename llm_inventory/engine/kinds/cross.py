"""Cross-attention to an encoder's output (Whisper, Mllama): K and V over the encoder's
tokens, fixed per request whatever the text's length, and reusable across questions about
the same input."""

from __future__ import annotations

from llm_inventory.engine.kinds.attention import Attention
from llm_inventory.engine.kinds.base import ShapeRule
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.spec.model import Stack
from llm_inventory.units import bytes_for


class CrossAttention(Attention):
    name = "cross"
    module = "cross_attn"
    grows = False
    reads_encoder = True
    release = ("belongs to the encoded input, not the text: reusable across questions about "
               "the same input, freed when no request uses that input")

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        if not stack.n_kv_heads:
            return None
        return StateLayer(kind=self.state, first=index, kv_heads=stack.n_kv_heads,
                          k_head_dim=stack.k_dim, v_head_dim=stack.v_dim,
                          encoder_tokens=encoder_tokens)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        return self.score_width(stack) * encoder_tokens * (stop - start)

    def rotary_dim(self, stack: Stack) -> int:
        return 0

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        return []

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return 0

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        heads = self.heads_per_device(layer, tp) or 0
        return bytes_for(heads * (layer.k_head_dim + layer.v_head_dim) * layer.encoder_tokens,
                         dtype)

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return layer.encoder_tokens


KIND = CrossAttention()
