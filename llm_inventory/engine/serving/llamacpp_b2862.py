"""llama.cpp b2862–b5299 (PR #7257, 2024-05): `llama_kv_cache_init` sizes one cache for
every layer, sliding ones included, padded to 256 cells with flash attention, 32 without.

See `llamacpp_rules.py` and `llamacpp_engine.py`; the engine answers as b2862 does (MLA
models cached with full heads until PR #12801, b5140).
"""

from __future__ import annotations

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp


class LlamaCppB2862(LlamaCpp):
    build = 2862
    versions = "b2862–b5299"
    version = "2862"
    label = "llama.cpp b2862"
    summary = ("KV = cells × K and V rows; "
               "one cache for every layer, sliding ones too; padded to 256 or 32")


ENGINE = LlamaCppB2862()
