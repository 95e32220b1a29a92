"""Qwen2, Qwen3 and their MoE variants (transformers `models/qwen2`, `qwen2_moe`, `qwen3`,
`qwen3_moe`)."""

from __future__ import annotations

from typing import Any

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, ModelSpec, MoE, Stack


def _layer_types(c: HFConfig) -> dict[str, Any]:
    """Sliding only when use_sliding_window, from layer max_window_layers on."""
    explicit = layer_types(c)
    window = c.opt_integer("sliding_window", minimum=0)
    if explicit is not None:
        if LayerKind.SLIDING in explicit and window:
            return {"layer_types": explicit, "sliding_window": window}
        return {}
    if not c.flag("use_sliding_window") or not window:
        return {}
    # Qwen3-MoE's class has no max_window_layers; Qwen2's 28 stands in, as it always has.
    start = c.integer("max_window_layers", 28, minimum=0)
    layers = c.integer("num_hidden_layers")
    kinds = [LayerKind.SLIDING if i >= start else LayerKind.FULL for i in range(layers)]
    if LayerKind.SLIDING not in kinds:
        return {}
    return {"layer_types": kinds, "sliding_window": window}


def _moe_layers(c: HFConfig) -> dict[str, Any]:
    """MoE iff not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0."""
    step = c.integer("decoder_sparse_step")
    return {"every": step, "offset": step - 1, "dense_layers": c.int_list("mlp_only_layers") or []}


def qwen2(c: HFConfig) -> ModelSpec:
    # Qwen2 attention: q/k/v carry biases, o_proj does not.
    fields = core(c, qkv_bias=True, o_bias=False)
    fields.update(_layer_types(c))
    return decoder_model(c, Stack(**fields))


def qwen3(c: HFConfig) -> ModelSpec:
    fields = core(c, qk_norm="head")
    fields.update(_layer_types(c))
    return decoder_model(c, Stack(**fields))


def qwen2_moe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        shared_experts=1,
        shared_intermediate_size=c.integer("shared_expert_intermediate_size"),
        shared_expert_gate=True,
        **_moe_layers(c),
    )
    fields = core(c, qkv_bias=c.flag("qkv_bias"), o_bias=False, moe=moe)
    fields.update(_layer_types(c))
    return decoder_model(c, Stack(**fields))


def qwen3_moe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        **_moe_layers(c),
    )
    fields = core(c, qk_norm="head", moe=moe)
    fields.update(_layer_types(c))
    return decoder_model(c, Stack(**fields))
