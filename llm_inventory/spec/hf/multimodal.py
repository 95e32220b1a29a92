"""Vision-language models: a vision tower, a projector, and a language model that reads it.

Each builder reads the composite config the way transformers 5 does: a nested `text_config`
and `vision_config` fall back to their own configuration class's defaults for absent keys,
while an absent sub-config takes the composite class's defaults (for LLaVA and Mistral3
those differ, so both cases are handled). The vision tower is an encoder `Stack` with no
vocabulary; its stem (patch convolution, class and position embeddings, pre-norms, tile
embeddings, gates) goes in its `extra` list, and the projector or merger into
`Encoder.projector`. `Encoder.media` holds the default image geometry the feature-token
count follows.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import Builder, HFConfig, builders
from llm_inventory.spec.hf.decoders import core, gemma3_text, layer_types, qwen2
from llm_inventory.spec.hf.quant import from_quantization_config
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    LayerKind,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

# Defaults of the text configuration classes (transformers 5), for keys a nested
# `text_config` leaves out. Only the keys the builders read.
_TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
              "num_hidden_layers": 32, "num_attention_heads": 32,
              "max_position_embeddings": 2048},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "max_position_embeddings": 131072},
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "max_window_layers": 28, "max_position_embeddings": 32768},
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "max_position_embeddings": 131072},
    # Qwen2-VL and Qwen2.5-VL share their text defaults (a 72B-shaped decoder).
    "qwen2_vl_text": {"vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568,
                      "num_hidden_layers": 80, "num_attention_heads": 64,
                      "num_key_value_heads": 8, "max_window_layers": 80,
                      "sliding_window": 4096, "max_position_embeddings": 32768},
    "mllama_text_model": {"vocab_size": 128256, "hidden_size": 4096,
                          "intermediate_size": 14336, "num_hidden_layers": 40,
                          "num_attention_heads": 32, "num_key_value_heads": 8,
                          "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38],
                          "max_position_embeddings": 131072},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "intermediate_size_mlp": 16384, "num_hidden_layers": 48,
                    "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                    "num_local_experts": 16, "num_experts_per_tok": 1,
                    "interleave_moe_layer_step": 1, "no_rope_layer_interval": 4,
                    "attention_chunk_size": 8192, "max_position_embeddings": 131072},
}

# Defaults of the vision configuration classes.
_VISION_DEFAULTS: dict[str, dict[str, Any]] = {
    "clip_vision_model": {"hidden_size": 768, "intermediate_size": 3072,
                          "num_hidden_layers": 12, "num_attention_heads": 12,
                          "num_channels": 3, "image_size": 224, "patch_size": 32},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072,
                            "num_hidden_layers": 12, "num_attention_heads": 12,
                            "num_channels": 3, "image_size": 224, "patch_size": 16,
                            "vision_use_head": True},
    "pixtral": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                "num_attention_heads": 16, "num_channels": 3, "image_size": 1024,
                "patch_size": 16},
    "qwen2_vl": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "mlp_ratio": 4,
                 "num_heads": 16, "in_channels": 3, "patch_size": 14,
                 "spatial_merge_size": 2, "temporal_patch_size": 2},
    "qwen2_5_vl": {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420,
                   "num_heads": 16, "in_channels": 3, "patch_size": 14,
                   "spatial_merge_size": 2, "temporal_patch_size": 2,
                   "out_hidden_size": 3584},
    "mllama_vision_model": {"hidden_size": 1280, "num_hidden_layers": 32,
                            "num_global_layers": 8, "attention_heads": 16, "num_channels": 3,
                            "intermediate_size": 5120, "vision_output_dim": 7680,
                            "image_size": 448, "patch_size": 14, "max_num_tiles": 4},
    "llama4_vision_model": {"hidden_size": 768, "num_hidden_layers": 34,
                            "num_attention_heads": 16, "num_channels": 3,
                            "intermediate_size": 5632, "vision_output_dim": 7680,
                            "image_size": 448, "patch_size": 14, "pixel_shuffle_ratio": 0.5,
                            "projector_input_dim": 4096, "projector_output_dim": 4096},
}

# What LLaVA and Mistral3 build when the sub-config is absent altogether (their composite
# classes' own defaults: CLIP ViT-L/14 at 336 px; Mistral-Small-3.1's Pixtral and decoder).
_LLAVA_VISION = {"model_type": "clip_vision_model", "hidden_size": 1024,
                 "intermediate_size": 4096, "patch_size": 14, "image_size": 336,
                 "num_hidden_layers": 24, "num_attention_heads": 16}
_MISTRAL3_VISION = {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096,
                    "patch_size": 14, "image_size": 1540, "num_hidden_layers": 24,
                    "num_attention_heads": 16}
_MISTRAL3_TEXT = {"model_type": "mistral", "head_dim": 128, "hidden_size": 5120,
                  "intermediate_size": 32768, "max_position_embeddings": 131072,
                  "num_attention_heads": 32, "num_hidden_layers": 40,
                  "num_key_value_heads": 8, "sliding_window": None, "vocab_size": 131072}

# Qwen2-VL's dynamic resolution has no fixed input size; 448 × 448 (256 tokens after the
# 2 × 2 merge) stands for a typical image. Its processor accepts up to 1,003,520 pixels
# (1,280 tokens); give the size for others.
QWEN_VL_IMAGE_SIZE = 448


def _config(c: HFConfig, key: str, defaults: dict[str, Any],
            absent: dict[str, Any] | None = None,
            aliases: dict[str, str] | None = None) -> HFConfig:
    """A nested config over its class defaults (`absent` when the key is missing)."""
    if not c.has(key) and absent is not None:
        return HFConfig({**defaults, **absent}, f"{c.label}: {key}", c.name)
    sub = c.sub(key)
    data = dict(sub.data)
    # attribute_map aliases (num_attention_heads → num_heads …) stand in for the field.
    for alias, field in (aliases or {}).items():
        if field not in data and alias in data:
            data[field] = data[alias]
    return HFConfig({**defaults, **data}, sub.label, c.name)


def _typed(c: HFConfig, key: str, default_type: str, absent: dict[str, Any] | None = None,
           table: dict[str, dict[str, Any]] | None = None) -> tuple[str, HFConfig]:
    """A nested config dispatched on its own `model_type` (AutoConfig-style)."""
    if not c.has(key) and absent is not None:
        model_type = str(absent.get("model_type", default_type))
    else:
        model_type = c.sub(key).raw("model_type", default_type)
        if not isinstance(model_type, str):
            raise InputError(f"{c.label}: {key}: model_type",
                             f"must be a model type name, got {model_type!r}")
    defaults = (table or {}).get(model_type, {})
    return model_type, _config(c, key, defaults, absent)


def _extra(name: str, shape: list[int], *, linear: bool = False,
           shard: Shard = Shard.REPLICATED, layers: list[int] | None = None,
           component: Component = Component.OTHER) -> ExtraTensor:
    return ExtraTensor(name=name, shape=shape, component=component, shard=shard,
                       layers=layers, linear=linear)


def _linear(name: str, out: int, inp: int, *, bias: bool,
            shard: Shard = Shard.REPLICATED) -> list[ExtraTensor]:
    tensors = [_extra(f"{name}.weight", [out, inp], linear=True, shard=shard)]
    if bias:
        bias_shard = Shard.REPLICATED if shard is Shard.ROW else shard
        tensors.append(_extra(f"{name}.bias", [out], shard=bias_shard))
    return tensors


def _norm(name: str, width: int, *, bias: bool) -> list[ExtraTensor]:
    tensors = [_extra(f"{name}.weight", [width])]
    if bias:
        tensors.append(_extra(f"{name}.bias", [width]))
    return tensors


def _mlp_projector(inp: int, hidden: int, *, bias: bool) -> list[ExtraTensor]:
    """The two-layer MLP most projectors are: Linear(in, hidden) → act → Linear(hidden, hidden)."""
    return (_linear("linear_1", hidden, inp, bias=bias, shard=Shard.COLUMN)
            + _linear("linear_2", hidden, hidden, bias=bias, shard=Shard.ROW))


def _feature_layers(c: HFConfig) -> int:
    """How many vision layers' outputs the projector concatenates (`vision_feature_layer`)."""
    value = c.raw("vision_feature_layer", -1)
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InputError(f"{c.label}: vision_feature_layer",
                             f"must be a layer index or a list of them, got {value!r}")
        return len(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{c.label}: vision_feature_layer",
                         f"must be a layer index or a list of them, got {value!r}")
    return 1


