"""Step-3.5 / Step-3.7-Flash (transformers `models/step3p7`): the text model
(`Step3p7TextConfig`, model_type step3p5) has sliding and full attention layers with per-head
q/k norms and a per-head output gate (`g_proj`), dense MLPs on the first layers, then routed
experts plus one shared expert, and multi-token-prediction layers the checkpoint appends;
Step-3.7's hub file wraps it with a vision tower and a projector (`Step3p7Config`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig, reads
from llm_inventory.spec.hf.common import (
    core,
    decoder_model,
    extra,
    layer_types,
    linear,
    over_defaults,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.hf.glm import nextn_layers
from llm_inventory.spec.model import (
    MTP,
    Component,
    Encoder,
    ExtraTensor,
    LayerKind,
    LayerOverride,
    Media,
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
        label = f"{c.label}: attention_other_setting"
        reads.note_class(label, "step3p5_attention_other", {})
        return HFConfig(other, label).integer("num_attention_heads")
    return heads


def _per_layer_heads(c: HFConfig, layers: int) -> dict[int, int]:
    """`per_layer_config` (layer index → {num_attention_heads}), which transformers writes
    from the sliding heads and reads back over them; empty when absent."""
    raw = c.raw("per_layer_config")
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise InputError(f"{c.label}: per_layer_config",
                         "must map layer indices to {num_attention_heads}")
    table = c.sub("per_layer_config")
    found = {}
    for key in raw:
        if not str(key).isdigit() or not 0 <= int(key) < layers:
            raise InputError(f"{c.label}: per_layer_config",
                             f"names layer {key!r} of {layers}")
        found[int(key)] = table.sub(str(key)).integer("num_attention_heads")
    return found


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
    given = _per_layer_heads(c, layers)
    if given:  # a saved config's own per-layer table wins (Step3p7TextConfig.__post_init__)
        overrides = [LayerOverride(layers=[i], heads=n) for i, n in sorted(given.items())]
    bias = c.flag("attention_bias")
    fields = core(c, head_dim=head_dim, qkv_bias=bias, o_bias=bias,
                  mlp_bias=c.flag("mlp_bias"), qk_norm="head", layer_types=kinds, moe=moe,
                  extra=_gates(c, kinds, heads, sliding, head_dim), overrides=overrides,
                  mtp=_mtp(c, layers, nextn), **window)
    return Stack(**fields)


def step3p5(c: HFConfig) -> ModelSpec:
    """Step-3.5-Flash's flat hub file (`model_type` step3p5, `Step3p7TextConfig` in
    transformers 5.25, which has no causal-LM class of its own for it): the text model, its
    keys over the text class's defaults."""
    return decoder_model(c, _text_stack(c))


def _vision(v: HFConfig) -> Stack:
    """`Step3p7VisionModel`: a bias-free patch conv, a learned position table of
    (image_size / patch_size)² rows, a pre-LayerNorm, encoder layers of CLIP attention
    (biased q/k/v/out, 2-D rotary without weights), a biased fc1/fc2 MLP of
    int(hidden × mlp_ratio), two LayerNorms and two per-channel layer scales (lambda_1,
    lambda_2), then two stride-2 3 × 3 convolutions with bias (hidden → 2 hidden → 4 hidden).
    `Step3p7VisionConfig.__post_init__` sets intermediate_size from mlp_ratio, over any
    given; hub files may name the shapes width / layers / heads (aliases)."""
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    v.superseded("intermediate_size")
    inner = int(hidden * v.number("mlp_ratio"))
    side = v.integer("image_size") // patch
    channels = v.integer("num_channels")
    every = list(range(v.integer("num_hidden_layers")))
    stem = [extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch]),
            extra("pre_layernorm.weight", [hidden]), extra("pre_layernorm.bias", [hidden]),
            extra("lambda_1", [hidden], layers=every), extra("lambda_2", [hidden], layers=every),
            extra("downsampler1.weight", [2 * hidden, hidden, 3, 3]),
            extra("downsampler1.bias", [2 * hidden]),
            extra("downsampler2.weight", [4 * hidden, 2 * hidden, 3, 3]),
            extra("downsampler2.bias", [4 * hidden])]
    return Stack(layers=len(every), hidden_size=hidden, heads=v.integer("num_attention_heads"),
                 intermediate_size=inner, mlp="plain", mlp_bias=True, qkv_bias=True,
                 o_bias=True, norm="layer", norms_per_layer=2, final_norm=False,
                 vocab_size=0, lm_head=False, position_embeddings=side * side, extra=stem)


def step3p7(c: HFConfig) -> ModelSpec:
    """Step-3.7-Flash (`Step3p7ForConditionalGeneration`): the hub file nests the language
    model (`text_config`, model_type step3p5, its sliding layers with their own head count
    through `attention_other_setting`) and the vision tower of `_vision`, joined by
    `multi_modal_projector`, Linear(4 × vision hidden, text hidden) with `projector_bias`.
    A flat file (the text model's keys at the top level, as some copies trim it) is read as
    the language model alone."""
    if c.has("hidden_size") and not c.has("text_config"):
        text = over_defaults(dict(c.data), "step3p5", c.label, c.name)
        return decoder_model(text, _text_stack(text))
    _, text = sub_config(c, "text_config", "step3p5")
    decoder = _text_stack(text)
    # An absent vision_config is the class's default tower (Step3p7Config builds one).
    _, v = sub_config(c, "vision_config", "step3p5_vision")
    tower = _vision(v)
    width = 4 * (tower.hidden_size or 0)
    projector = linear("multi_modal_projector", decoder.hidden_size or 0, width,
                       bias=c.flag("projector_bias"), shard=Shard.COLUMN)
    # The processor cuts images into 504-pixel crops (Step3p7ImageProcessor.patch_size);
    # each becomes (504 / (patch × 4))² tokens after the two stride-2 downsamplers.
    media = Media(image_size=504, patch_size=v.integer("patch_size"), spatial_merge_size=4)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    decoder = decoder.model_copy(update={"tied_embeddings": text.flag("tie_word_embeddings")})
    return vlm_model(c, decoder, encoder, text)
