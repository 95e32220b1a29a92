"""Kimi-K3 (`model_type` kimi_k3, `KimiK3ForConditionalGeneration`): a MoonViT-style tower, a
patch-merging projector and a Kimi Linear language model grown in four ways.

transformers 5.25 has no class for it (the checkpoint ships its own `modeling_kimi_k3.py`,
not public). Every structural fact here is read from the checkpoint's tensor listing
(moonshotai/Kimi-K3, 497,220 tensors; tests/data/configs-2026-checkpoint-listing/
README.md), which the count matches to the parameter:

- KDA layers with one full-rank output gate `g_proj` (heads × head dim × hidden) instead
  of Kimi Linear's g_a / g_b (`linear_attn_config.use_full_rank_gate`), and an `A_log`
  of head-dim entries;
- MLA layers with an output gate `g_proj` too (`mla_use_output_gate`) and no rotary
  positions applied (`mla_use_nope`: the rope dims stay in kv_a_proj and the cache);
- attention residuals: per layer `self_attention_res_norm` and `mlp_res_norm` (hidden)
  with `self_attention_res_proj` and `mlp_res_proj` (1 × hidden), and one
  `output_attn_res_norm` / `output_attn_res_proj` pair after the last layer;
- a latent MoE: routed experts of `moe_intermediate_size` working at
  `routed_expert_hidden_size`, reached through `routed_expert_up_proj` /
  `routed_expert_down_proj` with `routed_expert_norm` (`latent_moe_use_norm`), a sigmoid
  router whose `e_score_correction_bias` the checkpoint stores, and
  `num_shared_experts` × `moe_intermediate_size` shared experts at full width.

The tower: a bias-free 14 × 14 patch conv, a learned init_pos_emb_height × width grid
(`divided_fixed`: time positions are fixed), RMSNorm pre-norm blocks with a fused bias-free
wqkv of 3 × `qkv_hidden_size` and wo, a plain two-layer MLP, a final norm; the projector
(`patchmergerv2`): Linear(m × hidden, m × hidden), GELU, Linear(m × hidden, text hidden),
then an RMSNorm `post_norm`, m the merge kernel's patches, no biases.
"""

from __future__ import annotations

