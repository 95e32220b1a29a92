"""Llama (transformers `models/llama`): the reference dense decoder."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, Stack


def llama(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))
