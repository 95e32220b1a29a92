"""Granite (transformers `models/granite`, `models/granitemoe`): Llama-shaped decoders
whose multipliers scale activations, not weights, so their tensors are Llama's (and
Mixtral's experts for the MoE one)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def granite(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))


def granitemoe(c: HFConfig) -> ModelSpec:
    """`GraniteMoeDecoderLayer`: attention biased by `attention_bias` (q/k/v/o), and every MLP
    `GraniteMoeMoE`: a bias-free router and `num_local_experts` experts of
    `intermediate_size`; no dense MLP, no shared expert."""
    moe = MoE(experts=c.integer("num_local_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("intermediate_size"))
    return decoder_model(c, Stack(**core(c, mlp_bias=False, moe=moe)))


def granitemoeshared(c: HFConfig) -> ModelSpec:
    """Granite MoE with a shared expert (transformers `models/granitemoeshared`): GraniteMoE's
    layers plus, when `shared_intermediate_size` is not 0, `GraniteMoeSharedMLP` (a gated
    input_linear to 2 × shared_intermediate_size and output_linear, no biases)."""
    shared = c.integer("shared_intermediate_size", minimum=0)
    moe = MoE(experts=c.integer("num_local_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("intermediate_size"),
              shared_experts=1 if shared else 0, shared_intermediate_size=shared)
    return decoder_model(c, Stack(**core(c, mlp_bias=False, moe=moe)))
