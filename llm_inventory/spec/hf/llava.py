"""LLaVA, LLaVA-NeXT and LLaVA-OneVision (transformers `models/llava`, `llava_next`,
`llava_onevision`): a CLIP (or SigLIP, Pixtral) tower, a two-layer MLP projector, and any
registered decoder as its language model."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, sub_config, text_decoder, vlm_model
from llm_inventory.spec.hf.vision import feature_layers, mlp_projector, tower
from llm_inventory.spec.model import Component, Encoder, ExtraTensor, Media, ModelSpec, Stack


def _parts(c: HFConfig) -> tuple[HFConfig, Stack, Stack, HFConfig, list[ExtraTensor], bool]:
    """(vision config, tower, decoder, text config, projector, whether the class token
    reaches the language model) of a LLaVA-family config.

    Every vision layer is instantiated even though features are read at
    `vision_feature_layer` (-2 by default); the projector's input concatenates one hidden
    state per listed feature layer. The "default" feature strategy drops CLIP's CLS token
    before the projector, so LLaVA-1.5 at 336 px / 14 px sends 24 × 24 = 576 tokens; "full"
    keeps it (577).
    """
    vision_type, v = sub_config(c, "vision_config")
    decoder, text = text_decoder(c)
    projector = mlp_projector(v.integer("hidden_size") * feature_layers(c),
                              decoder.hidden_size or 0,
                              bias=c.flag("multimodal_projector_bias"))
    keeps_cls = vision_type == "clip_vision_model" and c.raw(
        "vision_feature_select_strategy") == "full"
    return v, tower(vision_type, v), decoder, text, projector, keeps_cls


def llava(c: HFConfig) -> ModelSpec:
    """LLaVA: a CLIP (or SigLIP, Pixtral) tower, a two-layer MLP projector, any decoder."""
    v, vision, decoder, text, projector, keeps_cls = _parts(c)
    tied = c.flag("tie_word_embeddings") or decoder.tied_embeddings
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  class_token=keeps_cls)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text)


def _anyres(c: HFConfig, *, onevision: bool) -> ModelSpec:
    """LLaVA-NeXT and LLaVA-OneVision: LLaVA's tower and two-layer projector, plus the
    learned `image_newline` vector (`text_config.hidden_size`) that closes each row of the
    high-resolution grid."""
    v, vision, decoder, text, projector, keeps_cls = _parts(c)
    projector.append(extra("image_newline", [decoder.hidden_size or 0],
                           component=Component.PROJECTOR))
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  class_token=keeps_cls, tiling="anyres",
                  grid_pinpoints=_pinpoints(c), newline_token=True,
                  anyres_max_tiles=_anyres_max(c) if onevision else None)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings")
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text)


def _pinpoints(c: HFConfig) -> list[tuple[int, int]]:
    value = c.raw("image_grid_pinpoints")
    if not isinstance(value, list) or not value or not all(
            isinstance(p, list | tuple) and len(p) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in p)
            for p in value):
        raise InputError(f"{c.label}: image_grid_pinpoints",
                         f"must be a list of [height, width] pixel pairs, got {value!r}")
    return [(int(p[0]), int(p[1])) for p in value]


def _anyres_max(c: HFConfig) -> int | None:
    """`vision_aspect_ratio` "anyres_max_N": the grid's features are pooled down when they
    exceed N base images' worth (LlavaOnevisionModel.pack_image_features)."""
    value = str(c.raw("vision_aspect_ratio") or "")
    if value.startswith("anyres_max_") and value.removeprefix("anyres_max_").isdigit():
        return int(value.removeprefix("anyres_max_"))
    return None


def llava_next(c: HFConfig) -> ModelSpec:
    """LLaVA-NeXT (LLaVA 1.6): anyres tiling over `image_grid_pinpoints`."""
    return _anyres(c, onevision=False)


def llava_onevision(c: HFConfig) -> ModelSpec:
    """LLaVA-OneVision: a SigLIP tower, anyres tiling pooled to `anyres_max_9`."""
    return _anyres(c, onevision=True)
