"""Vision towers the composite models share (CLIP, SigLIP, Pixtral) and their helpers.

A tower is an encoder `Stack` with no vocabulary; its stem (patch convolution, class and
position embeddings, pre-norms, pooling head) goes in its `extra` list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, linear, norm
from llm_inventory.spec.model import ExtraTensor, Shard, Stack


def mlp_projector(inp: int, hidden: int, *, bias: bool) -> list[ExtraTensor]:
    """The two-layer MLP most projectors are: Linear(in, hidden) → act → Linear(hidden, hidden)."""
    return (linear("linear_1", hidden, inp, bias=bias, shard=Shard.COLUMN)
            + linear("linear_2", hidden, hidden, bias=bias, shard=Shard.ROW))


def feature_layers(c: HFConfig) -> int:
    """How many vision layers' outputs the projector concatenates (`vision_feature_layer`)."""
    value = c.raw("vision_feature_layer")
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InputError(f"{c.label}: vision_feature_layer",
                             f"must be a layer index or a list of them, got {value!r}")
        return len(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{c.label}: vision_feature_layer",
                         f"must be a layer index or a list of them, got {value!r}")
    return 1


def vit(v: HFConfig, *, layers: int | None = None, mlp: Literal["gated", "plain"] = "plain",
        bias: bool = True, attn_bias: bool | None = None,
        norm: Literal["rms", "layer"] = "layer", final_norm: bool = True, rope: bool = False,
        heads_key: str = "num_attention_heads", position_embeddings: int = 0,
        extra: list[ExtraTensor] | None = None, head_dim: int | None = None) -> Stack:
    """A vision transformer's layers: multi-head attention (head_dim = hidden / heads unless
    given)."""
    hidden = v.integer("hidden_size")
    heads = v.integer(heads_key)
    return Stack(
        layers=layers or v.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        head_dim=head_dim or hidden // heads,
        intermediate_size=v.integer("intermediate_size"),
        mlp=mlp,
        mlp_bias=bias,
        qkv_bias=bias if attn_bias is None else attn_bias,
        o_bias=bias if attn_bias is None else attn_bias,
        norm=norm,
        final_norm=final_norm,
        vocab_size=0,
        lm_head=False,
        rope=rope,
        position_embeddings=position_embeddings,
        extra=extra or [],
    )


def patches(v: HFConfig) -> int:
    """Patches per side of the configured square image."""
    return v.integer("image_size") // v.integer("patch_size")


def _clip(v: HFConfig) -> Stack:
    """CLIP vision: CLS + patch conv (no bias), learned positions, pre-LN, post-LN."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [extra("embeddings.class_embedding", [hidden]),
            extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch])]
    stem += norm("pre_layrnorm", hidden, bias=True)
    return vit(v, position_embeddings=patches(v) ** 2 + 1, extra=stem)


def _siglip(v: HFConfig) -> Stack:
    """SigLIP vision: patch conv with bias, learned positions, post-LN, optional pooling head."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch]),
            extra("embeddings.patch_embedding.bias", [hidden])]
    if v.flag("vision_use_head"):
        stem += _siglip_head(v, hidden)
    return vit(v, position_embeddings=patches(v) ** 2, extra=stem)


def _siglip_head(v: HFConfig, hidden: int) -> list[ExtraTensor]:
    """SigLIP's attention-pooling head (`SiglipMultiheadAttentionPoolingHead`)."""
    inner = v.integer("intermediate_size")
    head = [extra("head.probe", [1, 1, hidden]),
            extra("head.attention.in_proj_weight", [3 * hidden, hidden], linear=True),
            extra("head.attention.in_proj_bias", [3 * hidden])]
    head += linear("head.attention.out_proj", hidden, hidden)
    head += norm("head.layernorm", hidden, bias=True)
    head += linear("head.mlp.fc1", inner, hidden)
    head += linear("head.mlp.fc2", hidden, inner)
    return head


def _siglip2(v: HFConfig) -> Stack:
    """SigLIP 2 (NaFlex) vision, transformers `models/siglip2`: SigLIP's tower with a linear
    patch embedding (channels × patch² → hidden, with bias) over variable-size patches and
    `num_patches` learned positions (resized to each image's grid)."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [extra("embeddings.patch_embedding.weight", [hidden, channels * patch * patch],
                  linear=True),
            extra("embeddings.patch_embedding.bias", [hidden])]
    head = _siglip_head(v, hidden) if v.flag("vision_use_head") else []
    return vit(v, position_embeddings=v.integer("num_patches"), extra=stem + head)


def _pixtral(v: HFConfig) -> Stack:
    """Pixtral: patch conv (no bias) + RMS pre-norm, gated MLP, no biases, 2-D rotary."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    stem = [extra("patch_conv.weight", [hidden, channels, patch, patch]),
            extra("ln_pre.weight", [hidden])]
    # PixtralVisionConfig: head_dim, else hidden ÷ heads.
    return vit(v, mlp="gated", bias=False, norm="rms", final_norm=False, rope=True,
               extra=stem, head_dim=v.integer("head_dim", hidden // v.integer(
                   "num_attention_heads")))


TOWERS: dict[str, Callable[[HFConfig], Stack]] = {
    "clip_vision_model": _clip, "siglip_vision_model": _siglip,
    "siglip2_vision_model": _siglip2, "pixtral": _pixtral}


def tower(model_type: str, v: HFConfig) -> Stack:
    """The vision tower of a `vision_config` of this model type."""
    build = TOWERS.get(model_type)
    if build is None:
        raise InputError(f"{v.label}: model_type", f"unsupported vision tower {model_type!r}; "
                         f"supported: {', '.join(TOWERS)}")
    return build(v)
