"""SGLang 0.4.6: the TP-size table up to 80 GiB GPUs, a 13 GiB reserve above.

- Default fraction: the TP table (0.88 … 0.79) when nvidia-smi's total ≤ 81,920 MiB, else
  (total − 13 GiB) ÷ total (python/sglang/srt/server_args.py `ServerArgs.__post_init__`).
- chunked_prefill_size 2048 below 25,000 MiB, else 8192; request pool max_num_reqs + 1.

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class Sglang046(SglangEngine):
    versions = "0.4.6"
    version = "0.4.6"
    label = "SGLang 0.4.6"
    fraction_rule = "tp_large"
    tier_rule = "v04"
    hybrid_swa = False
    mamba_rule = "slots"
    request_extra = 1
    rules = (
        ("default mem_fraction_static: TP table up to 81,920 MiB, else (total − 13 GiB) ÷ total",
         "srt/server_args.py ServerArgs.__post_init__ (0.4.6)"),
        ("request pool max_num_reqs + 1",
         "srt/model_executor/model_runner.py init_memory_pool"),
    ) + COMMON_RULES


ENGINE = Sglang046()
