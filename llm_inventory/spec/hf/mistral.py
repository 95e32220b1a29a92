"""Mistral and Mixtral (transformers `models/mistral`, `models/mixtral`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import all_sliding, core, decoder_model, present_or_default
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def mistral(c: HFConfig) -> ModelSpec:
    # MistralConfig's sliding_window defaults to 4096; an explicit null turns it off.
    fields = core(c)
    fields.update(all_sliding(c, present_or_default(c, "sliding_window")))
    return decoder_model(c, Stack(**fields))


def mixtral(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    fields = core(c, moe=moe)
    fields.update(all_sliding(c, c.opt_integer("sliding_window")))
    return decoder_model(c, Stack(**fields))
