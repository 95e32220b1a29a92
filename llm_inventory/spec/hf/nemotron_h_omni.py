"""Nemotron-H Omni (transformers 5.25 `models/nemotron_h_omni`): a Nemotron-H language model
fed by a RADIO vision transformer (`models/radio`) through pixel shuffle and a two-layer
projector, and by a Parakeet audio encoder (`models/parakeet`) when the file has one."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    extra,
    linear,
    norm,
    over_defaults,
    sub_config,
    text_decoder,
    vlm_model,
)
from llm_inventory.spec.hf.parakeet import parakeet_encoder
from llm_inventory.spec.model import Encoder, Media, ModelSpec, Stack


def radio_stack(v: HFConfig) -> Stack:
    """`RadioModel`: patches projected without bias (`num_channels` × patch² wide, and a
    second projection for `video_temporal_patch_size` frames packed together), a position
    table of (`max_img_size` ÷ patch)² rows, `num_cls_tokens` + `num_registers` learned
    tokens, then pre-LayerNorm blocks (q/k/v with `qkv_bias`, o with bias, a GELU MLP of
    `mlp_ratio` × hidden with biases, or a SwiGLU of two thirds of it rounded up to 8, and a
    learned scale after each branch), no final norm; its input normalisation and summary
    indices are buffers."""
    hidden, heads = v.integer("hidden_size"), v.integer("num_attention_heads")
    layers = v.integer("num_hidden_layers")
    swiglu = v.flag("use_swiglu_ffn")
    wide = int(hidden * v.number("mlp_ratio"))
    if wide <= 0:
        raise InputError(f"{v.label}: mlp_ratio", "must give the MLP at least one unit, got "
                         f"{v.number('mlp_ratio')}")
    if swiglu:  # RadioSwiGLUFFN
        wide = (int(wide * 2 / 3) + 7) // 8 * 8
    channels, patch = v.integer("num_channels"), v.integer("patch_size")
    pixels = channels * patch * patch
    side = v.integer("max_img_size") // patch
    if not side:
        raise InputError(f"{v.label}: max_img_size", f"must be at least the patch size {patch}")
    every = list(range(layers))
    stem = [extra("embeddings.patch_projection.weight", [hidden, pixels], linear=True)]
    frames = v.opt_integer("video_temporal_patch_size")
    if frames:
        stem.append(extra("embeddings.video_patch_projection.weight", [hidden, frames * pixels],
                          linear=True))
    tokens = v.integer("num_cls_tokens", minimum=0) + v.integer("num_registers", minimum=0)
    stem += [extra("embeddings.position_embedding", [side * side, hidden])]
    if tokens:
        stem.append(extra("embeddings.cls_register_token", [tokens, hidden]))
    scales = [extra("layer_scale1.lambda1", [hidden], layers=every),
              extra("layer_scale2.lambda1", [hidden], layers=every)]
    return Stack(layers=layers, hidden_size=hidden, heads=heads,
                 head_dim=v.integer("head_dim", hidden // heads), intermediate_size=wide,
                 mlp="gated" if swiglu else "plain", mlp_bias=True,
                 qkv_bias=v.flag("qkv_bias"), o_bias=True, norm="layer", final_norm=False,
                 vocab_size=0, lm_head=False, extra=stem + scales)


def nemotron_h_omni(c: HFConfig) -> ModelSpec:
    """`NemotronH_Omni_Reasoning_V3`: the Nemotron-H decoder of `text_config`; RADIO's
    features (`vision_hidden_size` wide) pixel-shuffled by 1 ÷ `downsample_ratio` on each
    side, then an RMSNorm, a Linear to `projector_hidden_size`, squared ReLU and a Linear to
    the text width (no biases); a LayerNorm before the projector when the language model
    has MTP layers (Megatron-Core builds one); and the audio encoder of `_audio`."""
    # released checkpoints keep the names of before the rename (the class's
    # `_legacy_field_names`): llm_config, sound_config and vit_hidden_size (a class alias)
    decoder, text = text_decoder(c, "llm_config" if c.has("llm_config")
                                 and not c.has("text_config") else "text_config")
    _, v = sub_config(c, "vision_config", "radio")
    frames = c.integer("video_temporal_patch_size")
    if v.opt_integer("video_temporal_patch_size") != frames:
        raise InputError(f"{c.label}: vision_config: video_temporal_patch_size",
                         f"must equal video_temporal_patch_size ({frames}), as transformers "
                         "requires")
    tower = radio_stack(v)
    width = c.integer("vision_hidden_size")
    ratio = c.number("downsample_ratio")
    if not 0 < ratio <= 1 or (1 / ratio) != int(1 / ratio):
        raise InputError(f"{c.label}: downsample_ratio",
                         f"must be 1 over a whole number, got {ratio}")
    merge = int(1 / ratio)
    shuffled = width * merge * merge
    projector = []
    if text.integer("num_nextn_predict_layers", 0, minimum=0):
        projector += norm("vision_final_layernorm", width, bias=True)
    projector += (norm("multi_modal_projector.layer_norm", shuffled, bias=False)
                  + linear("multi_modal_projector.linear_1", c.integer("projector_hidden_size"),
                           shuffled, bias=False)
                  + linear("multi_modal_projector.linear_2", decoder.hidden_size or 0,
                           c.integer("projector_hidden_size"), bias=False))
    configured = v.integer("image_size")
    side = c.opt_integer("force_image_size") or configured
    encoder = Encoder(kind="vision", stack=tower, projector=projector, media=Media(
        image_size=side, patch_size=v.integer("patch_size"), spatial_merge_size=merge))
    notes = ["image tokens: one image of the configured side; the processor's dynamic tiling "
             "is not modelled (an estimate of the encoder budget)"]
    spec = vlm_model(c, decoder, encoder, text, notes)
    audio = _audio(c, decoder.hidden_size or 0)
    return spec if audio is None else spec.model_copy(update={"extra_encoders": [audio]})


def _audio(c: HFConfig, hidden: int) -> Encoder | None:
    """The Parakeet encoder of `audio_config` (`sound_config` in released files) and its
    projector (RMSNorm, Linear to `projection_hidden_size`, squared ReLU, Linear to the text
    width, biases as `projection_bias`). `attention_bias` and `scale_input` default to
    false here, as the composite's `__post_init__` supplies them, not to the encoder class's
    true."""
    key = next((k for k in ("audio_config", "sound_config") if c.raw(k) is not None), None)
    if key is None:
        return None
    raw = dict(c.sub(key).data)
    raw.pop("model_type", None)  # released files say "parakeet", which names no config class
    a = over_defaults({"attention_bias": False, "scale_input": False, **raw},
                      "parakeet_encoder", f"{c.label}: {key}", c.name)
    width, inner = a.integer("hidden_size"), a.integer("projection_hidden_size")
    bias = a.flag("projection_bias")
    projector = (norm("embed_audio.layer_norm", width, bias=False)
                 + linear("embed_audio.linear_1", inner, width, bias=bias)
                 + linear("embed_audio.linear_2", hidden, inner, bias=bias))
    return Encoder(kind="audio", stack=parakeet_encoder(a), projector=projector)
