"""Qwen3-Next and Qwen3.5 (transformers `models/qwen3_next`, `qwen3_5`, `qwen3_5_moe`):
Gated DeltaNet linear attention in three layers of four, gated full attention in the
fourth, MoE or dense MLPs, multi-token-prediction layers, and (Qwen3.5) a vision tower."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    decoder_model,
    extra,
    linear,
    norm,
    rope_scaling,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.hf.qwen_vl import QWEN_VL_IMAGE_SIZE
from llm_inventory.spec.model import (
    MTP,
    Encoder,
    ExtraTensor,
    LayerKind,
    LinearAttention,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)
from llm_inventory.units import normalize_dtype

_KINDS = {"linear_attention": LayerKind.GDN, "full_attention": LayerKind.FULL}


def hybrid_layers(c: HFConfig, layers: int) -> list[str]:
    """`layer_types`, else linear attention with every `full_attention_interval`-th layer
    full (the configuration classes' `__post_init__`, default 4: the interval is read, and
    only builds the list when `layer_types` is absent)."""
    interval = c.integer("full_attention_interval", 4)
    names = c.str_list("layer_types")
    if names is None:
        names = ["linear_attention" if (i + 1) % interval else "full_attention"
                 for i in range(layers)]
    if len(names) != layers:
        raise InputError(f"{c.label}: layer_types",
                         f"has {len(names)} entries for {layers} layers")
    unknown = sorted(set(names) - set(_KINDS))
    if unknown:
        raise InputError(f"{c.label}: layer_types", f"unknown layer type {unknown[0]!r}; "
                         "known: " + ", ".join(_KINDS))
    return [_KINDS[name] for name in names]


def partial_rotary(c: HFConfig) -> float:
    """partial_rotary_factor: the file's key, else inside rope_parameters (where
    transformers 5 keeps it), else the classes' 0.25 (`__post_init__`)."""
    if c.has("partial_rotary_factor"):
        return c.number("partial_rotary_factor")
    rope = c.raw("rope_parameters") or c.raw("rope_scaling")
    value = rope.get("partial_rotary_factor") if isinstance(rope, dict) else None
    if isinstance(value, int | float) and 0 < value <= 1:
        return float(value)
    return 0.25


def state_dtype(c: HFConfig, key: str) -> str | None:
    """A state dtype the config names (`"float32"` → fp32), None when it names none."""
    value = c.raw(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{c.label}: {key}", f"must be a dtype name, got {value!r}")
    return normalize_dtype(value, f"{c.label}: {key}")


def _mtp(c: HFConfig, key: str, hidden: int, moe: bool, fallback: int | None) -> MTP | None:
    """The MTP block checkpoints hold (`mtp.*`: fc over [embedding; hidden], its two input
    norms and a final norm, then full-attention decoder layers; vLLM `Qwen3NextMTP`,
    vllm/model_executor/models/qwen3_next_mtp.py, and `Qwen3_5MTP`). Qwen3.5's
    `mtp_use_dedicated_embeddings` gives the block its own embedding table; false (every
    released config), it looks tokens up in the model's."""
    # Qwen3.5's classes do not know the key: none when absent; Qwen3-Next's vLLM default.
    layers = c.integer(key, 0 if fallback is None else fallback, minimum=0)
    if not layers:
        return None
    tensors = [
        extra("fc.weight", [hidden, 2 * hidden], linear=True),
        extra("pre_fc_norm_embedding.weight", [hidden]),
        extra("pre_fc_norm_hidden.weight", [hidden]),
        extra("norm.weight", [hidden]),
    ]
    if c.flag("mtp_use_dedicated_embeddings", False):
        tensors.append(extra("embed_tokens.weight", [c.integer("vocab_size"), hidden]))
    return MTP(layers=layers, kind=LayerKind.FULL, moe=moe, extra=tensors)


def _text(c: HFConfig, *, fused: bool, mtp_key: str, mtp_fallback: int | None) -> Stack:
    """The decoder every variant shares: Qwen3-style attention with per-head q/k norms, the
    q projection doubled for its sigmoid output gate where `attn_output_gate` (default
    true) asks for it, as vLLM builds it (`Qwen3NextAttention`; transformers builds the gate
    whatever the key says, and every released config sets it), partial rotary; Gated
    DeltaNet elsewhere; MoE layers with one gated shared expert where the config has
    experts."""
    hidden = c.integer("hidden_size")
    layers = c.integer("num_hidden_layers")
    heads = c.integer("num_attention_heads")
    experts = c.integer("num_experts", 0, minimum=0)
    moe = None
    if experts:
        # Qwen3-Next: MoE unless listed in mlp_only_layers or off the decoder_sparse_step
        # grid; Qwen3.5-MoE has neither key and every layer is MoE.
        step = c.integer("decoder_sparse_step", 1)
        dense = set(c.int_list("mlp_only_layers") or [])
        moe = MoE(
            experts=experts, top_k=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            shared_experts=1,
            shared_intermediate_size=c.integer("shared_expert_intermediate_size"),
            shared_expert_gate=True,
            layers=[i for i in range(layers) if i not in dense and (i + 1) % step == 0],
        )
    dtype = c.dtype
    bias = c.flag("attention_bias")
    return Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"), head_dim=c.integer("head_dim"),
        # Every dense MLP's width; Qwen3.5-MoE's class has none (all its MLPs are MoE).
        intermediate_size=c.integer("intermediate_size", 0 if experts else None, minimum=0),
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=bias, o_bias=bias, qk_norm="head",
        attn_output_gate=c.flag("attn_output_gate", True),
        partial_rotary_factor=partial_rotary(c), rope_scaling=rope_scaling(c),
        layer_types=hybrid_layers(c, layers),
        linear_attention=gated_delta_net(c, dtype, fused),
        moe=moe,
        mtp=_mtp(c, mtp_key, hidden, moe is not None, mtp_fallback),
    )


