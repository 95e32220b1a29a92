"""Gemma, Gemma 2 and Gemma 3's text model (transformers `models/gemma`, `gemma2`, `gemma3`):
head_dim 256, embeddings tied; from Gemma 2 on, four norms per layer and sliding layers."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, ModelSpec, Stack


def gemma(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))


def gemma2(c: HFConfig) -> ModelSpec:
    # Gemma 2: layers alternate sliding (even) and full (odd); four norms per layer.
    kinds = layer_types(c) or [LayerKind.SLIDING, LayerKind.FULL]
    stack = Stack(**core(c, norms_per_layer=4, layer_types=kinds,
                         sliding_window=c.integer("sliding_window")))
    return decoder_model(c, stack)


def gemma3_text(c: HFConfig) -> ModelSpec:
    kinds = layer_types(c)
    if kinds is None:
        pattern = c.integer("sliding_window_pattern")
        kinds = [LayerKind.SLIDING] * (pattern - 1) + [LayerKind.FULL]
    # Two rotary embeddings: the local (sliding) layers' unscaled one, the global layers'
    # scaled one (rope_scaling applies to global attention only).
    stack = Stack(**core(
        c, norms_per_layer=4, qk_norm="head", layer_types=kinds,
        sliding_window=c.integer("sliding_window"), local_rope=True,
    ))
    return decoder_model(c, stack)
