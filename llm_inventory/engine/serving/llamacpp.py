"""llama.cpp from b7880 (PR #19067, 2026-01): MLA caches one latent row and no V.

The rules are in `llamacpp_rules.py` (KV memory) and `llamacpp_engine.py` (settings,
offload, compute buffers, lines); this module is the engine at the first build of its era.
"""

from __future__ import annotations

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp


class LlamaCppB7880(LlamaCpp):
    build = 7880
    versions = "b7880 onward"
    version = "7880"
    label = "llama.cpp b7880"
    summary = ("KV = cells × K and V rows of the cached layers, no profiling; "
               "n_ctx padded to 256; an MLA latent alone")


ENGINE = LlamaCppB7880()
