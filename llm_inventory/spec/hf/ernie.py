"""ERNIE 4.5 MoE (transformers `models/ernie4_5_moe`): MoE layers between
`moe_layer_start_index` and `moe_layer_end_index` every `moe_layer_interval`, routed plus
shared experts, and a score-correction bias the router holds as a parameter."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, extra
from llm_inventory.spec.model import Component, ModelSpec, MoE, Stack


def ernie4_5_moe(c: HFConfig) -> ModelSpec:
    """`Ernie4_5_MoeDecoderLayer`: `Ernie4_5_MoeSparseMoeBlock` when (i + 1) % interval == 0
    and start ≤ i ≤ end (end -1: the last layer), else `Ernie4_5_MoeMLP`. The block's router
    (`Ernie4_5_MoeTopKRouter`) has a weight and `moe_statics.e_score_correction_bias`, a
    parameter of one per expert; experts of `moe_intermediate_size`; shared experts one MLP of
    moe_num_shared_experts × moe_intermediate_size. `use_bias` biases every projection, the
    shared MLP and the head included, but not the experts (`Ernie4_5_MoeExperts`)."""
    layers = c.integer("num_hidden_layers")
    start = c.integer("moe_layer_start_index", minimum=0)
    end = c.integer("moe_layer_end_index", minimum=-1)
    end = layers - 1 if end == -1 else end
    every = c.integer("moe_layer_interval")
    moe_layers = [i for i in range(layers) if (i + 1) % every == 0 and start <= i <= end]
    expert = c.integer("moe_intermediate_size")
    shared = c.integer("moe_num_shared_experts", minimum=0)
    moe = MoE(
        experts=c.integer("moe_num_experts"),
        top_k=c.integer("moe_k"),
        expert_intermediate_size=expert,
        shared_experts=shared,
        shared_intermediate_size=expert if shared else 0,
        layers=moe_layers,
    ) if moe_layers else None
    bias = c.flag("use_bias")
    # The score-correction bias is a parameter here (a buffer in most other classes).
    statics = [extra("layers.{i}.mlp.gate.moe_statics.e_score_correction_bias",
                     [moe.experts], layers=moe_layers, component=Component.ROUTER)] if moe else []
    if moe and shared and bias:
        # The shared MLP is an Ernie4_5_MoeMLP, biased like the dense ones; the experts never.
        width = shared * expert
        statics += [extra(f"layers.{{i}}.mlp.shared_experts.{name}.bias", [size],
                          layers=moe_layers, component=Component.SHARED_EXPERTS)
                    for name, size in (("gate_proj", width), ("up_proj", width),
                                       ("down_proj", c.integer("hidden_size")))]
    fields = core(c, qkv_bias=bias, o_bias=bias, mlp_bias=bias, lm_head_bias=bias, moe=moe,
                  extra=statics)
    return decoder_model(c, Stack(**fields))
