"""Recurrent and hybrid decoders: Mamba, Mamba-2 and Jamba's attention/Mamba/MoE mix."""

from __future__ import annotations

import math

from llm_inventory.spec.hf import Builder, HFConfig
from llm_inventory.spec.hf.decoders import decoder_model
from llm_inventory.spec.model import SSM, LayerKind, ModelSpec, MoE, Stack


def _dt_rank(c: HFConfig, key: str, hidden: int) -> int:
    """`"auto"` (the default) is ceil(hidden / 16), as transformers resolves it."""
    value = c.raw(key, "auto")
    if value == "auto":
        return math.ceil(hidden / 16)
    return c.integer(key)


def jamba(c: HFConfig) -> ModelSpec:
    """Jamba: attention every `attn_layer_period` layers from `attn_layer_offset`, Mamba
    mixers elsewhere; MoE every `expert_layer_period` layers from `expert_layer_offset`."""
    hidden = c.integer("hidden_size", 4096)
    layers = c.integer("num_hidden_layers", 32)
    period, offset = c.integer("attn_layer_period", 8), c.integer("attn_layer_offset", 4, minimum=0)
    kinds = [LayerKind.FULL if i % period == offset else LayerKind.MAMBA for i in range(layers)]
    experts = c.integer("num_experts", 16)
    moe = None
    if experts > 1:
        moe = MoE(
            experts=experts,
            top_k=c.integer("num_experts_per_tok", 2),
            expert_intermediate_size=c.integer("intermediate_size", 14336),
            every=c.integer("expert_layer_period", 2),
            offset=c.integer("expert_layer_offset", 1, minimum=0),
        )
    heads = c.integer("num_attention_heads", 32)
    stack = Stack(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", 8),
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size", 14336),
        vocab_size=c.integer("vocab_size", 65536),
        tied_embeddings=c.flag("tie_word_embeddings", False),
        layer_types=kinds,
        rope=False,  # Jamba's attention layers use no positional encoding
        ssm=SSM(
            version=1,
            d_state=c.integer("mamba_d_state", 16),
            d_conv=c.integer("mamba_d_conv", 4),
            expand=c.integer("mamba_expand", 2),
            dt_rank=_dt_rank(c, "mamba_dt_rank", hidden),
            conv_bias=c.flag("mamba_conv_bias", True),
            proj_bias=c.flag("mamba_proj_bias", False),
            inner_norms=True,
        ),
        moe=moe,
    )
    return decoder_model(c, stack)


def mamba(c: HFConfig) -> ModelSpec:
    """Mamba-1: one norm and one mixer per layer, no MLP, no attention."""
    hidden = c.integer("hidden_size", 768)
    expand = c.integer("expand", 2)
    stack = Stack(
        layers=c.integer("num_hidden_layers", 32),
        hidden_size=hidden,
        intermediate_size=0,
        mlp="none",
        norms_per_layer=1,
        vocab_size=c.integer("vocab_size", 50280),
        tied_embeddings=c.flag("tie_word_embeddings", True),
        layer_types=[LayerKind.MAMBA],
        rope=False,
        ssm=SSM(
            version=1,
            d_state=c.integer("state_size", 16),
            d_conv=c.integer("conv_kernel", 4),
            expand=c.integer("intermediate_size", expand * hidden) // hidden,
            dt_rank=_dt_rank(c, "time_step_rank", hidden),
            conv_bias=c.flag("use_conv_bias", True),
            proj_bias=c.flag("use_bias", False),
        ),
    )
    return decoder_model(c, stack)


def mamba2(c: HFConfig) -> ModelSpec:
    """Mamba-2: multi-head SSM with grouped B/C, a gated norm, no MLP."""
    hidden = c.integer("hidden_size", 4096)
    expand = c.integer("expand", 2)
    head_dim = c.integer("head_dim", 64)
    stack = Stack(
        layers=c.integer("num_hidden_layers", 64),
        hidden_size=hidden,
        intermediate_size=0,
        mlp="none",
        norms_per_layer=1,
        vocab_size=c.integer("vocab_size", 32768),
        tied_embeddings=c.flag("tie_word_embeddings", False),
        layer_types=[LayerKind.MAMBA],
        rope=False,
        ssm=SSM(
            version=2,
            d_state=c.integer("state_size", 128),
            d_conv=c.integer("conv_kernel", 4),
            expand=expand,
            n_groups=c.integer("n_groups", 8),
            heads=c.integer("num_heads", expand * hidden // head_dim),
            head_dim=head_dim,
            conv_bias=c.flag("use_conv_bias", True),
            proj_bias=c.flag("use_bias", False),
        ),
    )
    return decoder_model(c, stack)


BUILDERS: dict[str, Builder] = {"jamba": jamba, "mamba": mamba, "mamba2": mamba2}
