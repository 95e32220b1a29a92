"""OPT (transformers `models/opt`).

Learned positions with two extra rows (`OPTLearnedPositionalEmbedding` offsets positions by
2), q/k/v/out projections and a plain ReLU MLP (`fc1`, `fc2`) with biases when `enable_bias`,
two LayerNorms per layer (no parameters when `layer_norm_elementwise_affine` is false), a
final LayerNorm only when `do_layer_norm_before` and not `_remove_final_layer_norm`, and a
head tied to the embedding. A `word_embed_proj_dim` other than the hidden size (OPT-350m)
makes the token table and head that wide, bridged by `project_in` / `project_out` (no bias).
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, linear, split_heads
from llm_inventory.spec.model import Component, ModelSpec, Stack


def opt(c: HFConfig) -> ModelSpec:
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    split_heads(c, hidden, heads)
    width = c.integer("word_embed_proj_dim", hidden)
    extra = []
    if width != hidden:
        extra = (linear("project_in", hidden, width, bias=False, component=Component.EMBEDDINGS)
                 + linear("project_out", width, hidden, bias=False,
                          component=Component.LM_HEAD))
    bias = c.flag("enable_bias")
    affine = c.flag("layer_norm_elementwise_affine")
    positions = c.integer("max_position_embeddings")
    spec = decoder_model(c, Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        head_dim=hidden // heads,
        intermediate_size=c.integer("ffn_dim"),
        vocab_size=c.integer("vocab_size"),
        embedding_dim=width if width != hidden else None,
        tied_embeddings=c.flag("tie_word_embeddings"),
        position_embeddings=positions + 2,
        mlp="plain",
        mlp_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        norm="layer",
        norms_per_layer=2 if affine else 0,
        final_norm=affine and c.flag("do_layer_norm_before")
        and not c.flag("_remove_final_layer_norm"),
        rope=False,
        extra=extra,
    ))
    return spec