def _vit(v: HFConfig, *, layers: int | None = None, mlp: Literal["gated", "plain"] = "plain",
         bias: bool = True, attn_bias: bool | None = None,
         norm: Literal["rms", "layer"] = "layer", final_norm: bool = True, rope: bool = False,
         heads_key: str = "num_attention_heads", position_embeddings: int = 0,
         extra: list[ExtraTensor] | None = None) -> Stack:
    """A vision transformer's layers: multi-head attention (head_dim = hidden / heads)."""
    hidden = v.integer("hidden_size")
    heads = v.integer(heads_key)
    return Stack(
        layers=layers or v.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        head_dim=hidden // heads,
        intermediate_size=v.integer("intermediate_size"),
        mlp=mlp,
        mlp_bias=bias,
        qkv_bias=bias if attn_bias is None else attn_bias,
        o_bias=bias if attn_bias is None else attn_bias,
        norm=norm,
        final_norm=final_norm,
        vocab_size=0,
        lm_head=False,
        rope=rope,
        position_embeddings=position_embeddings,
        extra=extra or [],
    )


def _patches(v: HFConfig) -> int:
    """Patches per side of the configured square image."""
    return v.integer("image_size") // v.integer("patch_size")


def _clip(v: HFConfig) -> Stack:
    """CLIP vision: CLS + patch conv (no bias), learned positions, pre-LN, post-LN."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels", 3),
                               v.integer("patch_size"))
    stem = [_extra("embeddings.class_embedding", [hidden]),
            _extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch])]
    stem += _norm("pre_layrnorm", hidden, bias=True)
    return _vit(v, position_embeddings=_patches(v) ** 2 + 1, extra=stem)


def _siglip(v: HFConfig) -> Stack:
    """SigLIP vision: patch conv with bias, learned positions, post-LN, optional pooling head."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels", 3),
                               v.integer("patch_size"))
    stem = [_extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch]),
            _extra("embeddings.patch_embedding.bias", [hidden])]
    if v.flag("vision_use_head", True):
        inner = v.integer("intermediate_size")
        stem += [_extra("head.probe", [1, 1, hidden]),
                 _extra("head.attention.in_proj_weight", [3 * hidden, hidden], linear=True),
                 _extra("head.attention.in_proj_bias", [3 * hidden])]
        stem += _linear("head.attention.out_proj", hidden, hidden, bias=True)
        stem += _norm("head.layernorm", hidden, bias=True)
        stem += _linear("head.mlp.fc1", inner, hidden, bias=True)
        stem += _linear("head.mlp.fc2", hidden, inner, bias=True)
    return _vit(v, position_embeddings=_patches(v) ** 2, extra=stem)


