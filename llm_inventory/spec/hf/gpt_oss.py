"""gpt-oss (transformers `models/gpt_oss`): alternating sliding and full attention with
sinks, biased attention, and experts with biases behind a biased router."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, ModelSpec, MoE, Stack


def gpt_oss(c: HFConfig) -> ModelSpec:
    kinds = layer_types(c) or [LayerKind.SLIDING, LayerKind.FULL]
    # OpenAI's own files also spell the top-k experts_per_token; GptOssConfig reads
    # num_experts_per_tok.
    key = "experts_per_token" if c.has("experts_per_token") and not c.has(
        "num_experts_per_tok") else "num_experts_per_tok"
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer(key),
        expert_intermediate_size=c.integer("intermediate_size"),
        expert_bias=True,
        router_bias=True,
    )
    bias = c.flag("attention_bias")
    stack = Stack(**core(
        c, qkv_bias=bias, o_bias=bias, sinks=True, layer_types=kinds,
        sliding_window=c.integer("sliding_window"), moe=moe,
    ))
    return decoder_model(c, stack)
