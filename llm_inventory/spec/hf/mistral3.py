"""Mistral 3 (transformers `models/mistral3`): a Pixtral tower, a patch merger and a
two-layer projector, and a Mistral decoder."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import linear, norm, sub_config, text_decoder, vlm_model
from llm_inventory.spec.hf.vision import feature_layers, mlp_projector, tower
from llm_inventory.spec.model import Encoder, Media, ModelSpec


def mistral3(c: HFConfig) -> ModelSpec:
    """Mistral 3 (Mistral-Small-3.1): Pixtral tower, an RMSNorm, a learned 2 × 2 patch
    merger and a two-layer projector, and a Mistral decoder.

    Mistral3Config ties the output head to the input embedding unless the file says
    otherwise (`tie_word_embeddings` defaults to true); transformers builds what the file
    says, and that is what is counted.
    """
    vision_type, v = sub_config(c, "vision_config")
    vision = tower(vision_type, v)
    decoder, text = text_decoder(c)
    width, hidden = v.integer("hidden_size"), decoder.hidden_size or 0
    merge = c.integer("spatial_merge_size")
    projector = norm("norm", width, bias=False)
    projector += linear("patch_merger.merging_layer", width, width * merge * merge,
                        bias=False)
    projector += mlp_projector(width * feature_layers(c), hidden,
                               bias=c.flag("multimodal_projector_bias"))
    tied = c.flag("tie_word_embeddings")
    notes = []
    if tied and not c.has("tie_word_embeddings"):
        notes.append("the config does not set tie_word_embeddings, so (as transformers does) "
                     "the output head is tied to the input embedding; a checkpoint that "
                     "stores a separate lm_head has vocab_size × hidden more parameters")
    # The prompt closes each row of merged patches with [IMG_BREAK] (the last with
    # [IMG_END]); an image past image_size on a side is scaled down to fit (PixtralProcessor).
    # Mistral-Small-3.1 at 1,540 px / 14 px: 110 × 110 patches, merged 2 × 2 → 55 rows of
    # 55 tokens and a break: 3,080 positions.
    side = v.integer("image_size")
    media = Media(image_size=side, patch_size=v.integer("patch_size"),
                  spatial_merge_size=merge, row_break=True, longest_edge=side)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes)
