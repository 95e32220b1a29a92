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


def _same_as_built(c: HFConfig, layers: int, mlp: list[Any], per_head: bool) -> None:
    """Keys poolside's own checkpoints carry beside LagunaConfig's (Laguna-S-2.1's hub
    file: `gating_types`, `mlp_only_layers`, `decoder_sparse_step`): transformers 5.25 has
    no such fields and builds from `gating` and `mlp_layer_types` alone. Where they say
    the same they are read; where they say otherwise the model is not the one counted, and
    they are refused by name."""
    types = c.raw("gating_types")
    if types is not None:
        want = "per_head" if per_head else "per_element"
        if not isinstance(types, list) or types != [want] * layers:
            raise InputError(f"{c.label}: gating_types",
                             f"only {layers} entries of {want!r} (the `gating` setting) are "
                             "modelled; a per-layer gating choice is not")
    if c.raw("mlp_only_layers") is None and c.raw("decoder_sparse_step") is None:
        return
    dense = set(c.int_list("mlp_only_layers") or [])
    step = c.integer("decoder_sparse_step", 1)  # a class without it: every layer may be MoE
    implied = ["dense" if i in dense or (i + 1) % step else "sparse" for i in range(layers)]
    if implied != mlp:
        raise InputError(f"{c.label}: mlp_only_layers",
                         "with decoder_sparse_step it must name the dense layers "
                         "mlp_layer_types names; a disagreement is not modelled")


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
    _same_as_built(c, layers, mlp, per_head)
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
