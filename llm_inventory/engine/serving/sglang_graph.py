"""SGLang 0.5.10 to 0.5.19: prefill (piecewise) CUDA graphs on by default, and reserved for.

- reserved MiB as 0.5.3, plus 8 MiB per captured prefill size up to chunked_prefill_size
  (1.5 GiB for MLA models) before the 10 GiB floor (python/sglang/srt/server_args.py
  `_handle_gpu_memory_settings`, read in 0.5.10, 0.5.15; arg_groups/memory_hook.py
  `reserve_for_graph_mb` in 0.5.19).
- The pool sizing moved to model_executor/pool_configurator.py (`DefaultPoolConfigurator`,
  `HybridSWAPoolConfigurator`) with the same rules.

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangGraph(SglangEngine):
    versions = "0.5.10–0.5.19"
    version = "0.5.15"
    label = "SGLang 0.5.15"
    fraction_rule = "reserve"
    tier_rule = "v053"
    prefill_graph_reserve = True
    budgets_drafter = True  # sglang#23862 (2026-04-27): draft weights and pool budgeted
    rules = (
        ("default mem_fraction_static: the reserve formula + 8 MiB per prefill graph size (MLA "
         "1.5 GiB) before the 10 GiB floor",
         "srt/server_args.py _handle_gpu_memory_settings (0.5.10); arg_groups/memory_hook.py "
         "reserve_for_graph_mb (0.5.19)"),
    ) + COMMON_RULES


ENGINE = SglangGraph()