def _pixtral(v: HFConfig) -> Stack:
    """Pixtral: patch conv (no bias) + RMS pre-norm, gated MLP, no biases, 2-D rotary."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels", 3),
                               v.integer("patch_size"))
    stem = [_extra("patch_conv.weight", [hidden, channels, patch, patch]),
            _extra("ln_pre.weight", [hidden])]
    return _vit(v, mlp="gated", bias=False, norm="rms", final_norm=False, rope=True,
                extra=stem)


_TOWERS = {"clip_vision_model": _clip, "siglip_vision_model": _siglip, "pixtral": _pixtral}


def _tower(model_type: str, v: HFConfig) -> Stack:
    build = _TOWERS.get(model_type)
    if build is None:
        raise InputError(f"{v.label}: model_type", f"unsupported vision tower {model_type!r}; "
                         f"supported: {', '.join(_TOWERS)}")
    return build(v)


def _text(c: HFConfig, key: str, default_type: str,
          absent: dict[str, Any] | None = None) -> tuple[Stack, HFConfig]:
    """The language model of a composite config, built by its own model type's builder."""
    model_type, text = _typed(c, key, default_type, absent, _TEXT_DEFAULTS)
    builder = builders().get(model_type)
    if builder is None or model_type in BUILDERS:
        raise InputError(f"{text.label}: model_type",
                         f"unsupported language model {model_type!r} in a {c.raw('model_type')}"
                         " config")
    decoder = builder(text).decoder
    assert decoder is not None
    return decoder, text


