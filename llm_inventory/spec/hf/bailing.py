"""Ling / Bailing MoE (`model_type: bailing_moe`; no transformers class: the checkpoint's
own `modeling_bailing_moe.py`, github inclusionAI/Ling `models/`): a fused q/k/v projection,
routed experts plus shared experts after `first_k_dense_replace` dense layers."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, present_or_default
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def bailing_moe(c: HFConfig) -> ModelSpec:
    """`BailingMoeDecoderLayer`: `BailingMoeSparseMoeBlock` from layer first_k_dense_replace
    on when num_experts is set (a bias-free router weight, experts of
    `moe_intermediate_size`, and when num_shared_experts is set one shared MLP of
    moe_intermediate_size × num_shared_experts), else `BailingMoeMLP` of `intermediate_size`;
    no MLP has biases. `BailingMoeAttention`: `query_key_value` (q, k and v rows, biased by
    `use_qkv_bias`) and `dense` (biased by `use_bias`); head_dim unset is hidden / heads.
    `norm_head` normalises the head's weight at run time and adds no parameter."""
    experts = present_or_default(c, "num_experts")
    moe = None
    if experts:
        expert = c.integer("moe_intermediate_size")
        shared = present_or_default(c, "num_shared_experts", minimum=0) or 0
        moe = MoE(experts=experts, top_k=c.integer("num_experts_per_tok"),
                  expert_intermediate_size=expert, shared_experts=shared,
                  shared_intermediate_size=expert if shared else 0,
                  first_dense=c.integer("first_k_dense_replace", minimum=0))
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    # BailingMoeAttention reads num_key_value_heads as given: no fallback to the heads.
    fields = core(c, kv_heads=c.integer("num_key_value_heads"),
                  head_dim=present_or_default(c, "head_dim") or hidden // heads,
                  qkv_bias=c.flag("use_qkv_bias"), o_bias=c.flag("use_bias"), mlp_bias=False,
                  moe=moe)
    return decoder_model(c, Stack(**fields))
