"""Qwen2-VL and Qwen2.5-VL (transformers `models/qwen2_vl`, `qwen2_5_vl`): a ViT over
temporal × spatial patches, a patch merger, and a Qwen2 decoder with M-RoPE."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, linear, norm, over_defaults, sub_config, vlm_model
from llm_inventory.spec.hf.qwen import qwen2
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


def _media(v: HFConfig) -> Media:
    return Media(image_size=QWEN_VL_IMAGE_SIZE, patch_size=v.integer("patch_size"),
                 temporal_patch_size=v.integer("temporal_patch_size"),
                 spatial_merge_size=v.integer("spatial_merge_size"))


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


def qwen2_5_vl(c: HFConfig) -> ModelSpec:
    """Qwen2.5-VL: as Qwen2-VL with RMSNorms, a gated MLP with biases and windowed attention
    in most vision blocks (same weights), and an RMSNorm in the merger."""
    _, v = sub_config(c, "vision_config", "qwen2_5_vl_vision")
    width = v.integer("hidden_size")
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=v.integer("intermediate_size"), mlp="gated", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="rms", final_norm=False, vocab_size=0,
        lm_head=False, extra=_stem(v, width),
    )
    projector = _merger(width, v.integer("out_hidden_size"), v.integer("spatial_merge_size"),
                        norm_bias=False)
    decoder, text = _text(c, "qwen2_5_vl_text")
    encoder = Encoder(kind="vision", stack=tower, media=_media(v), projector=projector)
    return vlm_model(c, decoder, encoder, text)