def _vlm(c: HFConfig, decoder: Stack, encoder: Encoder, text: HFConfig,
         notes: list[str] | None = None) -> ModelSpec:
    dtype = c.dtype
    return ModelSpec(
        name=c.name or str(c.raw("model_type")),
        family=Family.VLM,
        source=f"Hugging Face config ({c.raw('model_type')}): {c.label}",
        dtype=dtype,
        decoder=decoder,
        encoder=encoder,
        quantization=from_quantization_config(c.raw("quantization_config"), c.label, dtype),
        max_context=text.opt_integer("max_position_embeddings"),
        notes=notes or [],
    )


def _qwen_text(c: HFConfig) -> tuple[Stack, HFConfig]:
    """Qwen2-VL's decoder: `text_config`, or (older files) the top-level keys."""
    defaults = _TEXT_DEFAULTS["qwen2_vl_text"]
    text = _config(c, "text_config", defaults) if c.has("text_config") else HFConfig(
        {**defaults, **c.data}, c.label, c.name)
    decoder = qwen2(text).decoder
    assert decoder is not None
    heads = text.integer("num_attention_heads")
    # Older files kept tie_word_embeddings in text_config; either place ties the head.
    tied = c.flag("tie_word_embeddings", False) or (
        c.has("text_config") and text.flag("tie_word_embeddings", False))
    return decoder.model_copy(update={
        "head_dim": text.integer("hidden_size") // heads, "tied_embeddings": tied,
    }), text


def _qwen_media(v: HFConfig) -> Media:
    return Media(image_size=QWEN_VL_IMAGE_SIZE, patch_size=v.integer("patch_size"),
                 temporal_patch_size=v.integer("temporal_patch_size"),
                 spatial_merge_size=v.integer("spatial_merge_size"))


def _qwen_stem(v: HFConfig, width: int) -> list[ExtraTensor]:
    """The Conv3d patch embedding: (temporal × patch × patch) voxels, no bias."""
    patch = v.integer("patch_size")
    return [_extra("patch_embed.proj.weight",
                   [width, v.integer("in_channels"), v.integer("temporal_patch_size"), patch,
                    patch])]


def _merger(width: int, out: int, merge: int, *, norm_bias: bool) -> list[ExtraTensor]:
    """The patch merger: norm, then an MLP over m × m concatenated patches."""
    merged = width * merge * merge
    return (_norm("merger.ln_q", width, bias=norm_bias)
            + _linear("merger.mlp.0", merged, merged, bias=True, shard=Shard.COLUMN)
            + _linear("merger.mlp.2", out, merged, bias=True, shard=Shard.ROW))


