"""Step-3.5 / Step-3.7-Flash text model (transformers `models/step3p7`, `Step3p7TextConfig`):
sliding and full attention layers with per-head q/k norms and a per-head output gate
(`g_proj`), dense MLPs on the first layers, then routed experts plus one shared expert, and
multi-token-prediction layers the checkpoint appends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    core,
    decoder_model,
    extra,
    hf_model,
    layer_types,
    over_defaults,
    sub_config,
)
from llm_inventory.spec.hf.glm import nextn_layers
from llm_inventory.spec.model import (
    MTP,
    Component,
    ExtraTensor,
    Family,
    LayerKind,
    LayerOverride,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


def _trimmed(c: HFConfig, key: str, layers: int, padded: int) -> list[str] | None:
    """A per-layer list; hub files pad it with the MTP layers' entries, which
    `Step3p7TextConfig.__post_init__` splits off."""
    values = c.str_list(key)
    if values is None:
        return None
    if len(values) == padded:
        return values[:layers]
    if len(values) != layers:
        raise InputError(f"{c.label}: {key}", f"has {len(values)} entries for {layers} layers")
    return values


def _moe_layers(c: HFConfig, layers: int, padded: int) -> list[int]:
    """`mlp_layer_types` ('sparse' = MoE), else the hub's `moe_layers_enum` (indices, or a
    comma-separated string), else every layer from 3 on (`Step3p7TextConfig.__post_init__`)."""
    mlp = _trimmed(c, "mlp_layer_types", layers, padded)
    if mlp is not None:
        bad = sorted(set(mlp) - {"dense", "sparse"})
        if bad:
            raise InputError(f"{c.label}: mlp_layer_types",
                             f"unknown MLP type(s) {bad}; known: dense, sparse")
        return [i for i, kind in enumerate(mlp) if kind == "sparse"]
    enum = _enum(c)
    if enum is None:
        return list(range(3, layers))
    return sorted(i for i in enum if 0 <= i < layers)


def _enum(c: HFConfig) -> set[int] | None:
    """The hub's `moe_layers_enum`: MoE layer indices, a list or a comma-separated string."""
    enum = c.raw("moe_layers_enum")
    if enum is None:
        return None
    items = enum.split(",") if isinstance(enum, str) else enum
    try:
        return {int(str(i).strip()) for i in items if str(i).strip()}
    except (TypeError, ValueError):
        raise InputError(f"{c.label}: moe_layers_enum",
                         f"must list layer indices, got {enum!r}") from None


def _sliding_heads(c: HFConfig, heads: int) -> int:
    """`num_sliding_attention_heads`, else the hub's `attention_other_setting` entry, else
    the full layers' count."""
    if c.has("num_sliding_attention_heads"):
        return c.integer("num_sliding_attention_heads")
    other = c.raw("attention_other_setting")
    if isinstance(other, dict) and other.get("num_attention_heads") is not None:
        return HFConfig(other, f"{c.label}: attention_other_setting").integer(
            "num_attention_heads")
    return heads


def _gates(c: HFConfig, kinds: Sequence[str], heads: int, sliding: int,
           head_dim: int) -> list[ExtraTensor]:
    """`Step3p7Attention.g_proj`: Linear(hidden, heads) when the gate is per head (`gating`
    true, the class's), else Linear(hidden, heads × head_dim); no bias."""
    hidden = c.integer("hidden_size")
    gating = c.raw("gating", True)
    width = 1 if gating is True or gating == "per-head" else head_dim
    found = []
    for kind, count in ((LayerKind.FULL, heads), (LayerKind.SLIDING, sliding)):
        indices = [i for i, k in enumerate(kinds) if k == kind]
        if indices:
            found.append(extra("layers.{i}.self_attn.g_proj.weight", [count * width, hidden],
                               linear=True, shard=Shard.COLUMN, layers=indices,
                               component=Component.ATTENTION))
    return found


