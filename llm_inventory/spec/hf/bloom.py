"""BLOOM (transformers `models/bloom`): ALiBi positions (no rotary, no position table), a
LayerNorm right after the word embeddings, a fused q/k/v projection and its output projection
with biases, a plain 4 × hidden GELU MLP with biases, two LayerNorms per layer, a tied head.
`n_embed` is an older spelling of `hidden_size` (`BloomConfig.__post_init__`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, split_heads
from llm_inventory.spec.model import ModelSpec, Stack


def bloom(c: HFConfig) -> ModelSpec:
    hidden = c.integer("n_embed") if c.has("n_embed") else c.integer("hidden_size")
    heads = c.integer("n_head")
    split_heads(c, hidden, heads, heads_key="n_head")
    return decoder_model(c, Stack(
        layers=c.integer("n_layer"),
        hidden_size=hidden,
        heads=heads,
        head_dim=hidden // heads,
        intermediate_size=4 * hidden,
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        embedding_norm=True,
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm="layer",
        rope=False,
    ))