_QWEN_ALIASES = {"num_hidden_layers": "depth", "num_attention_heads": "num_heads"}


def qwen2_vl(c: HFConfig) -> ModelSpec:
    """Qwen2-VL: a ViT with LayerNorms and a plain MLP (embed_dim × mlp_ratio), 2-D rotary,
    a LayerNorm + MLP merger over 2 × 2 patches, and a Qwen2 decoder with M-RoPE."""
    v = _config(c, "vision_config", _VISION_DEFAULTS["qwen2_vl"], aliases=_QWEN_ALIASES)
    width = v.integer("embed_dim")
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=int(width * v.number("mlp_ratio", 4)), mlp="plain", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="layer", final_norm=False, vocab_size=0,
        lm_head=False, extra=_qwen_stem(v, width),
    )
    projector = _merger(width, v.integer("hidden_size"), v.integer("spatial_merge_size"),
                        norm_bias=True)
    decoder, text = _qwen_text(c)
    encoder = Encoder(kind="vision", stack=tower, media=_qwen_media(v), projector=projector)
    return _vlm(c, decoder, encoder, text)


def qwen2_5_vl(c: HFConfig) -> ModelSpec:
    """Qwen2.5-VL: as Qwen2-VL with RMSNorms, a gated MLP with biases and windowed attention
    in most vision blocks (same weights), and an RMSNorm in the merger."""
    v = _config(c, "vision_config", _VISION_DEFAULTS["qwen2_5_vl"], aliases=_QWEN_ALIASES)
    width = v.integer("hidden_size")
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=v.integer("intermediate_size"), mlp="gated", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="rms", final_norm=False, vocab_size=0,
        lm_head=False, extra=_qwen_stem(v, width),
    )
    projector = _merger(width, v.integer("out_hidden_size"), v.integer("spatial_merge_size"),
                        norm_bias=False)
    decoder, text = _qwen_text(c)
    encoder = Encoder(kind="vision", stack=tower, media=_qwen_media(v), projector=projector)
    return _vlm(c, decoder, encoder, text)


def llava(c: HFConfig) -> ModelSpec:
    """LLaVA: a CLIP (or SigLIP, Pixtral) tower, a two-layer MLP projector, any decoder.

    Every vision layer is instantiated even though features are read at
    `vision_feature_layer` (-2 by default); the projector's input concatenates one hidden
    state per listed feature layer.
    """
    vision_type, v = _typed(c, "vision_config", "clip_vision_model", _LLAVA_VISION,
                            _VISION_DEFAULTS)
    tower = _tower(vision_type, v)
    decoder, text = _text(c, "text_config", "llama")
    hidden = decoder.hidden_size or 0
    projector = _mlp_projector(v.integer("hidden_size") * _feature_layers(c), hidden,
                               bias=c.flag("multimodal_projector_bias", True))
    tied = c.flag("tie_word_embeddings", False) or decoder.tied_embeddings
    # The "default" feature strategy drops CLIP's CLS token before the projector, so
    # LLaVA-1.5 at 336 px / 14 px sends 24 × 24 = 576 tokens; "full" keeps it (577).
    keeps_cls = vision_type == "clip_vision_model" and c.raw(
        "vision_feature_select_strategy", "default") == "full"
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  class_token=keeps_cls)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    return _vlm(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text)


