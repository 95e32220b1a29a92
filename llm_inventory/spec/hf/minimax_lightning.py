"""MiniMax-Text-01 / MiniMax-M1 (transformers `models/minimax`): lightning (linear)
attention and softmax attention layers interleaved, a MoE in every layer."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default, rope_scaling
from llm_inventory.spec.model import LayerKind, LinearAttention, ModelSpec, MoE, Stack

_KINDS = {"full_attention": LayerKind.FULL, "linear_attention": LayerKind.LIGHTNING}


def minimax(c: HFConfig) -> ModelSpec:
    """MiniMax: `layer_types`, else softmax attention on even layers and lightning attention
    on odd ones (`MiniMaxConfig.__post_init__`); `MiniMaxLightningAttention` (fused qkv, an
    RMSNorm, out_proj and an output gate) and `MiniMaxAttention` (no biases) share the head
    count and head dim; `MiniMaxSparseMoeBlock` (router, gated experts) in every layer."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    names = c.str_list("layer_types") or [
        "full_attention" if (i + 1) % 2 else "linear_attention" for i in range(layers)]
    if len(names) != layers or set(names) - set(_KINDS):
        raise InputError(f"{c.label}: layer_types", f"needs {layers} entries of "
                         "full_attention or linear_attention")
    head_dim = c.opt_integer("head_dim") or hidden // heads
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        # Null is as many KV heads as heads (`MiniMaxConfig.__post_init__`).
        kv_heads=present_or_default(c, "num_key_value_heads") or heads, head_dim=head_dim,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        rope_scaling=rope_scaling(c),
        layer_types=[_KINDS[n] for n in names],
        # The lightning state in the model dtype (vLLM `linear_attention_state_dtype`;
        # transformers' `MiniMaxCache` too).
        linear_attention=LinearAttention(key_heads=heads, key_head_dim=head_dim,
                                         conv_kernel=0, state_dtype=c.dtype),
        moe=MoE(experts=c.integer("num_local_experts"), top_k=c.integer("num_experts_per_tok"),
                expert_intermediate_size=c.integer("intermediate_size")),
    )
    return decoder_model(c, stack)
