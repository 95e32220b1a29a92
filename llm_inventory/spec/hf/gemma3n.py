"""Gemma 3n (transformers `models/gemma3n`, `Gemma3nConfig`): a timm MobileNetV5 vision tower,
a USM conformer audio tower, and a decoder with per-layer embeddings, AltUp (several copies
of the hidden state, one updated per layer), LAuReL low-rank residuals, KV shared across the
last layers and, with MatFormer, a width per layer."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, extra, layer_types, linear, sub_config, vlm_model
from llm_inventory.spec.hf.gemma4 import conformer, kv_shared
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    LayerKind,
    LayerOverride,
    Media,
    ModelSpec,
    Shard,
    Stack,
)


@cache
def _timm_models() -> dict[str, Any]:
    path = resources.files("llm_inventory.data").joinpath("timm-models.json")
    return dict(json.loads(path.read_text("utf-8"))["models"])


def timm_parameters(v: HFConfig) -> int:
    """Parameters of the timm model a `vision_config.architecture` names (the config holds
    no layout: timm's own definition does), from package data."""
    name = v.raw("architecture")
    known = _timm_models()
    if not isinstance(name, str) or name not in known:
        raise InputError(f"{v.label}: architecture",
                         f"unknown timm vision model {name!r}; known: {', '.join(known)}")
    if v.raw("model_args"):
        raise InputError(f"{v.label}: model_args",
                         "changes the timm model's layout, whose parameters are then unknown")
    return int(known[name]["parameters"])


def _widths(text: HFConfig, layers: int) -> list[int]:
    """`intermediate_size`: one width for every layer, or one per layer (MatFormer)."""
    value = text.raw("intermediate_size")
    if isinstance(value, list):
        if len(value) != layers or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
            raise InputError(f"{text.label}: intermediate_size",
                             f"must be one width or {layers} positive widths, got {value!r}")
        return [int(v) for v in value]
    return [text.integer("intermediate_size")] * layers


def gemma3n_text_stack(text: HFConfig) -> Stack:
    """The Gemma 3n decoder (`Gemma3nTextModel`): per layer four norms, q/k norms per head
    (v's has no scale), a gated MLP of its own width, the per-layer-input gate and projection
    with their norm, a LAuReL block (h → rank → h and a norm) and an AltUp block (an output
    scale, n × n correction and n² × n prediction coefficients, an n-way router and its
    norm); KV-shared layers have no k/v projections. Beside the layers: the per-layer
    embedding table, its projection and norm, and n − 1 AltUp projections in and out."""
    layers, hidden = text.integer("num_hidden_layers"), text.integer("hidden_size")
    kinds: list[str] = list(layer_types(text) or [
        LayerKind.FULL if (i + 1) % 5 == 0 else LayerKind.SLIDING for i in range(layers)])
    if len(kinds) != layers:
        raise InputError(f"{text.label}: layer_types",
                         f"has {len(kinds)} entries for {layers} layers")
    for index in kv_shared(text, kinds):
        kinds[index] = LayerKind.SHARED
    widths = _widths(text, layers)
    base = max(set(widths), key=widths.count)
    overrides = [LayerOverride(layers=[i for i, w in enumerate(widths) if w == width],
                               intermediate_size=width)
                 for width in sorted(set(widths)) if width != base]
    streams, rank = text.integer("altup_num_inputs"), text.integer("laurel_rank")
    ple = text.integer("hidden_size_per_layer_input")
    every = list(range(layers))
    per_layer = [
        extra("per_layer_input_gate.weight", [ple, hidden], linear=True),
        extra("per_layer_projection.weight", [hidden, ple], linear=True),
        extra("laurel.linear_left.weight", [rank, hidden], linear=True),
        extra("laurel.linear_right.weight", [hidden, rank], linear=True),
        extra("altup.correct_output_scale", [hidden]),
        extra("altup.correction_coefs.weight", [streams, streams]),
        extra("altup.prediction_coefs.weight", [streams * streams, streams]),
        extra("altup.modality_router.weight", [streams, hidden]),
    ]
    extras = [t.model_copy(update={"layers": every}) for t in per_layer]
    extras += [
        extra("embed_tokens_per_layer.weight",
              [text.integer("vocab_size_per_layer_input"), layers * ple],
              shard=Shard.VOCAB, component=Component.EMBEDDINGS),
        extra("per_layer_model_projection.weight", [layers * ple, hidden], linear=True,
              shard=Shard.COLUMN, component=Component.EMBEDDINGS),
        extra("per_layer_projection_norm.weight", [ple], component=Component.NORMS),
    ]
    for name in ("altup_projections", "altup_unembed_projections"):
        extras += [extra(f"{name}.{j}.weight", [hidden, hidden], linear=True)
                   for j in range(streams - 1)]
    window = text.integer("sliding_window")
    if text.raw("use_bidirectional_attention"):
        window = window // 2 + 1  # Gemma3nTextConfig.__post_init__, as Gemma 4's
    # Norms per layer: input, post-attention, pre- and post-feed-forward, post-per-layer-
    # input, LAuReL's and AltUp's router norm.
    # core() reads one width: the most common stands for every layer the overrides leave.
    flat = HFConfig({**text.data, "intermediate_size": base}, text.label, text.name,
                    defaults=text.defaults)
    return Stack(**core(
        flat, norms_per_layer=7, qk_norm="head", layer_types=kinds,
        sliding_window=window, extra=extras, overrides=overrides, local_rope=True,
    ))


def _audio(a: HFConfig) -> Stack:
    """The audio tower (`Gemma3nAudioEncoder`): two bias-free Conv2d of
    `sscp_conv_kernel_size` / `sscp_conv_stride_size` (each with a cumulative group norm
    scale), a linear projection of the flattened channels × frequencies, and the conformer
    layers (relative-position projection `pos_proj`)."""
    hidden = a.integer("hidden_size")
    channels = a.int_list("sscp_conv_channel_size") or []
    kernels, strides = a.raw("sscp_conv_kernel_size"), a.raw("sscp_conv_stride_size")
    if len(channels) != 2 or not _pairs(kernels) or not _pairs(strides):
        raise InputError(f"{a.label}: sscp_conv_channel_size",
                         "needs two channel counts and two (time, frequency) kernel and "
                         "stride pairs")
    freq = a.integer("input_feat_size")
    stem: list[ExtraTensor] = []
    inputs = 1
    for i in range(2):
        (kt, kf), (_, sf) = kernels[i], strides[i]
        stem += [extra(f"subsample_conv_projection.conv_{i}.conv.weight",
                       [channels[i], inputs, kt, kf]),
                 extra(f"subsample_conv_projection.conv_{i}.norm.weight", [channels[i]])]
        freq = (freq + 2 - kf) // sf + 1  # one frequency bin of padding each side
        inputs = channels[i]
    stem.append(extra("subsample_conv_projection.input_proj_linear.weight",
                      [hidden, channels[-1] * freq], linear=True))
    return conformer(hidden, a.integer("conf_num_attention_heads"),
                     a.integer("conf_num_hidden_layers"), a.integer("conf_conv_kernel_size"),
                     "attention.attn.relative_position_embedding.pos_proj", stem)


def _pairs(value: Any) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and all(
        isinstance(p, list | tuple) and len(p) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in p)
        for p in value)


