"""SGLang 0.4.7: the table by TP × PP size, with rules for large GPUs.

- Default fraction: the table (0.88 … 0.79) by TP × PP when nvidia-smi's total ≤ 81,920
  MiB, else 0.88; above 180,000 MiB 0.79; above 96 GiB min(f + 48 GiB × (1 − f) ÷ total,
  (total − 18 GiB) ÷ total) (python/sglang/srt/server_args.py `ServerArgs.__post_init__`).
- chunked_prefill_size 16384 above 180,000 MiB, 2048 below 25,000, else 8192.

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class Sglang047(SglangEngine):
    versions = "0.4.7"
    version = "0.4.7"
    label = "SGLang 0.4.7"
    fraction_rule = "parallel"
    tier_rule = "v047"
    hybrid_swa = False
    mamba_rule = "slots"
    rules = (
        ("default mem_fraction_static: TP×PP table up to 81,920 MiB, 0.79 above 180,000 MiB, else"
         " min(f + 48 GiB·(1 − f) ÷ total, (total − 18 GiB) ÷ total)",
         "srt/server_args.py ServerArgs.__post_init__ (0.4.7)"),
    ) + COMMON_RULES


ENGINE = Sglang047()
