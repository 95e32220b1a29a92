"""Seed-OSS (transformers `models/seed_oss`): a Llama layout whose q/k/v projections carry
biases (`attention_bias`) and whose output projection has its own switch
(`attention_out_bias`); its 80 query heads of 128 make q_proj wider than the hidden size."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, Stack


def seed_oss(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c, o_bias=c.flag("attention_out_bias"))))