def qwen3_next(c: HFConfig) -> ModelSpec:
    """Qwen3-Next: fused GDN projections (in_proj_qkvz, in_proj_ba), MoE layers with a
    gated shared expert (`Qwen3NextSparseMoeBlock`)."""
    mtp_key = "num_nextn_predict_layers"
    stack = _text(c, fused=True, mtp_key=mtp_key, mtp_fallback=1)
    notes = []
    if not c.has("mamba_ssm_dtype"):
        notes.append("the config names no mamba_ssm_dtype: the Gated DeltaNet state is sized "
                     "in the model dtype, as vLLM keeps it (mamba_ssm_cache_dtype auto); "
                     "transformers and SGLang keep it in fp32, twice the bytes")
    if not c.has(mtp_key):
        notes.append("multi-token prediction: the config names no MTP layer count; the "
                     "checkpoint holds one (mtp.*), as vLLM's Qwen3NextMTP builds by default "
                     "(num_nextn_predict_layers 1)")
    return decoder_model(c, stack, notes=notes)


def qwen3_5_text(c: HFConfig) -> ModelSpec:
    """Qwen3.5's language model: GDN projections kept apart (in_proj_qkv, in_proj_z,
    in_proj_b, in_proj_a), dense MLPs."""
    return decoder_model(c, _text(c, fused=False, mtp_key="mtp_num_hidden_layers",
                                  mtp_fallback=None))


def qwen3_5_moe_text(c: HFConfig) -> ModelSpec:
    """Qwen3.5-MoE's language model: as Qwen3.5's, every MLP a MoE with a gated shared
    expert (`Qwen3_5MoeSparseMoeBlock`)."""
    return qwen3_5_text(c)


def _vision(c: HFConfig, vision_type: str) -> Encoder:
    """Qwen3.5's vision tower (`Qwen3_5VisionModel`): a Conv3d patch embedding with bias, a
    learned position table, ViT blocks with LayerNorms, fused qkv and a plain MLP, all with
    biases; the patch merger (LayerNorm, then an MLP over m × m merged patches)."""
    _, v = sub_config(c, "vision_config", vision_type)
    width, patch = v.integer("hidden_size"), v.integer("patch_size")
    merge, temporal = v.integer("spatial_merge_size"), v.integer("temporal_patch_size")
    stem: list[ExtraTensor] = [
        extra("patch_embed.proj.weight", [width, v.integer("in_channels"), temporal, patch,
                                          patch]),
        extra("patch_embed.proj.bias", [width]),
        extra("pos_embed.weight", [v.integer("num_position_embeddings"), width]),
    ]
    tower = Stack(
        layers=v.integer("depth"), hidden_size=width, heads=v.integer("num_heads"),
        intermediate_size=v.integer("intermediate_size"), mlp="plain", mlp_bias=True,
        qkv_bias=True, o_bias=True, norm="layer", final_norm=False, vocab_size=0,
        lm_head=False, extra=stem,
    )
    merged = width * merge * merge
    projector = (norm("merger.norm", width, bias=True)
                 + linear("merger.linear_fc1", merged, merged, shard=Shard.COLUMN)
                 + linear("merger.linear_fc2", v.integer("out_hidden_size"), merged,
                          shard=Shard.ROW))
    media = Media(image_size=QWEN_VL_IMAGE_SIZE, patch_size=patch,
                  temporal_patch_size=temporal, spatial_merge_size=merge)
    return Encoder(kind="vision", stack=tower, media=media, projector=projector)


def _composite(c: HFConfig, text_type: str, vision_type: str) -> ModelSpec:
    _, text = sub_config(c, "text_config", text_type)
    decoder = qwen3_5_text(text).decoder
    assert decoder is not None
    # The head is the composite's: its own tie_word_embeddings decides.
    decoder = decoder.model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings")})
    return vlm_model(c, decoder, _vision(c, vision_type), text)


def qwen3_5(c: HFConfig) -> ModelSpec:
    """Qwen3.5 (dense): a Qwen3.5 text model and the vision tower."""
    return _composite(c, "qwen3_5_text", "qwen3_5_vision")


def qwen3_5_moe(c: HFConfig) -> ModelSpec:
    """Qwen3.5-MoE: a Qwen3.5-MoE text model and the vision tower."""
    return _composite(c, "qwen3_5_moe_text", "qwen3_5_moe_vision")


def gated_delta_net(c: HFConfig, dtype: str, fused: bool) -> LinearAttention:
    """The Gated DeltaNet layers of the `linear_*` keys (Qwen3-Next, Qwen3.5, Qwen4-Exp):
    the recurrent state in mamba_ssm_dtype where the config names it (vLLM
    `Qwen3_5ForConditionalGenerationConfig`), otherwise vLLM's mamba_ssm_cache_dtype "auto",
    the model dtype; the conv window always in the model dtype."""
    return LinearAttention(
        key_heads=c.integer("linear_num_key_heads"),
        value_heads=c.integer("linear_num_value_heads"),
        key_head_dim=c.integer("linear_key_head_dim"),
        value_head_dim=c.integer("linear_value_head_dim"),
        conv_kernel=c.integer("linear_conv_kernel_dim"),
        fused_projections=fused,
        state_dtype=state_dtype(c, "mamba_ssm_dtype") or dtype, conv_dtype=dtype,
    )
