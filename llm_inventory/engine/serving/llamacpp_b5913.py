"""llama.cpp b5913–b6999 (PR #14363, 2025-07): one cache stream per sequence unless
`--kv-unified`; cells padded to 256 with flash attention, 32 without.

See `llamacpp_rules.py` and `llamacpp_engine.py`; the engine answers as b5913 does (flash
attention off by default, `llama_kv_cache_unified` lines; `-fa auto` and the
`llama_kv_cache` prefix came later in the era).
"""

from __future__ import annotations

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp


class LlamaCppB5913(LlamaCpp):
    build = 5913
    versions = "b5913–b6999"
    version = "5913"
    label = "llama.cpp b5913"
    summary = ("KV = cells × K and V rows; a stream per sequence; "
               "padded to 256 with flash attention, 32 without")


ENGINE = LlamaCppB5913()
