"""SGLang 0.5.3 to 0.5.5: the default fraction from a reserve formula.

- reserved MiB = 512 + max(chunked_prefill_size, 2048) × 1.5 + cuda_graph_max_bs × 2 +
  TP·PP ÷ 8 × 1024, at least 10 GiB on GPUs over 60 GiB; fraction = round((total −
  reserved) ÷ total, 3) (python/sglang/srt/server_args.py `_handle_gpu_memory_settings`).
- GPU tiers (chunked prefill, CUDA-graph batch): < 20 GiB 2048/8; < 35 GiB 2048/16 (80 at
  TP ≥ 4); < 60 GiB 4096/32 (160); < 160 GiB 8192/256 (512); else 16384/512.
- Mamba / linear attention (Qwen3-Next): max_mamba_cache_size slots (--max-mamba-cache-size,
  else --max-running-requests, else 512) leave rest first (`profile_max_num_token`).

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangReserve(SglangEngine):
    versions = "0.5.3–0.5.5"
    version = "0.5.3"
    label = "SGLang 0.5.3"
    fraction_rule = "reserve"
    tier_rule = "v053"
    mamba_rule = "slots"
    rules = (
        ("default mem_fraction_static = round((total − reserved) ÷ total, 3); reserved = 512 + "
         "1.5 × max(chunked prefill, 2048) + 2 × cuda_graph_max_bs + TP·PP/8 GiB, ≥ 10 GiB over "
         "60 GiB",
         "srt/server_args.py _handle_gpu_memory_settings (0.5.3)"),
        ("Mamba state: max_mamba_cache_size slots (default max_running_requests or 512)",
         "srt/model_executor/model_runner.py profile_max_num_token"),
    ) + COMMON_RULES


ENGINE = SglangReserve()
