"""MiniMax-M3 with its vision tower (transformers 5.25 `models/minimax_m3_vl`,
`MiniMaxM3SparseForConditionalGeneration`): the MiniMax-M3 language model (`minimax.py`), a
Qwen2.5-VL-style patch embedding feeding CLIP encoder layers, and a two-stage projector."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, linear, sub_config, vlm_model
from llm_inventory.spec.hf.minimax import minimax_m3
from llm_inventory.spec.model import Encoder, Media, ModelSpec, Shard, Stack


def _tower(v: HFConfig) -> Stack:
    """`MiniMaxM3VLVisionModel`: a bias-free Conv3d patch embedding over temporal_patch_size
    × patch² pixels of num_channels, a pre-LayerNorm (`pre_layrnorm`), then CLIP layers
    (biased q/k/v/out_proj, a biased fc1/fc2 MLP, two LayerNorms) with 2-D rotary positions
    that hold no weights; no final norm."""
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    stem = [extra("embeddings.proj.weight",
                  [hidden, v.integer("num_channels"), v.integer("temporal_patch_size"), patch,
                   patch]),
            extra("pre_layrnorm.weight", [hidden]), extra("pre_layrnorm.bias", [hidden])]
    return Stack(layers=v.integer("num_hidden_layers"), hidden_size=hidden,
                 heads=v.integer("num_attention_heads"),
                 intermediate_size=v.integer("intermediate_size"), mlp="plain", mlp_bias=True,
                 qkv_bias=True, o_bias=True, norm="layer", norms_per_layer=2, final_norm=False,
                 vocab_size=0, lm_head=False, extra=stem)


def minimax_m3_vl(c: HFConfig) -> ModelSpec:
    """MiniMax-M3 VL: `MiniMaxM3VLMultiModalProjector` maps each patch through
    Linear(vision hidden, projector_hidden_size), GELU, Linear(→ text hidden), then groups
    spatial_merge_size² of them and fuses them through Linear(text hidden × m²,
    projector_hidden_size), GELU, Linear(→ text hidden); every Linear biased."""
    _, text = sub_config(c, "text_config", "minimax_m3_vl_text")
    language = minimax_m3(text)
    decoder = language.decoder
    assert decoder is not None
    _, v = sub_config(c, "vision_config", "minimax_m3_vl_vision")
    tower = _tower(v)
    merge = v.integer("spatial_merge_size")
    if merge < 1:
        raise InputError(f"{v.label}: spatial_merge_size", "must be a positive integer")
    # MiniMaxM3VLConfig.__post_init__ sets merged_hidden_size to text hidden × m² itself.
    c.superseded("merged_hidden_size")
    width, out = c.integer("projector_hidden_size"), decoder.hidden_size or 0
    projector = (linear("multi_modal_projector.linear_1", width, tower.hidden_size or 0,
                        shard=Shard.COLUMN)
                 + linear("multi_modal_projector.linear_2", out, width, shard=Shard.ROW)
                 + linear("multi_modal_projector.merge_linear_1", width, out * merge * merge,
                          shard=Shard.COLUMN)
                 + linear("multi_modal_projector.merge_linear_2", out, width, shard=Shard.ROW))
    media = Media(image_size=v.integer("image_size"), patch_size=v.integer("patch_size"),
                  temporal_patch_size=v.integer("temporal_patch_size"),
                  spatial_merge_size=merge, round_sides=True)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    # MiniMaxM3VLConfig ties the head when the text config does (its __post_init__).
    tied = c.flag("tie_word_embeddings") or text.flag("tie_word_embeddings")
    decoder = decoder.model_copy(update={"tied_embeddings": tied})
    return vlm_model(c, decoder, encoder, text, notes=language.notes)
