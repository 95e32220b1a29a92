"""SGLang 0.4.0 to 0.4.5: the default mem_fraction_static is set by the TP size alone.

- Default fraction 0.88 (TP 1), 0.87 (TP ≥ 2), 0.85 (≥ 4), 0.81 (≥ 8), 0.79 (≥ 16)
  (python/sglang/srt/server_args.py `ServerArgs.__post_init__`, read in 0.4.3, 0.4.4, 0.4.5).
- chunked_prefill_size 2048 below 25,000 MiB (nvidia-smi), else 8192.
- No hybrid sliding-window pool yet: sliding layers keep a full cache.
- The request pool has max_num_reqs + 1 slots (model_runner.py `init_memory_pool`).
- Up to 0.4.3 "KV Cache is allocated" prints no #tokens; 0.4.4 added it.

The shared accounting is in `sglang_rules.py`.
"""

from __future__ import annotations

from llm_inventory.engine.serving.sglang_rules import COMMON_RULES, SglangEngine


class SglangTp(SglangEngine):
    versions = "0.4.0–0.4.5"
    version = "0.4.5"
    label = "SGLang 0.4.5"
    fraction_rule = "tp"
    tier_rule = "v04"
    hybrid_swa = False
    mamba_rule = "slots"
    request_extra = 1
    rules = (
        ("default mem_fraction_static by TP size: 0.88, 0.87 (≥2), 0.85 (≥4), 0.81 (≥8), 0.79 "
         "(≥16)",
         "srt/server_args.py ServerArgs.__post_init__ (0.4.3–0.4.5)"),
        ("chunked_prefill_size 2048 under 25,000 MiB, else 8192",
         "srt/server_args.py"),
        ("request pool max_num_reqs + 1",
         "srt/model_executor/model_runner.py init_memory_pool"),
    ) + COMMON_RULES


ENGINE = SglangTp()
