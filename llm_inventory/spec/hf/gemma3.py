"""Gemma 3 (transformers `models/gemma3`, `Gemma3Config`): a SigLIP tower, average-pooled,
projected into the Gemma 3 text model (`gemma.gemma3_text`)."""

from __future__ import annotations

import math

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, sub_config, vlm_model
from llm_inventory.spec.hf.gemma import gemma3_text
from llm_inventory.spec.hf.vision import patches, tower
from llm_inventory.spec.model import Encoder, Media, ModelSpec


def gemma3(c: HFConfig) -> ModelSpec:
    """Gemma 3: a SigLIP tower, average-pooled to `mm_tokens_per_image`, an RMSNorm and one
    projection matrix (no bias), and the Gemma 3 decoder (5 sliding : 1 full layers)."""
    vision_type, v = sub_config(c, "vision_config")
    vision = tower(vision_type, v)
    _, text = sub_config(c, "text_config", "gemma3_text")
    decoder = gemma3_text(text).decoder
    assert decoder is not None
    width, hidden = v.integer("hidden_size"), decoder.hidden_size or 0
    projector = [extra("mm_input_projection_weight", [width, hidden], linear=True),
                 extra("mm_soft_emb_norm.weight", [width])]
    tokens = c.integer("mm_tokens_per_image")
    side = math.isqrt(tokens)
    grid = patches(v)
    notes = []
    pool = grid // side if side * side == tokens and grid % side == 0 else 0
    if not pool:
        # transformers still builds the model; only a forward pass would fail.
        notes.append(f"mm_tokens_per_image ({tokens}) does not average-pool the {grid} × "
                     f"{grid} patch grid evenly; feature tokens are taken as {tokens}")
    # 896 px / 14 px = 64 × 64 patches, average-pooled 4 × 4 → 16 × 16 = 256 tokens.
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  spatial_merge_size=pool or 1, tokens_per_item=tokens)
    encoder = Encoder(kind="vision", stack=vision, media=media, projector=projector)
    tied = c.flag("tie_word_embeddings")
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes)