def gemma3(c: HFConfig) -> ModelSpec:
    """Gemma 3: a SigLIP tower, average-pooled to `mm_tokens_per_image`, an RMSNorm and one
    projection matrix (no bias), and the Gemma 3 decoder (5 sliding : 1 full layers)."""
    vision_type, v = _typed(c, "vision_config", "siglip_vision_model", None, _VISION_DEFAULTS)
    tower = _tower(vision_type, v)
    text = _config(c, "text_config", _TEXT_DEFAULTS["gemma3_text"])
    decoder = gemma3_text(text).decoder
    assert decoder is not None
    width, hidden = v.integer("hidden_size"), decoder.hidden_size or 0
    projector = [_extra("mm_input_projection_weight", [width, hidden], linear=True),
                 _extra("mm_soft_emb_norm.weight", [width])]
    tokens = c.integer("mm_tokens_per_image", 256)
    side = math.isqrt(tokens)
    patches = _patches(v)
    notes = []
    pool = patches // side if side * side == tokens and patches % side == 0 else 0
    if not pool:
        # transformers still builds the model; only a forward pass would fail.
        notes.append(f"mm_tokens_per_image ({tokens}) does not average-pool the {patches} × "
                     f"{patches} patch grid evenly; feature tokens are taken as {tokens}")
    # 896 px / 14 px = 64 × 64 patches, average-pooled 4 × 4 → 16 × 16 = 256 tokens.
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  spatial_merge_size=pool or 1, tokens_per_item=tokens)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings", True)
    return _vlm(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text, notes)


def mistral3(c: HFConfig) -> ModelSpec:
    """Mistral 3 (Mistral-Small-3.1): Pixtral tower, an RMSNorm, a learned 2 × 2 patch
    merger and a two-layer projector, and a Mistral decoder.

    Mistral3Config ties the output head to the input embedding unless the file says
    otherwise (`tie_word_embeddings` defaults to true); transformers builds what the file
    says, and that is what is counted.
    """
    vision_type, v = _typed(c, "vision_config", "pixtral", _MISTRAL3_VISION, _VISION_DEFAULTS)
    tower = _tower(vision_type, v)
    decoder, text = _text(c, "text_config", "mistral", _MISTRAL3_TEXT)
    width, hidden = v.integer("hidden_size"), decoder.hidden_size or 0
    merge = c.integer("spatial_merge_size", 2)
    projector = _norm("norm", width, bias=False)
    projector += _linear("patch_merger.merging_layer", width, width * merge * merge,
                         bias=False)
    projector += _mlp_projector(width * _feature_layers(c), hidden,
                                bias=c.flag("multimodal_projector_bias", False))
    tied = c.flag("tie_word_embeddings", True)
    notes = []
    if tied and not c.has("tie_word_embeddings"):
        notes.append("the config does not set tie_word_embeddings, so (as transformers does) "
                     "the output head is tied to the input embedding; a checkpoint that "
                     "stores a separate lm_head has vocab_size × hidden more parameters")
    notes.append("the prompt closes each row of merged patches with [IMG_BREAK] (the last "
                 "with [IMG_END]): rows × (columns + 1) prompt tokens per image")
    # Mistral-Small-3.1: 1,540 px / 14 px = 110 × 110 patches, merged 2 × 2 → 3,025 tokens.
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  spatial_merge_size=merge)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    return _vlm(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text, notes)


