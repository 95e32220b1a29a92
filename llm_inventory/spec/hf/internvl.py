"""InternVL (transformers `models/internvl`, the `-hf` checkpoints of InternVL 2.5 and 3):
the InternViT tower, a pixel-shuffle projector, and any registered decoder."""

from __future__ import annotations

import math

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, linear, norm, sub_config, text_decoder, vlm_model
from llm_inventory.spec.model import Encoder, ExtraTensor, Media, ModelSpec, Shard, Stack


def _pair(v: HFConfig, key: str) -> tuple[int, int]:
    """A size given as one integer or as [height, width] (InternVLVisionConfig's default)."""
    value = v.raw(key)
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in value):
        return int(value[0]), int(value[1])
    side = v.integer(key)
    return side, side


def _tower(v: HFConfig) -> Stack:
    """InternViT (`InternVLVisionModel`): a class token, a patch Conv2d with bias, learned
    positions (patches + 1), layers of LayerNorm (or RMSNorm, `norm_type`) before and after,
    q/k/v (biases with `attention_bias`) and an output projection with bias, optional RMS
    q/k norms over the full width (`use_qk_norm`), two layer-scale vectors (lambda_1,
    lambda_2), a plain MLP with biases; a final LayerNorm unless `use_mean_pooling`."""
    hidden = v.integer("hidden_size")
    (height, width), (ph, pw) = _pair(v, "image_size"), _pair(v, "patch_size")
    layers = v.integer("num_hidden_layers")
    stem = [extra("embeddings.cls_token", [1, 1, hidden]),
            extra("embeddings.patch_embeddings.projection.weight",
                  [hidden, v.integer("num_channels"), ph, pw]),
            extra("embeddings.patch_embeddings.projection.bias", [hidden])]
    if v.flag("use_mask_token"):
        stem.append(extra("embeddings.mask_token", [1, 1, hidden]))
    positions = (height // ph) * (width // pw) + 1
    if v.flag("use_absolute_position_embeddings"):
        stem.append(extra("embeddings.position_embeddings", [1, positions, hidden]))
    every = list(range(layers))
    stem += [extra("lambda_1", [hidden], layers=every), extra("lambda_2", [hidden], layers=every)]
    norm_type = v.raw("norm_type")
    if norm_type not in ("layer_norm", "rms_norm"):
        raise InputError(f"{v.label}: norm_type",
                         f"must be layer_norm or rms_norm, got {norm_type!r}")
    mean_pooling = v.flag("use_mean_pooling")
    if not mean_pooling:
        stem += norm("layernorm", hidden, bias=True)
    heads = v.integer("num_attention_heads")
    bias = v.flag("attention_bias")
    return Stack(
        layers=layers, hidden_size=hidden, heads=heads, head_dim=hidden // heads,
        intermediate_size=v.integer("intermediate_size"), mlp="plain", mlp_bias=True,
        qkv_bias=bias, o_bias=True, qk_norm="full" if v.flag("use_qk_norm") else "none",
        norm="layer" if norm_type == "layer_norm" else "rms", final_norm=False,
        vocab_size=0, lm_head=False, rope=False, extra=stem,
    )


def _projector(width: int, merge: int, hidden: int) -> list[ExtraTensor]:
    """LayerNorm over the m × m shuffled width, Linear → GELU → Linear, with biases."""
    shuffled = width * merge * merge
    return (norm("layer_norm", shuffled, bias=True)
            + linear("linear_1", hidden, shuffled, shard=Shard.COLUMN)
            + linear("linear_2", hidden, hidden, shard=Shard.ROW))


def internvl(c: HFConfig) -> ModelSpec:
    """InternVL: 448 px tiles of 14 px patches (32 × 32 = 1,024), pixel-shuffled by
    1 / `downsample_ratio` per side into 256 tokens per tile; an image becomes up to 12 tiles
    of the grid closest to its aspect ratio plus a thumbnail (InternVLProcessor's
    crop_to_patches defaults), each wrapped in <img> … </img>."""
    _, v = sub_config(c, "vision_config", "internvl_vision")
    decoder, text = text_decoder(c)
    ratio = c.number("downsample_ratio")
    merge = round(1 / ratio) if ratio > 0 else 0
    if merge < 1 or not math.isclose(merge * ratio, 1.0):
        raise InputError(f"{c.label}: downsample_ratio",
                         f"must be 1 / n for a whole n, got {ratio!r}")
    hidden = decoder.hidden_size or 0
    (height, width), (patch, _) = _pair(v, "image_size"), _pair(v, "patch_size")
    if height != width:
        raise InputError(f"{v.label}: image_size", f"must be square, got {height} × {width}")
    # InternVLProcessor / GotOcr2ImageProcessor defaults: 1 to 12 tiles, a thumbnail.
    media = Media(image_size=height, patch_size=patch, spatial_merge_size=merge,
                  tiling="grid", min_tiles=1, max_tiles=12, thumbnail=True)
    encoder = Encoder(kind="vision", stack=_tower(v), media=media,
                      projector=_projector(v.integer("hidden_size"), merge, hidden))
    tied = c.flag("tie_word_embeddings")
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text)
