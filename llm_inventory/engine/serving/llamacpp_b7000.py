"""llama.cpp b7000–b7879 (PR #17046, 2025-11): every cache padded to 256 cells, whatever
the attention kernel; MLA still stores its latent's V copy; 4096-token default context.

See `llamacpp_rules.py` and `llamacpp_engine.py`; the engine answers as b7000 does.
"""

from __future__ import annotations

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp


class LlamaCppB7000(LlamaCpp):
    build = 7000
    versions = "b7000–b7879"
    version = "7000"
    label = "llama.cpp b7000"
    summary = ("KV = cells × K and V rows of the cached layers; n_ctx padded to 256; "
               "MLA keeps a V copy")


ENGINE = LlamaCppB7000()
