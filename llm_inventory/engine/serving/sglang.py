"""SGLang from 0.5.20 (the newest modelled, 0.5.23): the reserve formula with graph reserves.

- reserved MiB = 512 + 1.5 × max(chunked_prefill_size, 2048) + TP·PP ÷ 8 × 1024 + the graph
  reserve (2 × decode max_bs, 8 MiB per prefill size or 1.5 GiB for MLA), at least 10 GiB on
  GPUs over 60 GiB (python/sglang/srt/arg_groups/memory_hook.py
  `handle_gpu_memory_settings`, `reserve_for_graph_mb`).
- GPUs of 20–35 GiB default to chunked_prefill_size 4096 and decode max_bs 48 (160 at
  TP ≥ 4) (read in 0.5.20, 0.5.21, 0.5.23; 0.5.19 had 2048 and 16).
- Pools: model_executor/pool_configurator.py (`DefaultPoolConfigurator.calculate_pool_sizes`,
  `HybridSWAPoolConfigurator`); Mamba share mem_cache/kv_cache_configurator.py.

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.feature_rules import SGLANG_LORA_MOE
from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class Sglang(SglangEngine):
    versions = "0.5.20 and later"
    version = "0.5.23"
    label = "SGLang 0.5.23"
    lora_rule = SGLANG_LORA_MOE
    fraction_rule = "reserve"
    tier_rule = "v0520"
    prefill_graph_reserve = True
    budgets_drafter = True  # sglang#23862 (2026-04-27): draft weights and pool budgeted
    rules = (
        ("default mem_fraction_static: the reserve formula with graph reserves; 20–35 GiB GPUs "
         "chunked prefill 4096, decode max_bs 48",
         "srt/arg_groups/memory_hook.py handle_gpu_memory_settings, reserve_for_graph_mb (0.5.23)"),
        ("pool sizes",
         "srt/model_executor/pool_configurator.py DefaultPoolConfigurator, "
         "HybridSWAPoolConfigurator"),
    ) + COMMON_RULES


ENGINE = Sglang()
