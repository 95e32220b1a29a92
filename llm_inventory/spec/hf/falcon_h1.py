"""Falcon-H1 (transformers `models/falcon_h1`): every layer runs attention and a Mamba-2
mixer in parallel on the same normed input and adds their outputs, then a gated MLP."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default, rope_scaling
from llm_inventory.spec.model import SSM, LayerKind, ModelSpec, Stack


def falcon_h1(c: HFConfig) -> ModelSpec:
    """Falcon-H1 (`FalconH1DecoderLayer`): `FalconH1Attention` (biases when attention_bias)
    beside `FalconH1Mixer`, a Mamba-2 mixer of mamba_d_ssm (else mamba_expand × hidden)
    channels in mamba_n_heads heads, its gated norm only when mamba_rms_norm, and an
    out_proj biased by projectors_bias; an input and a pre-FFN norm per layer. The µP
    multipliers scale activations, not weights."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    # mamba_d_ssm null: mamba_expand × hidden (`FalconH1Mixer`).
    d_inner = present_or_default(c, "mamba_d_ssm") or int(c.number("mamba_expand") * hidden)
    mamba_heads = c.integer("mamba_n_heads")
    head_dim = c.raw("mamba_d_head")
    bias = c.flag("attention_bias")
    dtype = c.dtype
    stack = Stack(
        layers=c.integer("num_hidden_layers"), hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads),
        intermediate_size=c.integer("intermediate_size"), mlp_bias=c.flag("mlp_bias"),
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=bias, o_bias=bias, rope_scaling=rope_scaling(c),
        layer_types=[LayerKind.FULL], parallel_mixers=[LayerKind.MAMBA],
        ssm=SSM(
            version=2, d_state=c.integer("mamba_d_state"), d_conv=c.integer("mamba_d_conv"),
            d_inner=d_inner, n_groups=c.integer("mamba_n_groups"), heads=mamba_heads,
            # "auto" (the class's `__post_init__`): the expanded width over the heads.
            head_dim=d_inner // mamba_heads if head_dim in (None, "auto")
            else c.integer("mamba_d_head"),
            conv_bias=c.flag("mamba_conv_bias"), proj_bias=c.flag("mamba_proj_bias"),
            out_proj_bias=c.flag("projectors_bias"), gated_norm=c.flag("mamba_rms_norm"),
            # No SSM dtype key: vLLM keeps both parts in the model dtype (mamba2_state_dtype
            # with mamba_ssm_cache_dtype auto); transformers' cache holds the SSM state in fp32.
            state_dtype=dtype, conv_dtype=dtype,
        ),
    )
    return decoder_model(c, stack)
