"""llama.cpp's KV memory, exactly: cells, cache types, sliding and recurrent layers.

No profiling decides it: llama.cpp allocates what the context asks for. Rules, each from
llama.cpp's source (ggml-org/llama.cpp, by build number; ik_llama.cpp where it differs):

- Bytes (`llama_kv_cache::llama_kv_cache`, src/llama-kv-cache.cpp): one K tensor
  `[n_embd_k_gqa, kv_size, n_stream]` of `type_k` and one V tensor of `type_v` per cached
  layer, so K = Σ layers `ggml_row_size(type_k, n_embd_k_gqa) × kv_size × n_stream`, V alike
  (quantized types by ggml's blocks: q8_0 34 bytes per 32 values). Without flash attention V
  is stored transposed at the widest layer's width (`n_embd_v_gqa_max`).
- Cells (`llama_context::llama_context`, src/llama-context.cpp): from b7000 (PR #17046)
  `n_ctx` is padded to 256; a split cache (`--kv-unified` off, one stream per sequence)
  gives each stream `pad(n_ctx ÷ n_seq, 256)` cells. Before, the pad was
  `llama_kv_cache::get_padding` — 256 with flash attention, 32 without (PR #7257) — applied
  in `llama_model::create_memory`, per stream `pad(⌈n_ctx ÷ n_seq⌉)` once streams came (b5913,
  PR #14363); one stream of `pad(n_ctx)` before that. (PR #16812 dropped all padding for the
  builds between it and #17046; those builds are not told apart here.)
- Sliding layers (`llama_kv_cache_iswa`, src/llama-kv-cache-iswa.cpp): their own cache of
  `pad(min(n_ctx, n_swa × (unified ? n_seq : 1) + n_ubatch), 256)` cells from b7000,
  `min(n_ctx, pad(n_swa × n_seq + n_ubatch, pad))` from PR #13194 (b5300 here), full size
  before, and always with `--swa-full`. Chunked attention (Llama 4) is sized the same way.
- MLA (DeepSeek family): one K row of kv_lora_rank + rope values and no V from b7880
  (PR #19067), with a V copy of the kv_lora_rank latent from PR #12801 (b5140); full heads
  before. ik_llama.cpp keeps the latent alone (`c^KV`) unless `-mla 1` without flash
  attention adds its transposed `kv^T`, and full heads with `-mla 0`.
- Recurrent state (`llama_memory_recurrent`, src/llama-memory-recurrent.cpp): R and S rows
  in f32 for max(1, n_seq) cells, whatever the KV cache type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_inventory.engine.serving.base import KvCapacity, KvLayer, PoolLayout
from llm_inventory.engine.serving.ggml_types import quantized, row_bytes

ATTENTION = ("base", "swa")  # the caches that grow with the context


def pad(value: int, multiple: int) -> int:
    """`GGML_PAD`: `value` rounded up to a multiple of `multiple`."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class Resolved:
    """The settings llama.cpp's memory follows, resolved."""

    build: int
    fork: str  # "upstream" or "ik"
    n_ctx: int  # as asked (0 is resolved before this)
    n_seq: int
    unified: bool
    n_ubatch: int
    flash_attn: bool  # as asked: "auto" counts as on (cparams.flash_attn before detection)
    type_k: str
    type_v: str
    swa_full: bool
    mla: int = 3  # ik_llama.cpp's -mla mode


def kv_padding(r: Resolved) -> int:
    """Cells the cache size is padded to (see the module rules)."""
    if r.fork == "upstream" and r.build >= 7000:
        return 256
    return 256 if r.flash_attn else 32


