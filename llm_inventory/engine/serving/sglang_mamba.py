"""SGLang 0.5.6 to 0.5.9: the reserve formula; Mamba state takes a share of rest.

- Default fraction as 0.5.3 (python/sglang/srt/server_args.py `_handle_gpu_memory_settings`;
  piecewise CUDA graphs are opt-in and not counted).
- Mamba / linear attention with the radix cache on: rest × mamba_full_memory_ratio ÷ (1 +
  ratio) (default 0.9) becomes state slots (model_runner.py `handle_max_mamba_cache`, read in
  0.5.6, 0.5.8, 0.5.9).

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangMamba(SglangEngine):
    versions = "0.5.6–0.5.9"
    version = "0.5.8"
    label = "SGLang 0.5.8"
    fraction_rule = "reserve"
    tier_rule = "v053"
    rules = (
        ("default mem_fraction_static: the 0.5.3 reserve formula",
         "srt/server_args.py _handle_gpu_memory_settings (0.5.6–0.5.9)"),
        ("Mamba state share: rest × mamba_full_memory_ratio ÷ (1 + ratio), ratio 0.9",
         "srt/model_executor/model_runner.py handle_max_mamba_cache"),
    ) + COMMON_RULES


ENGINE = SglangMamba()
