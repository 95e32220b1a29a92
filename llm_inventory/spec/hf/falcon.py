"""Falcon (transformers `models/falcon`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model
from llm_inventory.spec.model import ModelSpec, Stack


def falcon(c: HFConfig) -> ModelSpec:
    """Falcon: fused QKV (multi-query, grouped with new_decoder_architecture, or full),
    LayerNorms with bias, a plain GELU MLP, optionally parallel attention."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    new_arch = c.flag("new_decoder_architecture")
    if new_arch:
        kv = c.integer("num_kv_heads", heads)
    elif c.flag("multi_query"):
        kv = 1
    else:
        kv = heads
    parallel = c.flag("parallel_attn")
    if new_arch:
        # The class leaves it None; FalconDecoderLayer then builds two (ln_attn, ln_mlp).
        norms = c.integer("num_ln_in_parallel_attn", 2)
    else:
        norms = 1 if parallel else 2
    bias = c.flag("bias")
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        intermediate_size=c.integer("ffn_hidden_size", 4 * hidden),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        mlp="plain",
        mlp_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        norm="layer",
        norms_per_layer=norms,
        rope=not c.flag("alibi"),
    )
    return decoder_model(c, stack)
