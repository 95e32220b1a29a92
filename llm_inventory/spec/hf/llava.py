"""LLaVA (transformers `models/llava`): a CLIP (or SigLIP, Pixtral) tower, a two-layer MLP
projector, and any registered decoder as its language model."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import sub_config, text_decoder, vlm_model
from llm_inventory.spec.hf.vision import feature_layers, mlp_projector, tower
from llm_inventory.spec.model import Encoder, Media, ModelSpec


def llava(c: HFConfig) -> ModelSpec:
    """LLaVA: a CLIP (or SigLIP, Pixtral) tower, a two-layer MLP projector, any decoder.

    Every vision layer is instantiated even though features are read at
    `vision_feature_layer` (-2 by default); the projector's input concatenates one hidden
    state per listed feature layer.
    """
    vision_type, v = sub_config(c, "vision_config")
    vision = tower(vision_type, v)
    decoder, text = text_decoder(c)
    hidden = decoder.hidden_size or 0
    projector = mlp_projector(v.integer("hidden_size") * feature_layers(c), hidden,
                              bias=c.flag("multimodal_projector_bias"))
    tied = c.flag("tie_word_embeddings") or decoder.tied_embeddings
    # The "default" feature strategy drops CLIP's CLS token before the projector, so
    # LLaVA-1.5 at 336 px / 14 px sends 24 × 24 = 576 tokens; "full" keeps it (577).
    keeps_cls = vision_type == "clip_vision_model" and c.raw(
        "vision_feature_select_strategy") == "full"
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  class_token=keeps_cls)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text)
