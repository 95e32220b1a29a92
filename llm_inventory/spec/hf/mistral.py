"""Mistral, Ministral 3 and Mixtral (transformers `models/mistral`, `models/ministral3`,
`models/mixtral`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import all_sliding, core, decoder_model, present_or_default
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def mistral(c: HFConfig) -> ModelSpec:
    # MistralConfig's sliding_window defaults to 4096; an explicit null turns it off.
    fields = core(c)
    fields.update(all_sliding(c, present_or_default(c, "sliding_window")))
    return decoder_model(c, Stack(**fields))


def ministral3(c: HFConfig) -> ModelSpec:
    """Ministral 3 (the language model of Devstral-Small-2, Ministral 3, Magistral 1.2):
    Mistral's layout; its sliding_window defaults to none, and Llama-4-style attention
    temperature scaling (`llama_4_scaling_beta`) adds no parameters."""
    return mistral(c)


def mixtral(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    fields = core(c, moe=moe)
    fields.update(all_sliding(c, c.opt_integer("sliding_window")))
    return decoder_model(c, Stack(**fields))
