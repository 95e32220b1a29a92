"""Llama 4 (transformers `models/llama4`): a ViT over 336 px tiles with pixel shuffle and
an adapter, and an MoE decoder interleaving chunked-attention and NoPE full-attention layers."""

from __future__ import annotations

import math

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    core,
    extra,
    layer_types,
    linear,
    norm,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.hf.vision import patches, vit
from llm_inventory.spec.model import Encoder, LayerKind, Media, ModelSpec, MoE, Stack


def _decoder(text: HFConfig) -> Stack:
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


def _vision(v: HFConfig) -> Stack:
    """The ViT: class token, learned positions, a linear patch embedding, and the
    pixel-shuffle adapter's MLP."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [extra("class_embedding", [hidden]),
            extra("positional_embedding_vlm", [patches(v) ** 2 + 1, hidden]),
            extra("patch_embedding.linear.weight", [hidden, channels * patch * patch],
                  linear=True)]
    stem += norm("layernorm_pre", hidden, bias=True)
    # The pixel-shuffle adapter's MLP reads intermediate_size-wide features (the shuffled
    # width equals it in every released config) and has no biases.
    stem += linear("vision_adapter.mlp.fc1", v.integer("projector_input_dim"),
                   v.integer("intermediate_size"), bias=False)
    out = v.integer("projector_output_dim")
    stem += linear("vision_adapter.mlp.fc2", out, out, bias=False)
    return vit(v, extra=stem, rope=True)


def llama4(c: HFConfig) -> ModelSpec:
    """Llama 4 (Scout, Maverick): a ViT over 336 px tiles with a class token, pixel shuffle
    and a two-layer adapter, a linear projector, and the MoE decoder."""
    _, v = sub_config(c, "vision_config", "llama4_vision_model")
    tower = _vision(v)
    _, text = sub_config(c, "text_config", "llama4_text")
    decoder = _decoder(text)
    projector = linear("multi_modal_projector.linear_1", decoder.hidden_size or 0,
                       v.integer("vision_output_dim"), bias=False)
    ratio = v.number("pixel_shuffle_ratio")
    merge = round(1 / ratio) if ratio > 0 else 0
    if merge < 1 or not math.isclose(merge * ratio, 1.0):
        raise InputError(f"{v.label}: pixel_shuffle_ratio",
                         f"must be 1 / n for a whole n, got {ratio!r}")
    # One 336 px tile: 24 × 24 patches (the class token is dropped before the shuffle),
    # shuffled 2 × 2 → 144 tokens. Larger images add tiles plus a global thumbnail.
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  spatial_merge_size=merge)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    notes = [f"an image larger than one {media.image_size} px tile becomes up to 16 tiles "
             "plus a global thumbnail tile, each as many tokens as one tile: count it as that "
             "many images"]
    return vlm_model(c, decoder, encoder, text, notes)
