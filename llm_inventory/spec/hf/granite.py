"""Granite (transformers `models/granite`): a Llama-shaped decoder whose multipliers scale
activations, not weights, so its tensors are Llama's."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, Stack


def granite(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))
