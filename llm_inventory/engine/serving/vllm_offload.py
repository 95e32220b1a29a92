"""vLLM's offload rules: weights moved to host memory and the KV offloading tier.

- `--cpu-offload-gb G` (vllm/config/cache.py CacheConfig.cpu_offload_gb, GiB): the model
  loader calls `set_cpu_offload_max_bytes(int(G * 1024**3))` on every worker, and
  `make_layers` passes each decoder layer through `maybe_offload_to_cpu`
  (vllm/model_executor/models/utils.py, V1 from 0.8 on): parameters move to pinned host
  memory, layer by layer from the first, until the moved bytes reach the limit; a pipeline
  stage's missing layers hold none. Embeddings and the LM head are not wrapped, so they
  stay. Each worker moves up to G GiB of its own layers.
- `--kv-offloading-size S` with `--kv-offloading-backend native` (vllm/config/vllm.py
  `_post_init_kv_transfer_config`, from 0.11.1): the OffloadingConnector with
  `cpu_bytes_to_use = S * 2**30`, server-wide over every worker; CPUOffloadingSpec
  (vllm/v1/kv_offload/cpu.py) cuts it into `cpu_bytes // (page_size_bytes × KV tensors ×
  world_size)` blocks of the GPU block size, in one shared host region of S GiB.
  `lmcache` hands the same bytes to LMCache (per rank S ÷ world size), which keeps its own
  chunks: its token count here is bytes ÷ bytes per token, an estimate.
- LMCache itself (`--kv-transfer-config '{"kv_connector":"LMCacheConnectorV1",...}'`) keeps
  a CPU tier of `LMCACHE_MAX_LOCAL_CPU_SIZE` (default 5.0) and, with `LMCACHE_LOCAL_DISK`
  set, a disk tier of `LMCACHE_MAX_LOCAL_DISK_SIZE` (default 0), each `× 1024**3` bytes per
  worker (lmcache/v1/config.py; the CPU allocator and LocalDiskBackend). Read from the
  command line's environment; LMCACHE_CONFIG_FILE is not read. The native connector has
  no disk tier.
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
from llm_inventory.errors import InputError, excerpt

LMCACHE_CPU_DEFAULT = 5 * GIB  # lmcache/v1/config.py max_local_cpu_size 5.0, × 1024**3


class VllmOffload(OffloadRules):
    label = "vLLM"
    sources = (
        "--cpu-offload-gb: vllm/model_executor/models/utils.py maybe_offload_to_cpu "
        "(parameters of each layer from the first until the limit, per worker; V1 0.8+)",
        "--kv-offloading-size: vllm/config/vllm.py _post_init_kv_transfer_config, "
        "vllm/v1/kv_offload/cpu.py CPUOffloadingSpec (blocks = bytes ÷ (page × tensors × "
        "world size); 0.11.1+)",
        "lmcache: LMCache's CPU tier takes the size ÷ world size per rank; its disk tier is "
        "LMCACHE_MAX_LOCAL_DISK_SIZE per worker (lmcache/v1/config.py)",
    )

    options: ClassVar[dict[str, bool]] = {
        "--cpu-offload-gb": True, "--kv-offloading-size": True,
        "--kv-offloading-backend": True}
    # maybe_offload_to_cpu wraps the layer's forward in a functional_call over its state
    # dict moved `.to(device)` unless it offloads through UVA views: the copy lands in the
    # profiled peak in the releases that take that path
    copies_on_forward = True
    # --kv-transfer-config naming one of these is LMCache's own connector
    connectors = ("LMCacheConnectorV1", "LMCacheConnector", "LMCacheMPConnector")

    def read(self, found: dict[str, str | None], ranks: int = 1) -> Offload | None:
        fields: dict[str, Any] = {}
        if found.get("--kv-transfer-config") and not found.get("--kv-offloading-size"):
            # LMCache's connector with its own sizes: the default CPU tier until the
            # environment says otherwise (with_environment)
            fields["kv_host_bytes"] = LMCACHE_CPU_DEFAULT * ranks
            fields["kv_backend"] = "lmcache"
            return Offload(**fields, weight_bytes=self._weights(found))
        fields["weight_bytes"] = self._weights(found)
        if found.get("--kv-offloading-size"):
            fields["kv_host_bytes"] = scaled_bytes(str(found["--kv-offloading-size"]),
                                                   "--kv-offloading-size", GIB)
        backend = (found.get("--kv-offloading-backend") or "native").strip().lower()
        if backend not in ("native", "lmcache"):
            raise InputError("--kv-offloading-backend", f"{excerpt(backend)} is not one of "
                             "native, lmcache")
        fields["kv_backend"] = backend
        offload = Offload(**fields)
        return offload if offload.active else None

    @staticmethod
    def _weights(found: dict[str, str | None]) -> int:
        text = found.get("--cpu-offload-gb")
        return scaled_bytes(text, "--cpu-offload-gb", GIB) if text else 0

    def with_environment(self, offload: Offload | None, env: dict[str, str],
                         ranks: int) -> Offload | None:
        """LMCache's connector sized by LMCACHE_MAX_LOCAL_CPU_SIZE, LMCACHE_LOCAL_DISK and
        LMCACHE_MAX_LOCAL_DISK_SIZE, per worker."""
        if offload is None or offload.kv_backend != "lmcache":
            return offload
        update: dict[str, Any] = {}
        if env.get("LMCACHE_LOCAL_CPU", "True").strip().lower() in ("false", "0"):
            update["kv_host_bytes"] = 0
        elif "LMCACHE_MAX_LOCAL_CPU_SIZE" in env:
            update["kv_host_bytes"] = scaled_bytes(
                env["LMCACHE_MAX_LOCAL_CPU_SIZE"], "LMCACHE_MAX_LOCAL_CPU_SIZE", GIB) * ranks
        if env.get("LMCACHE_LOCAL_DISK") and "LMCACHE_MAX_LOCAL_DISK_SIZE" in env:
            update["kv_disk_bytes"] = scaled_bytes(
                env["LMCACHE_MAX_LOCAL_DISK_SIZE"], "LMCACHE_MAX_LOCAL_DISK_SIZE", GIB)
        return offload.model_copy(update=update) if update else offload

    def __init__(self, version: str = "") -> None:
        self.version = version  # the release answered for ("": the newest)

    def _before(self, *release: int) -> bool:
        found = [int(p) for p in self.version.split(".")[:3] if p.isdigit()]
        return bool(found) and tuple(found) < release

    def refuse(self, offload: Offload) -> None:
        if offload.weight_bytes and self._before(0, 5, 2):
            refuse(f"vLLM {self.version}", "cpu_offload", "--cpu-offload-gb (from PR #6496, "
                   "shipped in 0.5.3; its development builds report 0.5.2)")
        if offload.kv_host_bytes and offload.kv_backend == "native" and self._before(0, 11, 1):
            refuse(f"vLLM {self.version}", "kv_offload", "--kv-offloading-size (from 0.11.1, "
                   "PR #27621; before, the OffloadingConnector through --kv-transfer-config)")
        if offload.hicache:
            refuse(self.label, "hicache", "HiCache (an SGLang setting)")
        if offload.kv_disk_bytes and offload.kv_backend != "lmcache":
            refuse(self.label, "kv_disk", "disk tier in its native KV offloading "
                   "(LMCache's local disk needs --kv-offload SIZE,lmcache)")

    def weights_moved(self, offload: Offload, layer_bytes: int) -> int:
        return move_parameters(offload.weight_bytes, layer_bytes)

    def kv_tier(self, offload: Offload, ctx: TierContext) -> KvTier:
        if not offload.kv_host_bytes:
            return KvTier()
        per_rank = offload.kv_host_bytes // ctx.ranks
        if offload.kv_backend == "native" and ctx.page_bytes:
            blocks = offload.kv_host_bytes // (ctx.page_bytes * ctx.ranks)
            return KvTier(host_bytes=per_rank, host_tokens=blocks * ctx.page_tokens)
        tokens = per_rank // ctx.bytes_per_token if ctx.bytes_per_token else 0
        return KvTier(host_bytes=per_rank, host_tokens=tokens,
                      disk_bytes=offload.kv_disk_bytes, exact=False,
                      note="LMCache keeps its own chunks: tokens are its bytes ÷ bytes per "
                           "token (estimate)")

    def argv(self, offload: Offload) -> list[str]:
        words: list[str] = []
        if offload.weight_bytes:
            words += ["--cpu-offload-gb", repr(offload.weight_bytes / GIB)]
        if offload.kv_host_bytes:
            words += ["--kv-offloading-size", repr(offload.kv_host_bytes / GIB),
                      "--kv-offloading-backend", offload.kv_backend]
        return words
