"""vLLM from 0.33: GB10 (DGX Spark) kept on the smallest batch defaults.

The rule that changed in 0.33, from vLLM's source in the v0.33.0 release; the rest is the
0.30 module's (`vllm_v30.py`):
- `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py, v0.33.0): a device of compute
  capability 12.1 (GB10, DGX Spark) "has the memory but not the compute of a large discrete
  GPU, keep it on the small tier": max_num_batched_tokens 2048 and max_num_seqs 256 for the
  API server, where 0.28–0.32 gave it the ≥ 70 GiB tier's 8192 and 1024 (its unified memory
  reports ≥ 70 GiB). The profiling forward runs a quarter of the tokens, so the activation
  peak shrinks and the pool grows; the CUDA graphs stop at 2 × 256 = 512 as before. The
  ≥ 160 GiB tier is unchanged (raw capacity, AMD included).
Every release past 0.33 is answered by this era with a warning: 0.34 (not modelled) resolves
the default gpu_memory_utilization anew (`CacheConfig.resolved_gpu_memory_utilization`: 1.0
with an extensible KV cache), moves graph profiling into the runner and raises the default
block to 64 tokens (`CacheConfig.DEFAULT_BLOCK_SIZE`).
The reserve is the 0.19 model's with the graph estimate (`vllm_v21.py`); no 0.33 start-up
was found, so its band is the group's, extrapolated (`engine/serving/bands.py`).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.base import EngineSettings, LaunchSettings
from llm_inventory.engine.serving.vllm_v28 import TIER_BYTES
from llm_inventory.engine.serving.vllm_v30 import VllmV30
from llm_inventory.spec.devices import Device

SMALL_TIER = {"max_num_batched_tokens": 2048, "max_num_seqs": 256}
GB10 = "12.1"  # `current_platform.is_device_capability((12, 1))`


class VllmV33(VllmV30):
    name = "vllm"
    versions = "0.33 and later (GB10 on the small batch defaults)"
    version = "0.33"
    label = "vLLM 0.33"
    summary = ("as 0.30, with GB10 (DGX Spark, compute capability 12.1) on the smallest "
               "batch defaults (2048 tokens, 256 sequences)")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("compute capability 12.1 (GB10, DGX Spark) below 160 GiB: max_num_batched_tokens "
         "2048 and max_num_seqs 256, not the ≥ 70 GiB tier's 8192 and 1024",
         "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (v0.33.0)"),
    ) + VllmV30.rules
    later_releases: ClassVar[dict[str, str]] = {
        "0.34": "on CUDA and ROCm it sizes the KV cache from the memory free after warmup "
                "and CUDA graph capture (the extensible KV cache, "
                "vllm/v1/worker/extensible_kv_cache.py measure_kv_cache_bytes), with "
                "gpu_memory_utilization 1.0 by default where 0.33 took 0.92 "
                "(CacheConfig.resolved_gpu_memory_utilization), and pages 64 tokens a "
                "block, not 16 (CacheConfig.DEFAULT_BLOCK_SIZE, vllm/config/cache.py, "
                "v0.34.0): its pool is likely larger than this one",
    }

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        """0.30's settings; a GB10 below the top tier on the smallest batch defaults."""
        found = super().settings(device, asked)
        if str(device.compute_capability or "") != GB10 or device.memory_bytes >= TIER_BYTES:
            return found
        update: dict[str, object] = {}
        if asked.max_num_batched_tokens is None:
            update["max_num_batched_tokens"] = SMALL_TIER["max_num_batched_tokens"]
        if asked.max_num_seqs is None:
            update["max_num_seqs"] = SMALL_TIER["max_num_seqs"]
        return found.model_copy(update=update) if update else found


ENGINE = VllmV33()
