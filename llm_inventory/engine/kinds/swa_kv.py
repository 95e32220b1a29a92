"""DeepSeek-V4's sliding-only layers (`sliding_attention`, compress ratio 0): one key-and-
value vector per token (K = V) for the last `sliding_window` tokens, nothing older.

Rules in `compressed.py` (tensors, entry bytes, TP); the state is the window alone, bounded,
so it is charged as fixed bytes per sequence. transformers' `DynamicSlidingWindowLayer`
stores the vector twice (keys and values); DeepSeek's reference and vLLM keep it once.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.compressed import WindowOnly


class SharedKVWindow(WindowOnly):
    name = "swa_kv"


KIND = SharedKVWindow()
