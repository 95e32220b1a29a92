"""Qwen2-VL, Qwen2.5-VL and Qwen3-VL (transformers `models/qwen2_vl`, `qwen2_5_vl`,
`qwen3_vl`, `qwen3_vl_moe`): a ViT over temporal × spatial patches, a patch merger, and a
Qwen2 (Qwen3, Qwen3-MoE) decoder with M-RoPE."""

from __future__ import annotations

from llm_inventory.spec.hf import Builder, HFConfig
from llm_inventory.spec.hf.common import extra, linear, norm, over_defaults, sub_config, vlm_model
from llm_inventory.spec.hf.qwen import qwen2, qwen3, qwen3_moe
from llm_inventory.spec.model import Encoder, ExtraTensor, Media, ModelSpec, Shard, Stack

# Qwen2-VL's dynamic resolution has no fixed input size; 448 × 448 (256 tokens after the
# 2 × 2 merge) stands for a typical image. Its processor accepts up to 1,003,520 pixels
# (1,280 tokens); give the size for others.
QWEN_VL_IMAGE_SIZE = 448


def _text(c: HFConfig, text_type: str) -> tuple[Stack, HFConfig]:
    """The decoder: `text_config`, or (older files) the top-level keys, read by Qwen2's
    builder over the VL text class's defaults."""
    if c.has("text_config"):
        _, text = sub_config(c, "text_config", text_type, reads_as="qwen2")
    else:
        text = over_defaults(dict(c.data), text_type, c.label, c.name, reads_as="qwen2")
    decoder = qwen2(text).decoder
    assert decoder is not None
    heads = text.integer("num_attention_heads")
    # Older files kept tie_word_embeddings in text_config; either place ties the head.
    tied = c.flag("tie_word_embeddings") or (
        c.has("text_config") and text.flag("tie_word_embeddings"))
    return decoder.model_copy(update={
        "head_dim": text.integer("hidden_size") // heads, "tied_embeddings": tied,
    }), text


def _media(v: HFConfig, *, round_sides: bool = False) -> Media:
    return Media(image_size=QWEN_VL_IMAGE_SIZE, patch_size=v.integer("patch_size"),
                 temporal_patch_size=v.integer("temporal_patch_size"),
                 spatial_merge_size=v.integer("spatial_merge_size"), round_sides=round_sides)


def _stem(v: HFConfig, width: int) -> list[ExtraTensor]:
    """The Conv3d patch embedding: (temporal × patch × patch) voxels, no bias."""
    patch = v.integer("patch_size")
    return [extra("patch_embed.proj.weight",
                  [width, v.integer("in_channels"), v.integer("temporal_patch_size"), patch,
                   patch])]


def _merger(width: int, out: int, merge: int, *, norm_bias: bool) -> list[ExtraTensor]:
    """The patch merger: norm, then an MLP over m × m concatenated patches."""
    merged = width * merge * merge
    return (norm("merger.ln_q", width, bias=norm_bias)
            + linear("merger.mlp.0", merged, merged, shard=Shard.COLUMN)
            + linear("merger.mlp.2", out, merged, shard=Shard.ROW))


def qwen2_vl(c: HFConfig) -> ModelSpec:
    """Qwen2-VL: a ViT with LayerNorms and a plain MLP (embed_dim × mlp_ratio), 2-D rotary,
    a LayerNorm + MLP merger over 2 × 2 patches, and a Qwen2 decoder with M-RoPE."""
    _, v = sub_config(c, "vision_config", "qwen2_vl_vision")
    width = v.integer("embed_dim")
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=int(width * v.number("mlp_ratio")), mlp="plain", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="layer", final_norm=False, vocab_size=0,
        lm_head=False, extra=_stem(v, width),
    )
    projector = _merger(width, v.integer("hidden_size"), v.integer("spatial_merge_size"),
                        norm_bias=True)
    decoder, text = _text(c, "qwen2_vl_text")
    encoder = Encoder(kind="vision", stack=tower, media=_media(v), projector=projector)
    return vlm_model(c, decoder, encoder, text)


def qwen2_5_vl_tower(v: HFConfig, *, round_sides: bool = False) -> Encoder:
    """The Qwen2.5-VL vision tower (also Qwen2.5-Omni's): as Qwen2-VL's with RMSNorms, a
    gated MLP with biases and windowed attention in most blocks (same weights), and an
    RMSNorm in the merger."""
    width = v.integer("hidden_size")
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=v.integer("intermediate_size"), mlp="gated", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="rms", final_norm=False, vocab_size=0,
        lm_head=False, extra=_stem(v, width),
    )
    projector = _merger(width, v.integer("out_hidden_size"), v.integer("spatial_merge_size"),
                        norm_bias=False)
    return Encoder(kind="vision", stack=tower, media=_media(v, round_sides=round_sides),
                   projector=projector)


