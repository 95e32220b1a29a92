"""Llama (transformers `models/llama`): the reference dense decoder."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, Stack


def llama(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))


def helium(c: HFConfig) -> ModelSpec:
    """Helium (transformers `models/helium`): Llama's layers, but o_proj never has a bias
    (`HeliumAttention`: q/k/v take `attention_bias`, o_proj bias=False) and is hidden ×
    hidden."""
    return decoder_model(c, Stack(**core(c, o_bias=False)))


def jais2(c: HFConfig) -> ModelSpec:
    """Jais 2 (transformers `models/jais2`): Llama attention (every projection with
    `attention_bias`) under LayerNorms with bias (`Jais2DecoderLayer`, `Jais2Model.norm`) and
    Nemotron's plain MLP (`Jais2MLP`: up and down with `mlp_bias`, a squared-ReLU between)."""
    return decoder_model(c, Stack(**core(c, mlp="plain", norm="layer")))