from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.hf import HFConfig, reads
from llm_inventory.spec.hf.common import extra, hf_model, linear, norm
from llm_inventory.spec.hf.kimi_linear import (
    _layer_types,
    _linear_config,
    _linear_int,
    _moe_layers,
)
from llm_inventory.spec.hf.quant import from_quantization_config
from llm_inventory.spec.model import (
    MLA,
    Component,
    Encoder,
    Family,
    LayerKind,
    LinearAttention,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

NOTE = ("Kimi-K3 has no transformers class: its count follows the checkpoint's tensor "
        "listing, and its KDA state Kimi Linear's rule (vLLM kda_state_shape: heads × head "
        "dim² fp32 and a 3-channel conv window), the checkpoint's own code not being public")


# The parameters are held to the checkpoint's listing; the state is not held to anything.
STATE_ASSUMED = ("Kimi-K3's KDA and MLA state per token and per sequence follow Kimi Linear's "
                 "rules (vLLM kda_state_shape), assumed: the checkpoint's own code is not "
                 "public")


def _flag(c: HFConfig, key: str, value: object) -> None:
    """A switch this builder supports at one value only (the released checkpoint's)."""
    if c.raw(key) != value:
        raise InputError(f"{c.label}: {key}", f"only {value!r} is supported (Kimi-K3's), "
                         f"got {excerpt(c.raw(key))}")


def _text(c: HFConfig) -> Stack:
    layers, hidden = c.integer("num_hidden_layers"), c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    kinds = _layer_types(c, layers)
    _linear_config(c)  # a mapping, or an error naming it
    linear_config = c.sub("linear_attn_config")
    reads.note_class(linear_config.label, "kimi_k3_linear_attn", {})
    full_rank = linear_config.flag("use_full_rank_gate", False)
    # The layer lists and shapes _layer_types and _linear_int took from the mapping.
    for key in ("full_attn_layers", "kda_layers"):
        linear_config.int_list(key)
    key_heads = _linear_int(c, "num_heads", "linear_num_heads")
    key_dim = _linear_int(c, "head_dim", "linear_head_dim")
    for key in ("num_heads", "head_dim", "short_conv_kernel_size"):
        linear_config.opt_integer(key)
    _flag(c, "mla_use_output_gate", True)
    _flag(c, "latent_moe_use_norm", True)
    _flag(c, "moe_layer_freq", 1)  # every layer from first_k_dense_replace on is MoE
    if c.integer("num_nextn_predict_layers", minimum=0):
        raise InputError(f"{c.label}: num_nextn_predict_layers",
                         "Kimi-K3's multi-token-prediction layers are not modelled (the "
                         "released checkpoint has none)")
    v_dim = c.integer("v_head_dim")
    latent = c.integer("routed_expert_hidden_size")
    moe_layers = _moe_layers(c, layers)
    every = list(range(layers))
    mla_layers = [i for i, k in enumerate(kinds) if k == LayerKind.MLA]
    x, r = Component.ATTENTION, Component.ROUTER
    extras = [
        extra("self_attention_res_proj.weight", [1, hidden], layers=every,
              component=Component.NORMS),
        extra("mlp_res_proj.weight", [1, hidden], layers=every, component=Component.NORMS),
        # The MLA layers' output gate (the KDA layers' is the kind's own g_proj).
        extra("self_attn.g_proj.weight", [heads * v_dim, hidden], linear=True,
              shard=Shard.COLUMN, layers=mla_layers, component=x),
        extra("mlp.gate.e_score_correction_bias", [c.integer("num_experts")],
              layers=moe_layers, component=r),
        extra("mlp.routed_expert_norm.weight", [latent], layers=moe_layers,
              component=Component.EXPERTS),
        extra("output_attn_res_norm.weight", [hidden], component=Component.NORMS),
        extra("output_attn_res_proj.weight", [1, hidden], component=Component.NORMS),
    ]
    # mla_use_nope: no rotary applied, the rope dims kept (kv_a_proj_with_mqa: 512 + 64).
    c.flag("mla_use_nope", True)
    return Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"), rope=False, layer_types=kinds,
        # input, post-attention, self-attention residual and MLP residual norms
        norms_per_layer=4,
        mla=MLA(kv_lora_rank=c.integer("kv_lora_rank"),
                qk_rope_head_dim=c.integer("qk_rope_head_dim"),
                qk_nope_head_dim=c.integer("qk_nope_head_dim"),
                v_head_dim=v_dim, q_lora_rank=c.opt_integer("q_lora_rank")),
        linear_attention=LinearAttention(
            key_heads=key_heads, key_head_dim=key_dim,
            conv_kernel=_linear_int(c, "short_conv_kernel_size", "linear_conv_kernel_dim"),
            state_dtype="fp32", conv_dtype=c.dtype, full_rank_gate=full_rank,
            decay_entries=key_dim if full_rank else None,
        ),
        moe=MoE(
            experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_token"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            shared_experts=c.integer("num_shared_experts", minimum=0),
            shared_intermediate_size=c.integer("moe_intermediate_size"),
            latent_size=latent, layers=moe_layers,
        ),
        extra=extras,
    )


