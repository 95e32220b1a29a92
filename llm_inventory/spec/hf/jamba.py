"""Jamba (transformers `models/jamba`): attention, Mamba and MoE layers interleaved."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model
from llm_inventory.spec.hf.mamba import dt_rank
from llm_inventory.spec.model import SSM, LayerKind, ModelSpec, MoE, Stack


def jamba(c: HFConfig) -> ModelSpec:
    """Jamba: attention every `attn_layer_period` layers from `attn_layer_offset`, Mamba
    mixers elsewhere; MoE every `expert_layer_period` layers from `expert_layer_offset`."""
    hidden = c.integer("hidden_size")
    layers = c.integer("num_hidden_layers")
    period, offset = c.integer("attn_layer_period"), c.integer("attn_layer_offset", minimum=0)
    kinds = [LayerKind.FULL if i % period == offset else LayerKind.MAMBA for i in range(layers)]
    experts = c.integer("num_experts")
    moe = None
    if experts > 1:
        moe = MoE(
            experts=experts,
            top_k=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("intermediate_size"),
            every=c.integer("expert_layer_period"),
            offset=c.integer("expert_layer_offset", minimum=0),
        )
    heads = c.integer("num_attention_heads")
    stack = Stack(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        layer_types=kinds,
        rope=False,  # Jamba's attention layers use no positional encoding
        ssm=SSM(
            version=1,
            d_state=c.integer("mamba_d_state"),
            d_conv=c.integer("mamba_d_conv"),
            expand=c.integer("mamba_expand"),
            dt_rank=dt_rank(c, "mamba_dt_rank", hidden),
            conv_bias=c.flag("mamba_conv_bias"),
            proj_bias=c.flag("mamba_proj_bias"),
            inner_norms=True,
        ),
        moe=moe,
    )
    return decoder_model(c, stack)
