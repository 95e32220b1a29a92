"""Llama 3.2 Vision (transformers `models/mllama`): a tiled ViT and a Llama decoder with
gated cross-attention layers."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, extra, linear, norm, sub_config, vlm_model
from llm_inventory.spec.hf.vision import patches, vit
from llm_inventory.spec.model import Component, Encoder, LayerKind, Media, ModelSpec, Stack


def _vision(v: HFConfig) -> Stack:
    """The tiled ViT: local layers, then gated global layers; gated position and tile
    embeddings per aspect ratio."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    local, global_ = v.integer("num_hidden_layers"), v.integer("num_global_layers", minimum=0)
    tiles = v.integer("max_num_tiles")
    ratios = v.raw("supported_aspect_ratios")
    if not isinstance(ratios, list) or not ratios:
        raise InputError(f"{v.label}: supported_aspect_ratios",
                         f"must be a non-empty list of [w, h] pairs, got {ratios!r}")
    positions = patches(v) ** 2 + 1  # patches + the class token, per tile
    aspect_rows = len(ratios) + 1  # one embedding row per aspect ratio id, plus padding
    stem = [
        extra("patch_embedding.weight", [hidden, channels, patch, patch]),
        extra("class_embedding", [hidden]),
        extra("gated_positional_embedding.gate", [1]),
        extra("gated_positional_embedding.embedding", [positions, hidden]),
        extra("gated_positional_embedding.tile_embedding.weight",
              [aspect_rows, tiles * positions * hidden]),
    ]
    for where in ("pre", "post"):
        stem += [extra(f"{where}_tile_positional_embedding.embedding.weight",
                       [aspect_rows, tiles * hidden]),
                 extra(f"{where}_tile_positional_embedding.gate", [1])]
    stem += norm("layernorm_pre", hidden, bias=True)
    # The global layers follow the local ones; only they carry tanh gates.
    gated = list(range(local, local + global_))
    if gated:
        stem += [extra("layers.{i}.gate_attn", [1], layers=gated),
                 extra("layers.{i}.gate_ffn", [1], layers=gated)]
    # Vision MLPs keep their biases although attention has none.
    return vit(v, layers=local + global_, heads_key="attention_heads", attn_bias=False,
               extra=stem)


def _decoder(text: HFConfig) -> Stack:
    """A Llama decoder whose `cross_attention_layers` attend to the image features."""
    heads = text.integer("num_attention_heads")
    layers = text.integer("num_hidden_layers")
    listed = text.int_list("cross_attention_layers")
    if listed is None:  # an explicit null also takes the default
        listed = list(text.raw("cross_attention_layers"))
    cross = sorted(set(listed))
    if any(i >= layers for i in cross):
        raise InputError(f"{text.label}: cross_attention_layers",
                         f"lists a layer past the {layers} decoder layers")
    fields = core(text, head_dim=text.integer("hidden_size") // heads, qkv_bias=False,
                  o_bias=False, mlp_bias=False, tied_embeddings=False,
                  partial_rotary_factor=1.0)
    vocab = fields["vocab_size"]
    gates = []
    if cross:
        gates = [extra("layers.{i}.cross_attn_attn_gate", [1], layers=cross,
                       component=Component.ATTENTION),
                 extra("layers.{i}.cross_attn_mlp_gate", [1], layers=cross,
                       component=Component.MLP)]
    return Stack(
        **fields,
        # The input table has 8 rows beyond vocab_size (the image token among them).
        embedding_rows=vocab + 8,
        layer_types=[LayerKind.CROSS if i in cross else LayerKind.FULL for i in range(layers)],
        cross_qk_norm=True,
        extra=gates,
    )


def mllama(c: HFConfig) -> ModelSpec:
    """Llama 3.2 Vision: a tiled ViT (local + gated global layers, gated position and tile
    embeddings), a linear projector, and a Llama decoder with gated cross-attention layers."""
    _, v = sub_config(c, "vision_config", "mllama_vision_model")
    tower = _vision(v)
    _, text = sub_config(c, "text_config", "mllama_text_model")
    decoder = _decoder(text)
    projector = linear("multi_modal_projector", decoder.hidden_size or 0,
                       v.integer("vision_output_dim"))
    # Every image is padded to max_num_tiles tiles of (image / patch)² + 1 positions, and
    # the cross-attention layers keep K and V over all of them: 4 × 1,601 = 6,404 at 560 px.
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  class_token=True, max_tiles=v.integer("max_num_tiles"))
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    notes = ["image features reach the decoder through cross-attention layers only; the "
             "prompt holds one <|image|> token per image"]
    return vlm_model(c, decoder, encoder, text, notes)
