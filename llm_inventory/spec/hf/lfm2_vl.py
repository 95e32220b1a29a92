"""LFM2-VL (transformers 5.25 `models/lfm2_vl`, `Lfm2VlForConditionalGeneration`): a SigLIP 2
NaFlex tower, a pixel-unshuffle projector and an LFM2 language model (`lfm2` builder)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import linear, norm, sub_config, text_decoder, vlm_model
from llm_inventory.spec.hf.vision import tower
from llm_inventory.spec.model import Encoder, Media, ModelSpec

# Lfm2VlImageProcessor's class defaults (transformers 5.25 models/lfm2_vl
# image_processing_lfm2_vl.py; the published LFM2-VL preprocessor configs keep them).
PROCESSOR = {"tile_size": 512, "min_tiles": 2, "max_tiles": 10, "min_image_tokens": 64,
             "max_image_tokens": 256, "max_pixels_tolerance": 2.0}


def lfm2_vl(c: HFConfig) -> ModelSpec:
    """`Lfm2VlMultiModalProjector`: the tower's features pixel-unshuffled by
    `downsample_factor` (f² × hidden channels), an optional LayerNorm over them
    (`projector_use_layernorm`), then `linear_1` to `projector_hidden_size` and `linear_2`
    to the language model's width, both biased as `projector_bias` says.

    Image tokens follow the processor at its defaults (`Lfm2VlImageProcessor`: smart_resize
    to 64 … 256 merged tokens; past twice that area, 2 … 10 tiles of 512 pixels plus the
    resized image as a thumbnail; `Lfm2VlProcessor` wraps them in start, end, tile and
    thumbnail markers). A checkpoint's preprocessor_config.json that changes them is not
    read, and the spec's notes say so."""
    vision_type, v = sub_config(c, "vision_config")
    vision = tower(vision_type, v)
    decoder, text = text_decoder(c)
    width, hidden = v.integer("hidden_size"), decoder.hidden_size or 0
    factor = c.integer("downsample_factor")
    inner, bias = c.integer("projector_hidden_size"), c.flag("projector_bias")
    channels = width * factor * factor
    projector = norm("layer_norm", channels, bias=True) if c.flag(
        "projector_use_layernorm") else []
    projector += linear("linear_1", inner, channels, bias=bias)
    projector += linear("linear_2", hidden, inner, bias=bias)
    patch = v.integer("patch_size")
    pixels = patch * patch * factor * factor  # one merged token's pixels
    media = Media(patch_size=patch, spatial_merge_size=factor, round_sides=True,
                  image_size=PROCESSOR["tile_size"], tiling="split",
                  min_tiles=PROCESSOR["min_tiles"], max_tiles=PROCESSOR["max_tiles"],
                  thumbnail=True, min_pixels=PROCESSOR["min_image_tokens"] * pixels,
                  max_pixels=PROCESSOR["max_image_tokens"] * pixels,
                  split_tolerance=PROCESSOR["max_pixels_tolerance"], tile_markers=True)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings")
    notes = ["image tokens follow Lfm2VlImageProcessor at its defaults (512-pixel tiles, "
             "2 … 10 of them past 2 × 256 tokens' area, a thumbnail, 64 … 256 tokens for one "
             "image, markers included); a preprocessor_config.json that changes them is not "
             "read"]
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes)
