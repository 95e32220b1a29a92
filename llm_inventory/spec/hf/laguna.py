"""Laguna, poolside's MoE (transformers `models/laguna`).

Per layer (`LagunaDecoderLayer`): `LagunaAttention` with its own head count
(`num_attention_heads_per_layer`, else `num_attention_heads` everywhere), shared KV heads,
per-head q/k RMS norms, q/k/v/o with `attention_bias`, and a softplus output gate `g_proj`
(no bias): one value per head (`gating` true or "per-head") or per head channel
("per-element"); then by `mlp_layer_types` the dense
`LagunaMLP` at `intermediate_size` or `LagunaSparseMoeBlock`: a bias-free router whose
`e_score_correction_bias` is a parameter (`LagunaTopKRouter`), `num_experts` gated experts
of `moe_intermediate_size` and one shared MLP of `shared_expert_intermediate_size` with no
gate of its own. Two norms per layer; sliding or full attention by `layer_types`, rotary on
both. Defaults (`LagunaConfig.__post_init__`): every layer full, the first dense.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, extra, layer_types
from llm_inventory.spec.model import (
    Component,
    LayerKind,
    LayerOverride,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


def _per_layer(c: HFConfig, key: str, layers: int, default: list[Any]) -> list[Any]:
    values = c.raw(key)
    if values is None:
        return default
    if not isinstance(values, list) or len(values) != layers:
        raise InputError(f"{c.label}: {key}", f"must be a list of {layers} entries")
    return values


def laguna(c: HFConfig) -> ModelSpec:
    """Laguna: per-layer head counts, a gated attention output, a dense first layer."""
    layers = c.integer("num_hidden_layers")
    heads = c.integer("num_attention_heads")
    per_layer = _per_layer(c, "num_attention_heads_per_layer", layers, [heads] * layers)
    if not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in per_layer):
        raise InputError(f"{c.label}: num_attention_heads_per_layer",
                         "must hold positive integers")
    mlp = _per_layer(c, "mlp_layer_types", layers, ["dense"] + ["sparse"] * (layers - 1))
    if set(mlp) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types", "entries are \"dense\" or \"sparse\"")
    gating = c.raw("gating", True)
    if gating not in (True, "per-head", "per-element"):
        raise InputError(f"{c.label}: gating",
                         f"must be true, \"per-head\" or \"per-element\", got {gating!r}")
    per_head = gating is True or gating == "per-head"
    moe = MoE(experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("moe_intermediate_size"),
              shared_experts=1,
              shared_intermediate_size=c.integer("shared_expert_intermediate_size"),
              router_bias=True, layers=[i for i, m in enumerate(mlp) if m == "sparse"])
    bias = c.flag("attention_bias")
    fields = core(c, qk_norm="head", qkv_bias=bias, o_bias=bias, moe=moe)
    hidden, width = fields["hidden_size"], 1 if per_head else fields["head_dim"]
    overrides = [LayerOverride(layers=[i for i, h in enumerate(per_layer) if h == count],
                               heads=count) for count in sorted(set(per_layer)) if count != heads]
    gates = [extra("self_attn.g_proj.weight", [count * width, hidden], linear=True,
                   shard=Shard.COLUMN, component=Component.ATTENTION,
                   layers=[i for i, h in enumerate(per_layer) if h == count])
             for count in sorted(set(per_layer))]
    kinds = layer_types(c) or [LayerKind.FULL] * layers
    window = c.integer("sliding_window") if LayerKind.SLIDING in kinds else None
    if window is None:
        c.superseded("sliding_window")  # no sliding layer uses it
    return decoder_model(c, Stack(**fields, layer_types=kinds, sliding_window=window,
                                  overrides=overrides, extra=gates))
