"""Sliding-window attention: a token attends the last W positions, so only they are kept.

Paged, a window that no longer starts on a block boundary spans one block more than the
window: ⌈(W − 1) ÷ block⌉ + 1 blocks at the peak. vLLM reserves, per request,
⌈min(W − 1 + max_num_batched_tokens, max_model_len) ÷ block⌉ + 1 blocks
(`SlidingWindowSpec.max_memory_usage_bytes`, vllm/v1/kv_cache_interface.py): a prefill chunk
of max_num_batched_tokens tokens needs the window behind its first token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_inventory.engine.kinds.attention import Attention
from llm_inventory.engine.kinds.base import round_up
from llm_inventory.errors import InputError

if TYPE_CHECKING:
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import Stack


class SlidingWindow(Attention):
    name = "sliding"
    requires = "sliding_window"
    release = "entries older than the window are dead and may be freed as it slides"

    def window(self, stack: Stack) -> int | None:
        return stack.sliding_window

    def validate(self, layer: StateLayer) -> None:
        super().validate(layer)
        if layer.window is None:
            raise InputError("window", f"a {layer.kind} layer needs a window size")

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        window = layer.window or tokens
        if block_size is None:
            return min(tokens, window)
        if tokens <= window:
            return round_up(tokens, block_size)
        blocks = -(-(window - 1) // block_size) + 1
        return min(blocks * block_size, round_up(tokens, block_size))

    def request_blocks(
        self, window: int | None, block_size: int, max_model_len: int, batched: int,
        prefix_caching: bool = False,
    ) -> int:
        if not window:
            return super().request_blocks(window, block_size, max_model_len, batched)
        return -(-min(window - 1 + batched, max_model_len) // block_size) + 1


KIND = SlidingWindow()
