"""Chunked local attention (Llama 4): a token attends only its own chunk of C positions.

A finished chunk is dead once the next starts, so at most C tokens are held. vLLM reserves,
per request, ⌈min(C + max_num_batched_tokens, max_model_len) ÷ block⌉ blocks
(`ChunkedLocalAttentionSpec.max_memory_usage_bytes`, vllm/v1/kv_cache_interface.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_inventory.engine.kinds.attention import Attention
from llm_inventory.engine.kinds.base import round_up
from llm_inventory.errors import InputError

if TYPE_CHECKING:
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import Stack


class ChunkedAttention(Attention):
    name = "chunked"
    requires = "chunk_size"
    release = "a finished chunk's entries are dead once the next chunk starts"

    def window(self, stack: Stack) -> int | None:
        return stack.chunk_size

    def validate(self, layer: StateLayer) -> None:
        super().validate(layer)
        if layer.window is None:
            raise InputError("window", f"a {layer.kind} layer needs a window size")

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return round_up(min(tokens, layer.window or tokens), block_size)

    def request_blocks(
        self, window: int | None, block_size: int, max_model_len: int, batched: int,
        prefix_caching: bool = False,
    ) -> int:
        if not window:
            return super().request_blocks(window, block_size, max_model_len, batched)
        return -(-min(window + batched, max_model_len) // block_size)


KIND = ChunkedAttention()
