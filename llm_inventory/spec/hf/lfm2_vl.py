"""LFM2-VL (transformers 5.25 `models/lfm2_vl`, `Lfm2VlForConditionalGeneration`): a SigLIP 2
NaFlex tower, a pixel-unshuffle projector and an LFM2 language model (`lfm2` builder)."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import linear, norm, sub_config, text_decoder, vlm_model
from llm_inventory.spec.hf.vision import tower
from llm_inventory.spec.model import Encoder, Media, ModelSpec


def lfm2_vl(c: HFConfig) -> ModelSpec:
    """`Lfm2VlMultiModalProjector`: the tower's features pixel-unshuffled by
    `downsample_factor` (f² × hidden channels), an optional LayerNorm over them
    (`projector_use_layernorm`), then `linear_1` to `projector_hidden_size` and `linear_2`
    to the language model's width, both biased as `projector_bias` says.

    The processor's image token rule (`Lfm2VlImageProcessor`: 512-pixel tiles plus a
    thumbnail for large images, min/max image tokens for small ones) is not modelled: the
    tokens an image becomes here are its patches rounded to whole merged patches, an
    estimate the spec's notes state."""
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
    media = Media(patch_size=v.integer("patch_size"), spatial_merge_size=factor,
                  round_sides=True)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings")
    notes = ["image tokens are an estimate: the patches rounded to whole "
             f"{factor} × {factor} merged patches; the processor's 512-pixel tiles, "
             "thumbnail and min/max image tokens are not applied"]
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes)
