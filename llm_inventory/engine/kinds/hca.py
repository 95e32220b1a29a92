"""DeepSeek-V4's heavily compressed attention (`heavily_compressed_attention`): every
`hca_ratio` (128) tokens become one entry of head_dim over non-overlapping windows, and a
query reads all of them (no indexer).

Rules in `compressed.py`: tensors, entry bytes, window and compressor state as fixed bytes,
entries growing at one per ratio tokens, paging.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.compressed import Compressing, compression
from llm_inventory.spec.model import Stack


class HeavilyCompressed(Compressing):
    name = "hca"

    def ratio(self, stack: Stack) -> int | None:
        return compression(stack).hca_ratio


KIND = HeavilyCompressed()
