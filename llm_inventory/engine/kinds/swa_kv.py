"""DeepSeek-V4's sliding-only layers (`sliding_attention`, compress ratio 0): one key-and-
value vector per token (K = V) for the last `sliding_window` tokens, nothing older.

Rules in `compressed.py` (tensors, entry bytes, TP); the state is the window alone, bounded,
so it is charged as fixed bytes per sequence. transformers' `DynamicSlidingWindowLayer`
stores the vector twice (keys and values); DeepSeek's reference and vLLM keep it once.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.compressed import CompressedAttention
from llm_inventory.engine.kinds.layer import StateLayer


class SharedKVWindow(CompressedAttention):
    name = "swa_kv"
    grows = False
    release = "entries older than the window are dead and may be freed as it slides"

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        return self._window_bytes(layer, tokens, dtype)

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return min(tokens, layer.window or tokens)


KIND = SharedKVWindow()
