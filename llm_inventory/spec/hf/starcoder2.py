"""StarCoder 2 (transformers `models/starcoder2`): q/k/v/o projections and a plain GELU MLP
(`c_fc`, `c_proj`) with biases when `use_bias`, LayerNorms with bias, a tied head, and every
layer sliding-window when `sliding_window` is set (`Starcoder2Attention`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import all_sliding, core, decoder_model, present_or_default
from llm_inventory.spec.model import ModelSpec, Stack


def starcoder2(c: HFConfig) -> ModelSpec:
    bias = c.flag("use_bias")
    fields = core(c, qkv_bias=bias, o_bias=bias, mlp="plain", mlp_bias=bias, norm="layer")
    fields.update(all_sliding(c, present_or_default(c, "sliding_window")))
    return decoder_model(c, Stack(**fields))
