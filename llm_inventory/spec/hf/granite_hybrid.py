"""Granite 4.0-H (transformers `models/granitemoehybrid`): Mamba-2 layers with a few
attention layers, each followed by a MoE and a gated shared MLP (or the shared MLP alone)."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, rope_scaling
from llm_inventory.spec.model import SSM, LayerKind, ModelSpec, MoE, Stack

# `GraniteMoeHybridDecoderLayer`: "linear_attention" builds the Mamba layer, any other type
# attention; "mamba" and "attention" are the legacy names transformers remaps.
_MAMBA = {"linear_attention", "mamba"}


def granitemoehybrid(c: HFConfig) -> ModelSpec:
    """Granite 4.0-H: `GraniteMoeHybridMambaLayer` (Mamba-2, mamba_expand × hidden channels,
    a gated norm) or `GraniteMoeHybridAttention` (rotary only when position_embedding_type
    is "rope") per layer; then `GraniteMoeHybridMoE` (router, gated experts) when
    num_local_experts > 0, plus the gated `shared_mlp` of shared_intermediate_size."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    names = c.str_list("layer_types") or ["linear_attention"] * layers
    if len(names) != layers:
        raise InputError(f"{c.label}: layer_types",
                         f"has {len(names)} entries for {layers} layers")
    experts = c.integer("num_local_experts", minimum=0)
    shared = c.integer("shared_intermediate_size")
    moe = None
    if experts:
        moe = MoE(experts=experts, top_k=c.integer("num_experts_per_tok"),
                  expert_intermediate_size=c.integer("intermediate_size"),
                  shared_experts=1, shared_intermediate_size=shared)
    bias = c.flag("attention_bias")
    dtype = c.dtype
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads), intermediate_size=shared,
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=bias, o_bias=bias, rope=c.raw("position_embedding_type") == "rope",
        rope_scaling=rope_scaling(c),
        layer_types=[LayerKind.MAMBA if n in _MAMBA else LayerKind.FULL for n in names],
        ssm=SSM(
            version=2, d_state=c.integer("mamba_d_state"), d_conv=c.integer("mamba_d_conv"),
            d_inner=int(c.number("mamba_expand") * hidden), n_groups=c.integer("mamba_n_groups"),
            heads=c.integer("mamba_n_heads"), head_dim=c.integer("mamba_d_head"),
            conv_bias=c.flag("mamba_conv_bias"), proj_bias=c.flag("mamba_proj_bias"),
            # No SSM dtype key: vLLM keeps both parts in the model dtype (mamba2_state_dtype,
            # mamba_ssm_cache_dtype auto).
            state_dtype=dtype, conv_dtype=dtype,
        ),
        moe=moe,
    )
    return decoder_model(c, stack)
