"""Llama (transformers `models/llama`): the reference dense decoder."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, ModelSpec, Stack


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


def cwm(c: HFConfig) -> ModelSpec:
    """Code World Model (transformers `models/cwm`): Llama's layers with no projection
    biases (`CwmAttention`, Qwen2's with bias-free q/k/v), sliding-window layers by
    `layer_types`, else full where i % 4 == 0 (`CwmConfig.__post_init__`)."""
    fields = core(c, qkv_bias=False, o_bias=False)
    kinds = layer_types(c) or [LayerKind.FULL if i % 4 == 0 else LayerKind.SLIDING
                               for i in range(fields["layers"])]
    window = c.integer("sliding_window") if LayerKind.SLIDING in kinds else None
    return decoder_model(c, Stack(**fields, layer_types=kinds, sliding_window=window))


def ernie4_5(c: HFConfig) -> ModelSpec:
    """ERNIE 4.5 dense (transformers `models/ernie4_5`): Llama's layers with `use_bias` on
    every attention and MLP projection (`Ernie4_5Attention`, `Ernie4_5MLP`)."""
    bias = c.flag("use_bias")
    return decoder_model(c, Stack(**core(c, qkv_bias=bias, o_bias=bias, mlp_bias=bias)))


def arcee(c: HFConfig) -> ModelSpec:
    """Arcee (AFM, transformers `models/arcee`): Llama's attention (every projection with
    `attention_bias`) and a plain MLP (`ArceeMLP`: up and down with `mlp_bias`, ReLU²
    between, no gate)."""
    return decoder_model(c, Stack(**core(c, mlp="plain")))
