"""SGLang's offload rules: weights moved to host memory and the HiCache host pool.

- `--cpu-offload-gb G` (srt/server_args.py, an int of GiB): `OffloaderV1`
  (srt/utils/offloader.py `maybe_offload_to_cpu`, 0.4.9+; before, the same function in
  srt/utils.py) moves parameters of each layer, from the first, to pinned host memory until
  `G * 1024**3` bytes have moved, on every worker.
- `--enable-hierarchical-cache` with `--hicache-ratio R` (default 2.0) or `--hicache-size S`
  (an int of GB, default 0): `HostKVCache.__init__` (srt/mem_cache/memory_pool_host.py, later
  srt/mem_cache/pool_host/base.py) sizes the host pool of every worker at
  `S * 1e9 // size_per_token` tokens when S > 0, else `device pool tokens × R`, then aligns
  it up to whole pages plus one (`size // page_size + 1` pages; releases before 0.5 rounded
  down to whole pages instead, a page apart); it holds `tokens × size_per_token` bytes, the
  bytes of one token over the worker's layers. A host pool no larger than the device pool
  warns (older releases assert).
"""

from __future__ import annotations

from typing import Any, ClassVar

from llm_inventory.engine.offload import (
    GIB,
    KvTier,
    Offload,
    OffloadRules,
    TierContext,
    move_parameters,
    refuse,
    scaled_bytes,
)
from llm_inventory.errors import InputError

DEFAULT_HICACHE_RATIO = 2.0  # srt/server_args.py ServerArgs.hicache_ratio
GB = 10**9


class SglangOffload(OffloadRules):
    label = "SGLang"
    sources = (
        "--cpu-offload-gb: srt/utils/offloader.py OffloaderV1.maybe_offload_to_cpu "
        "(parameters of each layer from the first until the limit, per worker)",
        "HiCache: srt/mem_cache/memory_pool_host.py HostKVCache.__init__ (hicache_size GB "
        "÷ bytes per token, else device pool × hicache_ratio; whole pages plus one)",
    )

    options: ClassVar[dict[str, bool]] = {
        "--cpu-offload-gb": True, "--enable-hierarchical-cache": False,
        "--hicache-ratio": True, "--hicache-size": True}

    copies_on_forward = True  # OffloaderV1's forward: functional_call over `.to(device)`

    def read(self, found: dict[str, str | None], ranks: int = 1) -> Offload | None:
        from llm_inventory.bounds import number

        fields: dict[str, Any] = {}
        if found.get("--cpu-offload-gb"):
            fields["weight_bytes"] = scaled_bytes(str(found["--cpu-offload-gb"]),
                                                  "--cpu-offload-gb", GIB, integer=True)
        ratio, size = found.get("--hicache-ratio"), found.get("--hicache-size")
        if "--enable-hierarchical-cache" in found:  # ratio and size mean nothing without it
            # a size above 0 wins over the ratio (HostKVCache.__init__)
            sized = scaled_bytes(size, "--hicache-size", GB, integer=True) if size else 0
            if sized:
                fields["hicache_bytes"] = sized
            else:
                fields["hicache_ratio"] = DEFAULT_HICACHE_RATIO if ratio is None else number(
                    "--hicache-ratio", ratio, low=0.0, high=1000.0, low_open=True)
        offload = Offload(**fields)
        return offload if offload.active else None

    def refuse(self, offload: Offload) -> None:
        if offload.kv_host_bytes or offload.kv_disk_bytes:
            refuse(self.label, "kv_offload", "vLLM-style KV offloading connector (its host "
                   "tier is HiCache: --hicache-ratio or --hicache-size)")
        if offload.weight_bytes % GIB:
            raise InputError("cpu_offload", "SGLang's --cpu-offload-gb takes whole GiB")
        if offload.hicache_bytes is not None and offload.hicache_bytes % GB:
            raise InputError("hicache_size", "SGLang's --hicache-size takes whole GB "
                             "(10^9 bytes)")

    def weights_moved(self, offload: Offload, layer_bytes: int) -> int:
        return move_parameters(offload.weight_bytes, layer_bytes)

    def kv_tier(self, offload: Offload, ctx: TierContext) -> KvTier:
        if not offload.hicache or not ctx.bytes_per_token:
            return KvTier()
        if offload.hicache_bytes:
            tokens = int(offload.hicache_bytes // ctx.bytes_per_token)
        else:
            ratio = offload.hicache_ratio or DEFAULT_HICACHE_RATIO
            tokens = int(ctx.pool_tokens * ratio)
        page = max(1, ctx.page_tokens)
        tokens = (tokens // page + 1) * page
        warning = None
        if tokens <= ctx.pool_tokens:
            warning = (f"the HiCache host pool ({tokens:,} tokens) is no larger than the "
                       f"device pool ({ctx.pool_tokens:,}): SGLang warns (releases before "
                       "0.5 refuse to start)")
        return KvTier(host_bytes=tokens * ctx.bytes_per_token, host_tokens=tokens,
                      warning=warning)

    def startup_lines(self, tier: KvTier) -> list[str]:
        # HostKVCache.__init__: requested_bytes / 1e9, two decimals, on every worker
        if not tier.host_bytes:
            return []
        return [f"Allocating {tier.host_bytes / 1e9:.2f} GB host memory for hierarchical KV "
                "cache."]

    def argv(self, offload: Offload) -> list[str]:
        words: list[str] = []
        if offload.weight_bytes:
            words += ["--cpu-offload-gb", str(offload.weight_bytes // GIB)]
        if offload.hicache:
            words.append("--enable-hierarchical-cache")
            if offload.hicache_bytes:
                words += ["--hicache-size", str(offload.hicache_bytes // GB)]
            elif offload.hicache_ratio is not None:
                words += ["--hicache-ratio", repr(offload.hicache_ratio)]
        return words
