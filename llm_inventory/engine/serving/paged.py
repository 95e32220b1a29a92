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
  From 0.21 the printed token count is ⌊maximum concurrency × max_model_len⌋ instead
  (`get_kv_cache_capacity` and `_report_kv_cache_config`, vllm/v1/core/kv_cache_utils.py;
  `tokens_from_concurrency`).
- Fixed-state layers (Mamba, Gated DeltaNet, KDA, lightning attention, short convolutions:
  kinds with `paged_state`) are pages of the same pool (`MambaSpec`). Beside attention, the
  attention block size is enlarged to a × ⌈state page ÷ (a × attention bytes per token)⌉
  (a = 16, the FlashAttention/FlashInfer kernel block; 64 for latent attention, MLA
  backends' kernel block) unless the launch asks for more, and the state page is padded to
  the attention page (`HybridAttentionMambaModelConfig.verify_and_update_config`,
  vllm/model_executor/models/config.py; not modelled: its alignment of 32 for head size 256
  with FlashInfer on Blackwell, and prefix caching's other block rules — vLLM 0.19 leaves
  prefix caching off for these models). The layers are then grouped as above, a state
  group needing one block per request (`MambaSpec.max_memory_usage_bytes`); the printed
  tokens divide by every group, state groups included, times the smaller of the attention
  block and the state block (max_model_len) (`_report_kv_cache_config`,
  vllm/v1/core/kv_cache_utils.py). With prefix caching asked for beside attention, the
  state is cached in mode "align": a state group needs two blocks per request and its block
  is the attention block (`CacheConfig.mamba_cache_mode`, vllm/config/cache.py;
  `MambaSpec.max_memory_usage_bytes`). With speculative decoding a state group keeps one
  block more per drafted token for each request (`MambaSpec.num_speculative_blocks`, set to
  num_speculative_tokens by the state layers' `get_kv_cache_spec`; `MambaManager`). In mode
  "all" (what 0.21-0.27 choose with prefix caching for the model classes that declare
  `SupportsMambaPrefixCaching`: NemotronH, Falcon-H1, Granite-4.0-H, Jamba, Zamba2, Mamba)
  a state group keeps a state at every block: ⌈max_model_len ÷ block⌉ blocks per request
  (`MambaSpec.max_memory_usage_bytes`).
  Without attention (Mamba alone) one block is one state page of every layer, one block
  per request, of max_model_len tokens (prefix caching there is not modelled).
- Layers of one kind whose pages differ (MiMo-V2's sliding layers hold twice the KV heads of
  its full ones) group apart. vLLM unifies the page size (`unify_kv_cache_spec_page_size`,
  vllm/v1/core/kv_cache_utils.py): a smaller page that divides the largest grows its block
  size by the ratio, so its group needs that many times fewer blocks; one that does not
  divide it is padded to it. The printed token count uses the smallest block size
  (`_report_kv_cache_config`: blocks ÷ groups × the smallest group block size).
- Other fixed per-request state (cross-attention) is charged whole to every request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from llm_inventory.engine import kinds
from llm_inventory.engine.serving.base import KvCapacity, KvLayer, PoolLayout


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _group(layer: KvLayer) -> tuple[str, int | None]:
    return kinds.get(layer.kind).page_group(layer.window)


def _request_blocks(kind: str, window: int | None, block: int, max_len: int,
                    batched: int, prefix_caching: bool = False) -> int:
    return kinds.get(kind).request_blocks(window, block, max_len, batched, prefix_caching)


@dataclass(frozen=True, slots=True)
class BlockPool(PoolLayout):
    """How one device's pool is paged for a given max_model_len (see module rules)."""

    page: int  # bytes of one block id (0: nothing is paged)
    groups: int
    need: int  # blocks one request at max_model_len needs
    per_token: int
    fixed: int  # bytes of fixed per-request state
    block_size: int  # tokens of the printed count's block (the smallest group's)
    # the printed count: blocks ÷ groups × block_size (False), or ⌊concurrency ×
    # max_model_len⌋ (True), as newer releases print it
    tokens_from_concurrency: bool = False
    attention_block: int | None = None  # the attention block size, when enlarged for state
    layer_page: int = 0  # bytes of one layer's page, when fixed state is paged
    state_page: int = 0  # bytes of one layer's fixed state before padding
    # what `capacity` needs to find the longest context that fits, when one does not
    layers: tuple[KvLayer, ...] = ()
    max_model_len: int = 0
    batched: int = 0
    prefix_caching: bool = False
    speculative_blocks: int = 0
    state_at_every_block: bool = False

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
        if self.tokens_from_concurrency:
            return blocks, int(concurrency * self.max_model_len), concurrency
        return blocks, blocks // self.groups * self.block_size, concurrency

    def capacity(self, pool_bytes: int) -> KvCapacity:
        blocks, tokens, concurrency = self.measure(pool_bytes)
        longest = None
        if concurrency < 1 and self.layers and self.keeps_state:
            longest = longest_context(self.layers, pool_bytes, block_size=self.block_size,
                                      max_num_batched_tokens=self.batched,
                                      upper=self.max_model_len,
                                      prefix_caching=self.prefix_caching,
                                      speculative_blocks=self.speculative_blocks,
                                      state_at_every_block=self.state_at_every_block)
        return KvCapacity(blocks=blocks, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.per_token, groups=self.groups,
                          request_blocks=self.need, page_bytes=self.page,
                          fixed_bytes_per_request=self.fixed, longest_context=longest,
                          block_size=self.attention_block, layer_page_bytes=self.layer_page,
                          state_page_bytes=self.state_page)


def _pages_state(layer: KvLayer) -> bool:
    return (not layer.bytes_per_token and layer.fixed_bytes > 0
            and kinds.get(layer.kind).paged_state)


# Kernel block sizes the attention block is aligned to when enlarged for fixed state
# (`HybridAttentionMambaModelConfig`: FlashAttention/FlashInfer 16, MLA backends 64).
ALIGN_ATTENTION = 16
ALIGN_LATENT = 64


def _with_state(
    layers: Sequence[KvLayer], states: Sequence[KvLayer], *, block_size: int,
    max_model_len: int, max_num_batched_tokens: int, prefix_caching: bool = False,
    speculative_blocks: int = 0, state_at_every_block: bool = False,
) -> BlockPool:
    """The pool of a device holding paged fixed state (see module rules)."""
    paged = [layer for layer in layers if layer.bytes_per_token]
    fixed = sum(layer.fixed_bytes for layer in layers if not _pages_state(layer))
    state = max(layer.fixed_bytes for layer in states)
    if paged:
        per_token = max(layer.bytes_per_token for layer in paged)
        align = ALIGN_ATTENTION if all(layer.split_kv for layer in paged) else ALIGN_LATENT
        block = max(block_size, align * _cdiv(state, align * per_token))
        # The state's block: max_model_len, or the attention block with prefix caching
        # ("align" mode; `HybridAttentionMambaModelConfig.verify_and_update_config`).
        layer_page = block * per_token
        smallest = block if prefix_caching else min(block, max_model_len)
    else:
        block, layer_page, smallest = max_model_len, state, max_model_len
    counts = Counter((layer.kind, layer.window) for layer in [*paged, *states])
    g = min(counts.values()) if len(counts) > 1 else sum(counts.values())
    groups = need = 0
    for (kind, window), count in counts.items():
        n = _cdiv(count, g)
        groups += n
        if kinds.get(kind).paged_state:  # a state group (mode "all": one per block)
            kept = (_cdiv(max_model_len, block) if state_at_every_block and prefix_caching
                    and paged else _request_blocks(kind, window, block, max_model_len,
                                                   max_num_batched_tokens,
                                                   prefix_caching and bool(paged)))
            need += n * (kept + speculative_blocks)
        else:
            need += n * _request_blocks(kind, window, block, max_model_len,
                                        max_num_batched_tokens, prefix_caching and bool(paged))
    return BlockPool(page=layer_page * g, groups=groups, need=need,
                     per_token=sum(layer.bytes_per_token for layer in paged), fixed=fixed,
                     block_size=smallest, attention_block=block if paged else None,
                     layer_page=layer_page, state_page=state, layers=tuple(layers),
                     max_model_len=max_model_len, batched=max_num_batched_tokens,
                     prefix_caching=prefix_caching and bool(paged),
                     speculative_blocks=speculative_blocks,
                     state_at_every_block=state_at_every_block)


def pool_layout(
    layers: Sequence[KvLayer], *, block_size: int, max_model_len: int,
    max_num_batched_tokens: int, prefix_caching: bool = False, speculative_blocks: int = 0,
    state_at_every_block: bool = False,
) -> BlockPool:
    """Page size, groups and per-request blocks of a device's layers; `prefix_caching`
    counts the state pages a hybrid model keeps with it on (at every block with
    `state_at_every_block`, mode "all"), `speculative_blocks` those it keeps per drafted
    token (see the module rules)."""
    states = [layer for layer in layers if _pages_state(layer)]
    if states:
        return _with_state(layers, states, block_size=block_size, max_model_len=max_model_len,
                           max_num_batched_tokens=max_num_batched_tokens,
                           prefix_caching=prefix_caching,
                           speculative_blocks=speculative_blocks,
                           state_at_every_block=state_at_every_block)
    paged = [layer for layer in layers if layer.bytes_per_token]
    fixed = sum(layer.fixed_bytes for layer in layers)
    per_token = sum(layer.bytes_per_token for layer in paged)
    if not paged:
        return BlockPool(page=0, groups=0, need=0, per_token=0, fixed=fixed,
                          block_size=block_size)
    # Layers whose kinds page alike share one group key (`Kind.page_group`); the first
    # layer of each key stands for its kind and window.
    first: dict[tuple[str, int | None], KvLayer] = {}
    for layer in paged:
        first.setdefault(_group(layer), layer)
    if len(first) == 1:
        # One type of layer, whatever each one's size: one group (vLLM's
        # UniformTypeKVCacheSpecs), a block spanning every layer.
        page = block_size * per_token
        groups = 1
        need = _request_blocks(paged[0].kind, paged[0].window, block_size, max_model_len,
                               max_num_batched_tokens)
    else:
        specs = Counter((_group(layer), layer.bytes_per_token) for layer in paged)
        g = min(specs.values())
        widest = max(layer.bytes_per_token for layer in paged)
        page = block_size * widest * g
        groups = need = 0
        for (key, per_layer), count in specs.items():
            n = _cdiv(count, g)
            scale = widest // per_layer if widest % per_layer == 0 else 1
            groups += n
            need += n * _request_blocks(first[key].kind, first[key].window, block_size * scale,
                                        max_model_len, max_num_batched_tokens)
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
    upper: int, prefix_caching: bool = False, speculative_blocks: int = 0,
    state_at_every_block: bool = False,
) -> int:
    """The longest max_model_len one request fits into the pool (0 when none does)."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        layout = pool_layout(layers, block_size=block_size, max_model_len=mid,
                             max_num_batched_tokens=max_num_batched_tokens,
                             prefix_caching=prefix_caching,
                             speculative_blocks=speculative_blocks,
                             state_at_every_block=state_at_every_block)
        if layout.measure(pool_bytes)[2] >= 1:
            lo = mid
        else:
            hi = mid - 1
    return lo