def mllama(c: HFConfig) -> ModelSpec:
    """Llama 3.2 Vision: a tiled ViT (local + gated global layers, gated position and tile
    embeddings), a linear projector, and a Llama decoder with gated cross-attention layers."""
    v = _config(c, "vision_config", _VISION_DEFAULTS["mllama_vision_model"],
                aliases={"num_attention_heads": "attention_heads"})
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    local, global_ = v.integer("num_hidden_layers"), v.integer("num_global_layers", minimum=0)
    tiles = v.integer("max_num_tiles")
    ratios = v.data.get("supported_aspect_ratios")
    if ratios is None:
        ratios_count = 8  # [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]
    elif isinstance(ratios, list) and ratios:
        ratios_count = len(ratios)
    else:
        raise InputError(f"{v.label}: supported_aspect_ratios",
                         f"must be a non-empty list of [w, h] pairs, got {ratios!r}")
    positions = _patches(v) ** 2 + 1  # patches + the class token, per tile
    aspect_rows = ratios_count + 1  # one embedding row per aspect ratio id, plus padding
    stem = [
        _extra("patch_embedding.weight", [hidden, channels, patch, patch]),
        _extra("class_embedding", [hidden]),
        _extra("gated_positional_embedding.gate", [1]),
        _extra("gated_positional_embedding.embedding", [positions, hidden]),
        _extra("gated_positional_embedding.tile_embedding.weight",
               [aspect_rows, tiles * positions * hidden]),
    ]
    for where in ("pre", "post"):
        stem += [_extra(f"{where}_tile_positional_embedding.embedding.weight",
                        [aspect_rows, tiles * hidden]),
                 _extra(f"{where}_tile_positional_embedding.gate", [1])]
    stem += _norm("layernorm_pre", hidden, bias=True)
    # The global layers follow the local ones; only they carry tanh gates.
    gated = list(range(local, local + global_))
    if gated:
        stem += [_extra("layers.{i}.gate_attn", [1], layers=gated),
                 _extra("layers.{i}.gate_ffn", [1], layers=gated)]
    # Vision MLPs keep their biases although attention has none.
    tower = _vit(v, layers=local + global_, heads_key="attention_heads", attn_bias=False,
                 extra=stem)

    text = _config(c, "text_config", _TEXT_DEFAULTS["mllama_text_model"])
    heads = text.integer("num_attention_heads")
    layers = text.integer("num_hidden_layers")
    listed = text.int_list("cross_attention_layers")
    if listed is None:  # an explicit null also takes the default
        listed = _TEXT_DEFAULTS["mllama_text_model"]["cross_attention_layers"]
    cross = sorted(set(listed))
    if any(i >= layers for i in cross):
        raise InputError(f"{text.label}: cross_attention_layers",
                         f"lists a layer past the {layers} decoder layers")
    fields = core(text, head_dim=text.integer("hidden_size") // heads, qkv_bias=False,
                  o_bias=False, mlp_bias=False, tied_embeddings=False,
                  partial_rotary_factor=1.0)
    vocab = fields["vocab_size"]
    extra = []
    if cross:
        extra = [_extra("layers.{i}.cross_attn_attn_gate", [1], layers=cross,
                        component=Component.ATTENTION),
                 _extra("layers.{i}.cross_attn_mlp_gate", [1], layers=cross,
                        component=Component.MLP)]
    decoder = Stack(
        **fields,
        # The input table has 8 rows beyond vocab_size (the image token among them).
        embedding_rows=vocab + 8,
        layer_types=[LayerKind.CROSS if i in cross else LayerKind.FULL for i in range(layers)],
        cross_qk_norm=True,
        extra=extra,
    )
    projector = _linear("multi_modal_projector", decoder.hidden_size or 0,
                        v.integer("vision_output_dim"), bias=True)
    # Every image is padded to max_num_tiles tiles of (image / patch)² + 1 positions, and
    # the cross-attention layers keep K and V over all of them: 4 × 1,601 = 6,404 at 560 px.
    media = Media(image_size=v.integer("image_size"), patch_size=patch, class_token=True,
                  max_tiles=tiles)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    notes = ["image features reach the decoder through cross-attention layers only; the "
             "prompt holds one <|image|> token per image"]
    return _vlm(c, decoder, encoder, text, notes)


