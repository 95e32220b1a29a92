"""llama.cpp b5300–b5912 (2025-05, PRs #12799 and #13194): the unified KV cache and its
sliding-window sibling (`min(n_ctx, pad(n_swa × n_seq + n_ubatch))` cells); one stream.

See `llamacpp_rules.py` and `llamacpp_engine.py`; the engine answers as b5300 does.
"""

from __future__ import annotations

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp


class LlamaCppB5300(LlamaCpp):
    build = 5300
    versions = "b5300–b5912"
    version = "5300"
    label = "llama.cpp b5300"
    summary = ("KV = cells × K and V rows; one stream, a sliding-window cache; "
               "padded to 256 or 32")


ENGINE = LlamaCppB5300()
