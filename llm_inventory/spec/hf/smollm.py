"""SmolLM3 (transformers `models/smollm3`): a Llama layout whose every fourth layer applies no
rotary embedding (`no_rope_layers[i] == 0`, by default (i + 1) % no_rope_layer_interval == 0;
`SmolLM3Attention.use_rope`), and optional sliding windows on those layers
(`SmolLM3Config.__post_init__`)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, Stack


def smollm3(c: HFConfig) -> ModelSpec:
    """SmolLM3: Llama layers, RoPE skipped on the no-rope layers."""
    fields = core(c)
    layers = fields["layers"]
    rope = c.int_list("no_rope_layers")
    if rope is None:
        every = c.integer("no_rope_layer_interval")
        rope = [int((i + 1) % every != 0) for i in range(layers)]
    else:
        c.superseded("no_rope_layer_interval")  # SmolLM3Config derives the list only without
    nope = [i for i in range(layers) if not rope[i % len(rope)]] if rope else []
    window = c.opt_integer("sliding_window") if c.flag("use_sliding_window") else None
    kinds = layer_types(c) or [LayerKind.SLIDING if window and i in nope else LayerKind.FULL
                               for i in range(layers)]
    if LayerKind.SLIDING in kinds:
        fields["sliding_window"] = c.integer("sliding_window")
    overrides = [LayerOverride(layers=nope, rope=False)] if nope else []
    return decoder_model(c, Stack(**fields, layer_types=kinds, overrides=overrides))