def qwen2_5_vl(c: HFConfig) -> ModelSpec:
    """Qwen2.5-VL: the Qwen2.5-VL tower and a Qwen2 decoder."""
    _, v = sub_config(c, "vision_config", "qwen2_5_vl_vision")
    decoder, text = _text(c, "qwen2_5_vl_text")
    return vlm_model(c, decoder, qwen2_5_vl_tower(v), text)


def qwen3_vl_tower(v: HFConfig) -> tuple[Stack, list[ExtraTensor]]:
    """The Qwen3-VL vision tower and its mergers (`Qwen3VLVisionModel`): a Conv3d patch
    embedding with bias, a learned position table (`num_position_embeddings` rows), LayerNorm
    blocks with a fused qkv and a plain MLP, all with biases; the final merger (LayerNorm over
    one patch, then Linear(h·m², h·m²) → GELU → Linear(h·m², out)) and one DeepStack merger
    per `deepstack_visual_indexes` entry, normed after the m × m shuffle (LayerNorm(h·m²))."""
    width, patch = v.integer("hidden_size"), v.integer("patch_size")
    stem = [extra("patch_embed.proj.weight", [width, v.integer("in_channels"),
                                              v.integer("temporal_patch_size"), patch, patch]),
            extra("patch_embed.proj.bias", [width])]
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=v.integer("intermediate_size"), mlp="plain", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="layer", final_norm=False, vocab_size=0,
        lm_head=False, position_embeddings=v.integer("num_position_embeddings"), extra=stem,
    )
    merge, out = v.integer("spatial_merge_size"), v.integer("out_hidden_size")
    merged = width * merge * merge
    projector = _merger(width, out, merge, norm_bias=True)
    for j in range(len(v.int_list("deepstack_visual_indexes") or [])):
        name = f"deepstack_merger_list.{j}"
        projector += (norm(f"{name}.norm", merged, bias=True)
                      + linear(f"{name}.linear_fc1", merged, merged, shard=Shard.COLUMN)
                      + linear(f"{name}.linear_fc2", out, merged, shard=Shard.ROW))
    return tower, projector


def _qwen3_vl(c: HFConfig, kind: str, reads_as: str, text_builder: Builder) -> ModelSpec:
    _, v = sub_config(c, "vision_config", f"{kind}_vision")
    tower, projector = qwen3_vl_tower(v)
    _, text = sub_config(c, "text_config", f"{kind}_text", reads_as=reads_as)
    decoder = text_builder(text).decoder
    assert decoder is not None
    # The composite's own tie_word_embeddings decides (PreTrainedModel.tie_weights reads the
    # top-level config); the text class's default does not reach it.
    decoder = decoder.model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings")})
    # 448 × 448 at 16 px: 28 × 28 patches, merged 2 × 2 → 196 tokens; other sizes are
    # rounded to multiples of 32 px first, as the processor's smart_resize does.
    encoder = Encoder(kind="vision", stack=tower, media=_media(v, round_sides=True),
                      projector=projector)
    # DeepStack adds the merged features of these vision layers to the first decoder
    # layers' hidden states at the image positions: weights, but no positions of their own.
    depth = v.int_list("deepstack_visual_indexes")
    notes = [f"DeepStack: vision layers {depth} feed the first {len(depth)} decoder layers "
             "(no extra positions)"] if depth else []
    return vlm_model(c, decoder, encoder, text, notes)


def qwen3_vl(c: HFConfig) -> ModelSpec:
    """Qwen3-VL: the Qwen3-VL tower (16 px patches, 2 × 2 merge, DeepStack mergers) and a
    Qwen3 decoder (q/k RMS norms per head)."""
    return _qwen3_vl(c, "qwen3_vl", "qwen3", qwen3)


def qwen3_vl_moe(c: HFConfig) -> ModelSpec:
    """Qwen3-VL-MoE: the same tower and a Qwen3-MoE decoder (`mlp_only_layers`,
    `decoder_sparse_step`)."""
    return _qwen3_vl(c, "qwen3_vl_moe", "qwen3_moe", qwen3_moe)