def _llama4_decoder(text: HFConfig) -> Stack:
    """Llama 4's decoder: MoE layers (routed experts + one shared expert) every
    `interleave_moe_layer_step`, dense MLPs of `intermediate_size_mlp` elsewhere, chunked
    attention on RoPE layers and full attention on the NoPE layers (every fourth)."""
    layers = text.integer("num_hidden_layers")
    expert_size = text.integer("intermediate_size")
    moe_layers = text.int_list("moe_layers")
    if moe_layers is None:
        step = text.integer("interleave_moe_layer_step")
        moe_layers = list(range(step - 1, layers, step))
    moe = None
    if moe_layers:
        moe = MoE(
            experts=text.integer("num_local_experts"),
            top_k=text.integer("num_experts_per_tok"),
            expert_intermediate_size=expert_size,
            shared_experts=1,
            shared_intermediate_size=expert_size,
            layers=moe_layers,
        )
    chunk = text.opt_integer("attention_chunk_size")
    kinds = layer_types(text)
    if kinds is None:
        use_rope = text.int_list("no_rope_layers")  # 1 = RoPE (chunked), 0 = NoPE (full)
        if not use_rope:
            interval = text.integer("no_rope_layer_interval")
            use_rope = [int((i + 1) % interval != 0) for i in range(layers)]
        elif len(use_rope) != layers:
            raise InputError(f"{text.label}: no_rope_layers",
                             f"has {len(use_rope)} entries for {layers} layers")
        kinds = [LayerKind.CHUNKED if r else LayerKind.FULL for r in use_rope]
    if chunk is None:
        kinds = [LayerKind.FULL if k is LayerKind.CHUNKED else k for k in kinds]
    fields = core(text, intermediate_size=text.integer("intermediate_size_mlp"),
                  mlp_bias=False, partial_rotary_factor=1.0, moe=moe, layer_types=kinds,
                  chunk_size=chunk if LayerKind.CHUNKED in kinds else None)
    return Stack(**fields)


def llama4(c: HFConfig) -> ModelSpec:
    """Llama 4 (Scout, Maverick): a ViT over 336 px tiles with a class token, pixel shuffle
    and a two-layer adapter, a linear projector, and the MoE decoder."""
    v = _config(c, "vision_config", _VISION_DEFAULTS["llama4_vision_model"])
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [_extra("class_embedding", [hidden]),
            _extra("positional_embedding_vlm", [_patches(v) ** 2 + 1, hidden]),
            _extra("patch_embedding.linear.weight", [hidden, channels * patch * patch],
                   linear=True)]
    stem += _norm("layernorm_pre", hidden, bias=True)
    # The pixel-shuffle adapter's MLP reads intermediate_size-wide features (the shuffled
    # width equals it in every released config) and has no biases.
    stem += _linear("vision_adapter.mlp.fc1", v.integer("projector_input_dim"),
                    v.integer("intermediate_size"), bias=False)
    out = v.integer("projector_output_dim")
    stem += _linear("vision_adapter.mlp.fc2", out, out, bias=False)
    tower = _vit(v, extra=stem, rope=True)

    text = _config(c, "text_config", _TEXT_DEFAULTS["llama4_text"])
    decoder = _llama4_decoder(text)
    projector = _linear("multi_modal_projector.linear_1", decoder.hidden_size or 0,
                        v.integer("vision_output_dim"), bias=False)
    ratio = v.number("pixel_shuffle_ratio", 0.5)
    merge = round(1 / ratio) if ratio > 0 else 0
    if merge < 1 or not math.isclose(merge * ratio, 1.0):
        raise InputError(f"{v.label}: pixel_shuffle_ratio",
                         f"must be 1 / n for a whole n, got {ratio!r}")
    # One 336 px tile: 24 × 24 patches (the class token is dropped before the shuffle),
    # shuffled 2 × 2 → 144 tokens. Larger images add tiles plus a global thumbnail.
    media = Media(image_size=v.integer("image_size"), patch_size=patch,
                  spatial_merge_size=merge)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    notes = [f"an image larger than one {media.image_size} px tile becomes up to 16 tiles "
             "plus a global thumbnail tile, each as many tokens as one tile: count it as that "
             "many images"]
    return _vlm(c, decoder, encoder, text, notes)


BUILDERS: dict[str, Builder] = {
    "qwen2_vl": qwen2_vl,
    "qwen2_5_vl": qwen2_5_vl,
    "llava": llava,
    "mllama": mllama,
    "gemma3": gemma3,
    "mistral3": mistral3,
    "llama4": llama4,
}