def _mtp(c: HFConfig, layers: int, count: int) -> MTP | None:
    """`num_nextn_predict_layers` full-attention layers after the decoder's, with the
    DeepSeek-style extras but no embedding of their own: vLLM loads every parameter of
    `Step3p5AMultiTokenPredictorLayer` from the checkpoint (enorm, hnorm, eh_proj, its shared
    head's norm and output) and the embedding once, as the model's (`step3p5_mtp.py`). Their
    MLPs are MoE or dense as transformers types them (`Step3p7TextConfig.__post_init__`):
    `mtp_mlp_layer_types`, else the tail of a padded `mlp_layer_types`, else the layers'
    membership of `moe_layers_enum`, else dense (the default MoE set stops at the decoder's
    last layer)."""
    if not count:
        return None
    types = c.str_list("mtp_mlp_layer_types")
    padded = c.str_list("mlp_layer_types")
    if types is None and padded is not None and len(padded) == layers + count:
        types = padded[layers:]
    if types is None:
        enum = _enum(c)
        types = ["sparse" if enum is not None and i in enum else "dense"
                 for i in range(layers, layers + count)]
    if len(set(types)) != 1:
        raise InputError(f"{c.label}: mtp_mlp_layer_types",
                         f"mixes MLP types {sorted(set(types))}; one type for every "
                         "multi-token-prediction layer is supported")
    mtp = nextn_layers(c, count, embedding=False, kind=LayerKind.FULL)
    assert mtp is not None
    # The decoder's per-head gate is a stack extra; the MTP layer's own is listed here.
    heads, head_dim = c.integer("num_attention_heads"), c.integer("head_dim")
    (gate,) = _gates(c, [LayerKind.FULL], heads, heads, head_dim)
    own = gate.model_copy(update={"name": "self_attn.g_proj.weight", "layers": None,
                                  "component": Component.MTP})
    return mtp.model_copy(update={"moe": types[0] == "sparse", "extra": [*mtp.extra, own]})


def _text_stack(c: HFConfig) -> Stack:
    """`Step3p7TextModel`: `Step3p7Attention` (q/k/v/o biased by `attention_bias`, per-head
    q/k norms, `g_proj`; sliding layers may have their own head count through
    `per_layer_config`), `Step3p7MLP` of `intermediate_size` on dense layers, else
    `Step3p7SparseMoeBlock`: a router whose `e_score_correction_bias` is a buffer, experts of
    `moe_intermediate_size` and one shared expert of `share_expert_dim`."""
    layers = c.integer("num_hidden_layers")
    nextn = c.integer("num_nextn_predict_layers", minimum=0)
    padded = layers + nextn
    names = _trimmed(c, "layer_types", layers, padded) or ["full_attention"] * layers
    kinds = layer_types(HFConfig({"layer_types": names}, c.label)) or []
    heads, head_dim = c.integer("num_attention_heads"), c.integer("head_dim")
    sliding = _sliding_heads(c, heads)
    moe_layers = _moe_layers(c, layers, padded)
    moe = MoE(
        experts=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        shared_experts=1,
        shared_intermediate_size=c.integer("share_expert_dim"),
        layers=moe_layers,
    ) if moe_layers else None
    window: dict[str, Any] = {}
    if LayerKind.SLIDING in kinds:
        window["sliding_window"] = c.integer("sliding_window")
    overrides = [LayerOverride(kinds=[LayerKind.SLIDING], heads=sliding)] if (
        sliding != heads) else []
    bias = c.flag("attention_bias")
    fields = core(c, head_dim=head_dim, qkv_bias=bias, o_bias=bias,
                  mlp_bias=c.flag("mlp_bias"), qk_norm="head", layer_types=kinds, moe=moe,
                  extra=_gates(c, kinds, heads, sliding, head_dim), overrides=overrides,
                  mtp=_mtp(c, layers, nextn), **window)
    return Stack(**fields)


def step3p7(c: HFConfig) -> ModelSpec:
    """Step-3.7-Flash. Its hub file is flat: the text model's keys at the top level, read
    over the text class's defaults. A `Step3p7Config` with a `text_config` is read as that
    language model alone; the vision tower and projector it wraps are not counted (a note
    says so)."""
    if c.has("hidden_size") and not c.has("text_config"):
        text = over_defaults(dict(c.data), "step3p5", c.label, c.name)
        return decoder_model(text, _text_stack(text))
    _, text = sub_config(c, "text_config", "step3p5")
    note = ("the text_config is read alone: the vision tower and projector this "
            "Step3p7Config wraps are not counted")
    stack = _text_stack(text)
    return hf_model(c, Family.MOE if stack.moe else Family.DENSE, decoder=stack,
                    max_context=text.opt_integer("max_position_embeddings"), notes=[note])
