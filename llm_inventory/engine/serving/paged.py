"""How a paged KV pool is cut into blocks, and how many requests it holds, as vLLM counts it.

Rules (vLLM 0.19's KV cache manager):
- One kind of attention (all full, or all MLA): a block holds `block_size` tokens of every
  layer on the device; blocks = pool ÷ (block_size × bytes per token); tokens = blocks ×
  block_size; a request needs ⌈max_model_len ÷ block_size⌉ blocks.
- Mixed kinds (sliding or chunked beside full): layers are grouped by kind into groups of
  g = the smallest kind's layer count, each kind's last group padded; one block id spans one
  layer of every group position, so blocks = pool ÷ (block_size × per-layer bytes × g);
  a full group needs ⌈max_model_len ÷ block_size⌉ blocks per request, a sliding group
  ⌈min(W − 1 + max_num_batched_tokens, max_model_len) ÷ block_size⌉ + 1, a chunked group
  ⌈min(C + max_num_batched_tokens, max_model_len) ÷ block_size⌉; the printed token count is
  blocks ÷ groups × block_size, and maximum concurrency = blocks ÷ Σ blocks per request.
- Layers whose bytes per token differ (Gemma 4's global layers hold fewer KV heads of a
  wider head than its sliding ones) are grouped apart, and the page is unified by enlarging
  the block of the smaller ones: a group of b bytes per token holds block_size × widest ÷ b
  tokens per block (vLLM `unify_kv_cache_spec_page_size`, vllm/v1/core/kv_cache_utils.py;
  a ratio that is not whole makes vLLM refuse the model, and is left at block_size here).
- Fixed per-request state (Mamba, cross-attention) is charged whole to every request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from llm_inventory.engine import kinds
from llm_inventory.engine.serving.base import KvCapacity, KvLayer, PoolLayout


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _request_blocks(kind: str, window: int | None, block: int, max_len: int,
                    batched: int) -> int:
    return kinds.get(kind).request_blocks(window, block, max_len, batched)


@dataclass(frozen=True, slots=True)
class BlockPool(PoolLayout):
    """How one device's pool is paged for a given max_model_len (see module rules)."""

    page: int  # bytes of one block id (0: nothing is paged)
    groups: int
    need: int  # blocks one request at max_model_len needs
    per_token: int
    fixed: int  # bytes of fixed per-request state
    block_size: int
    # what `capacity` needs to find the longest context that fits, when one does not
    layers: tuple[KvLayer, ...] = ()
    max_model_len: int = 0
    batched: int = 0

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        """(blocks, tokens, maximum concurrency) of a pool of `pool_bytes`."""
        pool = max(0, pool_bytes)
        if not self.page:
            return 0, 0, (pool / self.fixed if self.fixed else 0.0)
        blocks = pool // self.page
        if self.fixed:
            concurrency = pool / (self.need * self.page + self.fixed)
        else:
            concurrency = blocks / self.need
        return blocks, blocks // self.groups * self.block_size, concurrency

    def capacity(self, pool_bytes: int) -> KvCapacity:
        blocks, tokens, concurrency = self.measure(pool_bytes)
        longest = None
        if concurrency < 1 and self.layers and self.keeps_state:
            longest = longest_context(self.layers, pool_bytes, block_size=self.block_size,
                                      max_num_batched_tokens=self.batched,
                                      upper=self.max_model_len)
        return KvCapacity(blocks=blocks, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.per_token, groups=self.groups,
                          request_blocks=self.need, page_bytes=self.page,
                          fixed_bytes_per_request=self.fixed, longest_context=longest)


def pool_layout(
    layers: Sequence[KvLayer], *, block_size: int, max_model_len: int,
    max_num_batched_tokens: int,
) -> BlockPool:
    """Page size, groups and per-request blocks of a device's layers."""
    paged = [layer for layer in layers if layer.bytes_per_token]
    fixed = sum(layer.fixed_bytes for layer in layers)
    per_token = sum(layer.bytes_per_token for layer in paged)
    if not paged:
        return BlockPool(page=0, groups=0, need=0, per_token=0, fixed=fixed,
                          block_size=block_size)
    kinds = Counter((layer.kind, layer.window) for layer in paged)
    if len(kinds) == 1:
        page = block_size * per_token
        groups = 1
        need = _request_blocks(paged[0].kind, paged[0].window, block_size, max_model_len,
                               max_num_batched_tokens)
    else:
        specs = Counter((layer.kind, layer.window, layer.bytes_per_token) for layer in paged)
        g = min(specs.values())
        widest = max(layer.bytes_per_token for layer in paged)
        page = block_size * widest * g
        groups = need = 0
        for (kind, window, nbytes), count in specs.items():
            n = _cdiv(count, g)
            groups += n
            own = block_size * widest // nbytes if widest % nbytes == 0 else block_size
            need += n * _request_blocks(kind, window, own, max_model_len,
                                        max_num_batched_tokens)
    return BlockPool(page=page, groups=groups, need=need, per_token=per_token, fixed=fixed,
                      block_size=block_size, layers=tuple(layers),
                      max_model_len=max_model_len, batched=max_num_batched_tokens)


def kv_capacity(
    layers: Sequence[KvLayer], pool_bytes: int, *, block_size: int, max_model_len: int,
    max_num_batched_tokens: int,
) -> KvCapacity:
    """Blocks, tokens and maximum concurrency of a device's KV pool (see module rules)."""
    return pool_layout(layers, block_size=block_size, max_model_len=max_model_len,
                       max_num_batched_tokens=max_num_batched_tokens).capacity(pool_bytes)


def longest_context(
    layers: Sequence[KvLayer], pool_bytes: int, *, block_size: int, max_num_batched_tokens: int,
    upper: int,
) -> int:
    """The longest max_model_len one request fits into the pool (0 when none does)."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        layout = pool_layout(layers, block_size=block_size, max_model_len=mid,
                             max_num_batched_tokens=max_num_batched_tokens)
        if layout.measure(pool_bytes)[2] >= 1:
            lo = mid
        else:
            hi = mid - 1
    return lo