def _embedder(name: str, m: HFConfig, hidden: int) -> list[ExtraTensor]:
    """`Gemma3nMultimodalEmbedder`: a table of the tower's `vocab_size` hard tokens, two
    norms (hard and soft tokens), a projection to the text width, and a scale-free norm."""
    width = m.integer("hidden_size")
    return [extra(f"{name}.embedding.weight", [m.integer("vocab_size"), width]),
            extra(f"{name}.hard_embedding_norm.weight", [width]),
            extra(f"{name}.soft_embedding_norm.weight", [width]),
            *linear(f"{name}.embedding_projection", hidden, width, bias=False,
                    shard=Shard.COLUMN)]


def gemma3n(c: HFConfig) -> ModelSpec:
    """Gemma 3n (E2B, E4B): the decoder of `gemma3n_text_stack`, the MobileNetV5 tower
    (768 px images, `vision_soft_tokens_per_image` tokens each), the audio tower, and an
    embedder for each."""
    _, text = sub_config(c, "text_config", "gemma3n_text")
    decoder = gemma3n_text_stack(text).model_copy(
        update={"tied_embeddings": c.flag("tie_word_embeddings")})
    hidden = decoder.hidden_size or 0
    _, v = sub_config(c, "vision_config", "gemma3n_vision")
    _, a = sub_config(c, "audio_config", "gemma3n_audio")
    # Gemma3nImageProcessor resizes to 768 × 768; MobileNetV5 downsamples 48× to 16 × 16.
    media = Media(image_size=768, tokens_per_item=c.integer("vision_soft_tokens_per_image"))
    vision = Encoder(kind="vision", parameters=timm_parameters(v), media=media,
                     projector=_embedder("embed_vision", v, hidden))
    audio = Encoder(kind="audio", stack=_audio(a), projector=_embedder("embed_audio", a, hidden),
                    media=Media(tokens_per_item=c.integer("audio_soft_tokens_per_image")))
    notes = [f"vision tower: timm's {v.raw('architecture')}, counted from timm's definition",
             "per-layer embeddings counted; Google's 'effective' E2B/E4B sizes leave them out"]
    shared = [i for i, k in enumerate(decoder.kinds()) if k == LayerKind.SHARED]
    if shared:
        notes.append(f"layers {shared[0]}–{shared[-1]} store no KV: each reads the last "
                     "earlier layer's of its type")
    spec = vlm_model(c, decoder, vision, text, notes)
    return spec.model_copy(update={"extra_encoders": [audio]})
