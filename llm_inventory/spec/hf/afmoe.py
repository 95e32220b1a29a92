"""AFMoE, Arcee's Trinity models (transformers `models/afmoe`).

Four norms per layer (`AfmoeDecoderLayer`: before and after attention, before and after the
MLP), attention with per-head q/k norms and a sigmoid output gate (`AfmoeAttention.gate_proj`,
hidden → heads × head_dim, which counts as a doubled q projection), sliding-window layers with
rotary positions and global layers without (`AfmoeAttention.forward`: RoPE only when
`is_local_attention`). The first `num_dense_layers` run the gated `AfmoeMLP`; the rest
`AfmoeSparseMoeBlock`: a bias-free router, `num_experts` gated experts of
`moe_intermediate_size`, one shared MLP of `moe_intermediate_size × num_shared_experts`, and
`expert_bias`, a parameter of `num_experts` floats (held like a router bias).
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, MoE, Stack


def afmoe(c: HFConfig) -> ModelSpec:
    """AFMoE: sliding and global attention by `layer_types` (else every
    `global_attn_every_n_layers`-th layer global, `AfmoeConfig.__post_init__`)."""
    expert = c.integer("moe_intermediate_size")
    shared = c.integer("num_shared_experts", minimum=0)
    moe = MoE(experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=expert, shared_experts=1 if shared else 0,
              shared_intermediate_size=expert * shared, router_bias=True,
              first_dense=c.integer("num_dense_layers", minimum=0))
    bias = c.flag("attention_bias")
    fields = core(c, qk_norm="head", qkv_bias=bias, o_bias=bias, norms_per_layer=4,
                  attn_output_gate=True, moe=moe)
    kinds = layer_types(c)
    if kinds is None:
        every = c.integer("global_attn_every_n_layers")
        kinds = [LayerKind.SLIDING if (i + 1) % every else LayerKind.FULL
                 for i in range(fields["layers"])]
    else:
        c.superseded("global_attn_every_n_layers")  # only derives layer_types when unset
    window = c.integer("sliding_window") if LayerKind.SLIDING in kinds else None
    return decoder_model(c, Stack(**fields, layer_types=kinds, sliding_window=window,
                                  overrides=[LayerOverride(kinds=[LayerKind.FULL],
                                                           rope=False)]))
