"""A layer with no token mixer: its MLP or experts only (Nemotron-H's `-` and `E` layers,
`block_configs` whose attention is a no-op). It computes no attention and keeps nothing."""

from __future__ import annotations

from llm_inventory.engine.kinds.base import Kind


class MlpOnly(Kind):
    name = "mlp_only"
    grows = False
    holds_tokens = False
    release = "keeps nothing: the layer has no token mixer"


KIND = MlpOnly()
