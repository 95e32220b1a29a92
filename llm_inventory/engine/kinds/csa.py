"""DeepSeek-V4's compressed sparse attention (`compressed_sparse_attention`): every
`csa_ratio` (4) tokens become one entry of head_dim, built over two overlapping windows;
a lightning indexer keeps its own compressed key (index_head_dim, fp8 with scales, as for
DeepSeek-V3.2) per entry and picks the `index_topk` entries each query reads.

Rules in `compressed.py`: tensors (compressor and indexer with theirs), entry bytes, window
and compressor state as fixed bytes, entries growing at one per ratio tokens, paging.
"""

from __future__ import annotations

from llm_inventory.engine.kinds.compressed import Compressing, compression
from llm_inventory.spec.model import Stack


class CompressedSparse(Compressing):
    name = "csa"
    indexed = True

    def ratio(self, stack: Stack) -> int | None:
        return compression(stack).csa_ratio


KIND = CompressedSparse()
