"""OLMo family (transformers `models/olmoe`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def olmoe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    # OLMoE normalises q and k over all heads at once.
    return decoder_model(c, Stack(**core(c, qk_norm="full", moe=moe)))
