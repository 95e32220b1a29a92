"""SGLang 0.4.10 to 0.5.2: the GPU-size reserve table, and a separate sliding-window pool.

- Default fraction as 0.4.8 (python/sglang/srt/server_args.py `ServerArgs.__post_init__`).
- Hybrid sliding-window models: full_tokens = rest ÷ (full cell + swa_full_tokens_ratio ×
  sliding cell), swa_tokens = full × ratio (default 0.8) (model_runner.py
  `set_num_token_hybrid`, read in 0.4.10, 0.5.1, 0.5.2).

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangSwa(SglangEngine):
    versions = "0.4.10–0.5.2"
    version = "0.5.2"
    label = "SGLang 0.5.2"
    fraction_rule = "gpu_table"
    tier_rule = "v048"
    mamba_rule = "slots"
    rules = (
        ("default mem_fraction_static: the GPU-size reserve table of 0.4.8",
         "srt/server_args.py ServerArgs.__post_init__ (0.4.10–0.5.2)"),
        ("sliding layers in their own pool: swa_full_tokens_ratio 0.8",
         "srt/model_executor/model_runner.py set_num_token_hybrid"),
    ) + COMMON_RULES


ENGINE = SglangSwa()
