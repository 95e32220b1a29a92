"""Full causal attention: K and V for every token, held until the sequence ends."""

from __future__ import annotations

from llm_inventory.engine.kinds.attention import Attention


class FullAttention(Attention):
    name = "full"
    release = "held until the sequence ends: every entry stays load-bearing"


KIND = FullAttention()