def _tower(v: HFConfig) -> tuple[Stack, int, int]:
    """The vision tower, its patch size and the merge kernel's side."""
    _flag(v, "norm_type", "rmsnorm")
    _flag(v, "mlp_type", "mlp2")
    _flag(v, "mm_projector_type", "patchmergerv2")
    _flag(v, "pos_emb_type", "divided_fixed")
    bias = v.flag("attn_bias") or v.flag("linear_bias") or v.flag("patch_embed_proj_bias")
    if bias:
        raise InputError(f"{v.label}: attn_bias",
                         "only the bias-free tower (Kimi-K3's) is supported")
    hidden, patch = v.integer("vt_hidden_size"), v.integer("patch_size")
    heads = v.integer("vt_num_attention_heads")
    width = v.integer("qkv_hidden_size")
    if width % heads:
        raise InputError(f"{v.label}: qkv_hidden_size",
                         f"{width} does not split over {heads} heads")
    kernel = v.int_list("merge_kernel_size") or []
    if len(kernel) != 2 or kernel[0] != kernel[1] or kernel[0] < 1:
        raise InputError(f"{v.label}: merge_kernel_size",
                         f"must be two equal positive integers, got {excerpt(kernel)}")
    if v.integer("mm_hidden_size") != hidden:
        raise InputError(f"{v.label}: mm_hidden_size",
                         f"must equal vt_hidden_size ({hidden}): the projector merges the "
                         "tower's output")
    stem = [extra("patch_embed.proj.weight", [hidden, 3, patch, patch]),
            extra("patch_embed.pos_emb.weight",
                  [v.integer("init_pos_emb_height"), v.integer("init_pos_emb_width"),
                   hidden])]
    # init_pos_emb_time: time positions are a fixed sinusoid (divided_fixed), no weights.
    v.integer("init_pos_emb_time")
    tower = Stack(layers=v.integer("vt_num_hidden_layers"), hidden_size=hidden, heads=heads,
                  head_dim=width // heads, intermediate_size=v.integer("vt_intermediate_size"),
                  mlp="plain", norms_per_layer=2, final_norm=True, vocab_size=0,
                  lm_head=False, extra=stem)
    return tower, patch, kernel[0]


def kimi_k3(c: HFConfig) -> ModelSpec:
    """Kimi-K3: the language model of `_text`, the tower of `_tower`, the projector."""
    text = c.sub("text_config")
    reads.note_class(text.label, "kimi_k3_text", {})
    if text.raw("model_type") != "kimi_linear":
        raise InputError(f"{text.label}: model_type",
                         f"a kimi_k3 config wraps a kimi_linear language model, got "
                         f"{excerpt(text.raw('model_type'))}")
    decoder = _text(text).model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings")})
    v = c.sub("vision_config")
    reads.note_class(v.label, "kimi_k3_vision", {})
    tower, patch, merge = _tower(v)
    hidden = tower.hidden_size or 0
    out = decoder.hidden_size or 0
    if v.integer("text_hidden_size") != out:
        raise InputError(f"{v.label}: text_hidden_size",
                         f"must equal the language model's hidden_size ({out})")
    width = hidden * merge * merge
    projector = (linear("mm_projector.proj.0", width, width, bias=False, shard=Shard.COLUMN)
                 + linear("mm_projector.proj.2", out, width, bias=False, shard=Shard.ROW)
                 + norm("mm_projector.post_norm", out, bias=False))
    side = v.integer("init_pos_emb_height") * patch
    media = Media(image_size=side, patch_size=patch, spatial_merge_size=merge)
    encoder = Encoder(kind="vision", stack=tower, media=media, projector=projector)
    context = text.opt_integer("max_position_embeddings")
    spec = hf_model(c, Family.VLM, decoder=decoder, encoder=encoder, max_context=context,
                    notes=[NOTE])
    spec = spec.model_copy(update={"state_estimated": STATE_ASSUMED})
    if spec.quantization is None and text.raw("quantization_config") is not None:
        # Kimi-K3 keeps its quantization_config (MXFP4 experts) in text_config.
        quant = from_quantization_config(text.raw("quantization_config"), text.label,
                                         spec.dtype)
        if quant is not None:
            # The checkpoint stores routed_expert_up_proj / _down_proj (the latent
            # projections) in bf16, though its ignore list does not name them (its tensor
            # listing); they are fc1/fc2_latent_proj here.
            quant = quant.model_copy(update={
                "ignore": [*quant.ignore, r"re:.*mlp\.fc[12]_latent_proj.*"]})
        spec = spec.model_copy(update={"quantization": quant})
    return spec
