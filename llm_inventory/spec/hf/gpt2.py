"""GPT-2 and GPTBigCode (transformers `models/gpt2`, `gpt_bigcode`).

Learned absolute positions (`wpe`, `n_positions` rows), pre-norm layers with two LayerNorms
(with bias), a fused q/k/v projection with bias (`c_attn`; counted as q, k and v), a biased
output projection, a plain GELU MLP of `n_inner` (default 4 × hidden) with biases, and an
output head tied to `wte`. GPTBigCode's multi-query attention (`multi_query`) has one K/V
head: `c_attn` is hidden + 2 × head_dim wide.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, split_heads
from llm_inventory.spec.model import ModelSpec, Stack


def _gpt2_stack(c: HFConfig, kv_heads: int | None = None) -> Stack:
    if c.flag("add_cross_attention"):
        raise InputError(f"{c.label}: add_cross_attention",
                         "a decoder with cross-attention is part of an encoder-decoder "
                         "wrapper, which this tool does not read")
    hidden = c.integer("n_embd")
    heads = c.integer("n_head")
    split_heads(c, hidden, heads, hidden_key="n_embd", heads_key="n_head")
    return Stack(
        layers=c.integer("n_layer"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=kv_heads or heads,
        head_dim=hidden // heads,
        intermediate_size=c.integer("n_inner", 4 * hidden),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        position_embeddings=c.integer("n_positions"),
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm="layer",
        rope=False,
    )


def _model(c: HFConfig, stack: Stack) -> ModelSpec:
    spec = decoder_model(c, stack)
    return spec.model_copy(update={"max_context": c.integer("n_positions")})


def gpt2(c: HFConfig) -> ModelSpec:
    """GPT-2: learned positions, LayerNorms and biases everywhere, tied head."""
    return _model(c, _gpt2_stack(c))


def gpt_bigcode(c: HFConfig) -> ModelSpec:
    """GPTBigCode (SantaCoder, StarCoder 1): GPT-2 with multi-query attention."""
    return _model(c, _gpt2_stack(c, kv_heads=1 if c.flag("multi_query") else None))
