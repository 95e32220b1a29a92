"""Phi-1/2, Phi-3/4 and Phi-3.5-MoE (transformers `models/phi`, `models/phi3`,
`models/phimoe`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import all_sliding, core, decoder_model
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def phi3(c: HFConfig) -> ModelSpec:
    """Phi-3/3.5/4-mini: a Llama layout, rotary on `partial_rotary_factor` of each head
    (Phi-4-mini: 0.75), LongRoPE whose short factors cover the top-level
    `original_max_position_embeddings` (`Phi3Config`; vLLM caches both ranges)."""
    fields = core(c)
    rope = fields["rope_scaling"]
    if rope is not None and rope.original_max_positions is None \
            and c.has("original_max_position_embeddings"):
        fields["rope_scaling"] = rope.model_copy(update={
            "original_max_positions": c.integer("original_max_position_embeddings")})
    fields.update(all_sliding(c, c.opt_integer("sliding_window")))
    return decoder_model(c, Stack(**fields))


def phi(c: HFConfig) -> ModelSpec:
    """Phi-1/2: parallel attention and MLP under one LayerNorm, biases everywhere."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", heads),
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        qk_norm="head" if c.flag("qk_layernorm") else "none",
        norm="layer",
        norms_per_layer=1,
        lm_head_bias=True,
        partial_rotary_factor=c.number("partial_rotary_factor"),
    )
    return decoder_model(c, stack)


def phimoe(c: HFConfig) -> ModelSpec:
    """Phi-3.5-MoE (`PhimoeDecoderLayer`): LayerNorms with biases, q/k/v/o biased by
    `attention_bias`, the head by `lm_head_bias`; every MLP a bias-free router and
    `num_local_experts` experts of `intermediate_size`. A set sliding_window makes every layer
    sliding (`PhimoeModel`'s mask)."""
    moe = MoE(experts=c.integer("num_local_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("intermediate_size"))
    fields = core(c, mlp_bias=False, norm="layer", lm_head_bias=c.flag("lm_head_bias"),
                  moe=moe)
    fields.update(all_sliding(c, c.opt_integer("sliding_window")))
    return decoder_model(c, Stack(**fields))
