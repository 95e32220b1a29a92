"""Command-R and Command-A (transformers `models/cohere`, `cohere2`).

Attention and MLP run in parallel from one input norm (`CohereDecoderLayer`), a LayerNorm
without bias (`CohereLayerNorm`: a weight only, so it counts as an RMS norm's); the output
head is tied to the embedding by default. Command-R+ adds q/k LayerNorms over (heads,
head_dim) when `use_qk_norm`. Command-A (cohere2) interleaves sliding-window and global
layers (`layer_types`, else every `sliding_window_pattern`-th layer global) and applies the
rotary embedding on its sliding layers only (`Cohere2Attention.forward`), with head_dim fixed
to hidden / heads (`Cohere2Config.__post_init__`).
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, Stack


def cohere(c: HFConfig) -> ModelSpec:
    """Command-R: parallel attention and MLP under one bias-free LayerNorm."""
    qk_norm = "full" if c.flag("use_qk_norm") else "none"
    return decoder_model(c, Stack(**core(c, norms_per_layer=1, qk_norm=qk_norm)))


def cohere2(c: HFConfig) -> ModelSpec:
    """Command-A: Command-R's layers, three sliding-window layers to one global."""
    hidden = c.integer("hidden_size")
    fields = core(c, norms_per_layer=1, head_dim=hidden // c.integer("num_attention_heads"))
    every = c.integer("sliding_window_pattern", 4)
    kinds = layer_types(c) or [LayerKind.SLIDING if (i + 1) % every else LayerKind.FULL
                               for i in range(fields["layers"])]
    return decoder_model(c, Stack(
        **fields, layer_types=kinds, sliding_window=c.integer("sliding_window"),
        overrides=[LayerOverride(kinds=[LayerKind.FULL], rope=False)]))