def context_cells(r: Resolved) -> tuple[int, int, int]:
    """(cells per stream, streams, n_ctx after padding)."""
    n_seq = max(1, r.n_seq)
    if r.fork == "upstream" and r.build >= 7000:
        n_ctx = pad(r.n_ctx, 256)
        if r.unified or n_seq == 1:
            return n_ctx, 1, n_ctx
        per = pad(n_ctx // n_seq, 256)
        return per, n_seq, per * n_seq
    padding = kv_padding(r)
    if r.fork == "upstream" and r.build >= 5913:
        if r.unified or n_seq == 1:
            per = pad(r.n_ctx, padding)
            return per, 1, per
        per = pad(-(-r.n_ctx // n_seq), padding)
        return per, n_seq, per * n_seq
    n_ctx = pad(r.n_ctx, padding)
    return n_ctx, 1, n_ctx


def swa_cells(r: Resolved, base: int, window: int) -> int:
    """Cells per stream of the sliding-window cache (see the module rules)."""
    if r.swa_full or r.fork == "ik" or r.build < 5300:
        return base
    n_seq = max(1, r.n_seq)
    if r.build >= 7000:
        return pad(min(base, window * (n_seq if r.unified else 1) + r.n_ubatch), 256)
    seqs = (n_seq if r.unified else 1) if r.build >= 5913 else n_seq
    return min(base, pad(window * seqs + r.n_ubatch, kv_padding(r)))


@dataclass(frozen=True)
class Cache:
    """One KV memory module on one device: its cells, streams, layers and bytes."""

    role: str  # "base", "swa" (the sliding-window cache) or "state" (recurrent)
    cells: int  # per stream
    streams: int
    layers: int
    k_bytes: int  # K (or R, for recurrent state)
    v_bytes: int  # V (or S)

    @property
    def bytes(self) -> int:
        return self.k_bytes + self.v_bytes


def caches(layers: Sequence[KvLayer], r: Resolved) -> list[Cache]:
    """The KV memory modules llama.cpp allocates for `layers` (one device's share)."""
    cells, streams, _ = context_cells(r)
    v_trans = not r.flash_attn
    attention = [layer for layer in layers if layer.bytes_per_token]
    v_max = max((layer.v_elements for layer in attention), default=0)
    out = []
    groups: dict[str, list[KvLayer]] = {"base": [], "swa": []}
    windows: list[int] = []
    for layer in attention:
        # a windowed layer (sliding or chunked) goes to the sliding-window cache
        groups["base" if layer.window is None else "swa"].append(layer)
        if layer.window is not None:
            windows.append(layer.window)
    for role, members in groups.items():
        if not members:
            continue
        size = cells if role == "base" else swa_cells(r, cells, max(windows))
        k_row = sum(row_bytes(r.type_k, layer.k_elements) for layer in members)
        v_row = sum(row_bytes(r.type_v, v_max if v_trans else layer.v_elements)
                    for layer in members if layer.v_elements or (v_trans and v_max))
        out.append(Cache(role=role, cells=size, streams=streams, layers=len(members),
                         k_bytes=k_row * size * streams, v_bytes=v_row * size * streams))
    recurrent = [layer for layer in layers if layer.fixed_elements]
    if recurrent:
        slots = max(1, r.n_seq)
        state = sum(layer.fixed_elements for layer in recurrent) * 4 * slots
        out.append(Cache(role="state", cells=slots, streams=1, layers=len(recurrent),
                         k_bytes=state, v_bytes=0))
    return out


@dataclass(frozen=True)
class CellPool(PoolLayout):
    """One device's KV memory as llama.cpp allocates it: all of it, or nothing.

    llama.cpp sizes nothing from free memory: the caches take what the context asks, and the
    allocation fails when the device cannot hold them. A pool that holds them serves every
    sequence (`n_seq` at n_ctx ÷ n_seq cells each); one that does not serves none.
    """

    page: int  # bytes of one cell across the device's layers (all caches)
    fixed: int  # recurrent state of one sequence
    modules: tuple[Cache, ...]
    cells: int  # per stream, of the full-attention cache
    context: int  # cells one sequence may use (n_ctx_seq)
    sequences: int
    per_token: int  # what one more token of one sequence costs on the device
    layers: tuple[KvLayer, ...] = ()
    resolved: Resolved | None = None
    # `-nkvo`: the caches of this device's layers live in host memory, so the device's
    # room does not bound them and the device allocates none of them
    on_host: bool = False

    @property
    def total(self) -> int:
        return sum(cache.bytes for cache in self.modules)

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        """(cells, tokens, sequences held at their context): every stream holds one."""
        if not self.modules or (pool_bytes < self.total and not self.on_host):
            return 0, 0, 0.0
        streams = max(cache.streams for cache in self.modules)
        tokens = self.cells * streams
        return tokens, tokens, float(streams)

    def capacity(self, pool_bytes: int) -> KvCapacity:
        cells, tokens, concurrency = self.measure(pool_bytes)
        longest = None
        if self.modules and concurrency < 1 and self.resolved is not None:
            longest = self.longest(pool_bytes)
        return KvCapacity(blocks=cells, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.per_token, groups=len(self.modules),
                          request_blocks=self.context, page_bytes=self.page,
                          fixed_bytes_per_request=self.fixed,
                          kv_bytes=0 if self.on_host else self.total,
                          longest_context=longest)

    def longest(self, pool_bytes: int) -> int:
        """The longest per-sequence context whose caches fit in `pool_bytes` (cells as
        llama.cpp pads them; 0: none)."""
        assert self.resolved is not None
        r = self.resolved
        lo, hi = 0, self.context
        while lo < hi:
            mid = (lo + hi + 1) // 2
            n_ctx = mid if r.unified else mid * max(1, r.n_seq)
            trial = Resolved(**{**r.__dict__, "n_ctx": n_ctx})
            if sum(c.bytes for c in caches(self.layers, trial)) <= pool_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo

    @property
    def keeps_state(self) -> bool:
        return bool(self.modules)

    def allocated(self, pool_bytes: int) -> int:
        """The caches' bytes when the room holds them, else nothing (the allocation fails)."""
        if self.on_host:
            return 0
        return self.total if self.modules and pool_bytes >= self.total else 0


def cell_pool(layers: Sequence[KvLayer], r: Resolved) -> CellPool:
    modules = tuple(caches(layers, r))
    cells, streams, n_ctx = context_cells(r)
    per_token = sum(row_bytes(r.type_k, layer.k_elements) + row_bytes(r.type_v, layer.v_elements)
                    for layer in layers if layer.bytes_per_token)
    fixed = sum(layer.fixed_elements for layer in layers) * 4
    page = sum(cache.bytes // max(1, cache.cells * cache.streams) for cache in modules
               if cache.role in ATTENTION)
    context = cells if streams > 1 or not r.unified else n_ctx
    return CellPool(page=page, fixed=fixed, modules=modules, cells=cells, context=context,
                    sequences=max(1, r.n_seq), per_token=per_token, layers=tuple(layers),
                    resolved=r)


def v_quantized_without_fa(r: Resolved) -> bool:
    """llama.cpp refuses a quantized V cache without flash attention
    (`llama_init_from_model`, src/llama-context.cpp)."""
    return quantized(r.type_v) and not r.flash_attn
