"""SGLang 0.4.8 and 0.4.9: the default fraction reserves a size set by the GPU's memory.

- Default fraction round((total − reserved) ÷ total, 3), nvidia-smi's total in MiB, reserved
  (2.8 + TP·PP ÷ 10) GiB under 35 GiB, (9.5 + TP·PP ÷ 2) GiB under 90 GiB, (12 + TP·PP ÷ 2)
  GiB under 160 GiB, else 32 GiB (python/sglang/srt/server_args.py `ServerArgs.__post_init__`).
- chunked_prefill_size 2048 under 35 GiB, 8192 under 160 GiB, else 16384.
- No hybrid sliding-window pool yet (0.4.10 added swa_full_tokens_ratio).

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangGpu(SglangEngine):
    versions = "0.4.8–0.4.9"
    version = "0.4.9"
    label = "SGLang 0.4.9"
    fraction_rule = "gpu_table"
    tier_rule = "v048"
    hybrid_swa = False
    mamba_rule = "slots"
    rules = (
        ("default mem_fraction_static = round((total − reserved) ÷ total, 3); reserved (2.8 + "
         "TP·PP/10) GiB < 35 GiB, (9.5 + TP·PP/2) < 90, (12 + TP·PP/2) < 160, else 32 GiB",
         "srt/server_args.py ServerArgs.__post_init__ (0.4.8, 0.4.9)"),
    ) + COMMON_RULES


ENGINE = SglangGpu()
