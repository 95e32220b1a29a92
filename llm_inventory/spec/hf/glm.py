"""GLM-4.5, 4.6 and 4.7 (transformers `models/glm4_moe`): GQA with q/k/v biases and
half-rotary heads, `first_k_dense_replace` dense layers, then routed experts behind a sigmoid
router plus shared experts, and the checkpoint's multi-token-prediction layers."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, extra, rope_scaling
from llm_inventory.spec.model import MTP, Component, ModelSpec, MoE, Shard, Stack


def nextn_layers(c: HFConfig, count: int, *, embedding: bool = True,
                 kind: str | None = None) -> MTP | None:
    """`count` DeepSeek-style next-token-prediction layers (None for none), each a decoder
    layer (of `kind`, else the last layer's) with the MoE MLP plus what feeds it: the
    embedding and hidden norms (`enorm`, `hnorm`), the 2h → h `eh_proj`, and its own head
    (`shared_head.head`, after `shared_head.norm`) and, with `embedding`, its own copy of the
    embedding, as checkpoints store them (vLLM `glm4_moe_mtp.py`,
    `Glm4MoeMultiTokenPredictorLayer` and `_rewrite_spec_layer_name`).
    """
    if not count:
        return None
    hidden, vocab = c.integer("hidden_size"), c.integer("vocab_size")
    tensors = [
        extra("enorm.weight", [hidden], component=Component.MTP),
        extra("hnorm.weight", [hidden], component=Component.MTP),
        extra("eh_proj.weight", [hidden, 2 * hidden], linear=True, component=Component.MTP),
        extra("shared_head.norm.weight", [hidden], component=Component.MTP),
        extra("shared_head.head.weight", [vocab, hidden], shard=Shard.VOCAB,
              component=Component.MTP),
    ]
    if embedding:
        tensors.append(extra("embed_tokens.weight", [vocab, hidden], shard=Shard.VOCAB,
                             component=Component.MTP))
    return MTP(layers=count, kind=kind, moe=True, extra=tensors)


def glm4_moe(c: HFConfig) -> ModelSpec:
    """`Glm4MoeDecoderLayer`: a dense `Glm4MoeMLP` below `first_k_dense_replace`, else
    `Glm4MoeMoE` (router weight; its `e_score_correction_bias` is a buffer; experts of
    `moe_intermediate_size`; one shared MLP of n_shared_experts × moe_intermediate_size).
    q/k/v carry `attention_bias`, o_proj never; per-head q/k norms with `use_qk_norm`."""
    expert = c.integer("moe_intermediate_size")
    shared = c.integer("n_shared_experts", minimum=0)
    moe = MoE(
        experts=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_experts=shared,
        shared_intermediate_size=expert if shared else 0,
        first_dense=c.integer("first_k_dense_replace", minimum=0),
    )
    fields = core(c, qkv_bias=c.flag("attention_bias"), o_bias=False,
                  qk_norm="head" if c.flag("use_qk_norm") else "none",
                  partial_rotary_factor=c.number("partial_rotary_factor"), moe=moe,
                  mtp=nextn_layers(c, c.integer("num_nextn_predict_layers", minimum=0)))
    return decoder_model(c, Stack(**fields))


def solar_open(c: HFConfig) -> ModelSpec:
    """Solar Open (transformers `models/solar_open`): GLM-4.5's MoE block in every layer
    (`SolarOpenDecoderLayer` always builds `SolarOpenMoE`, a `Glm4MoeMoE`: router weight,
    its `e_score_correction_bias` a buffer, `n_routed_experts` experts of
    `moe_intermediate_size`, one shared MLP of n_shared_experts × moe_intermediate_size)
    under Llama attention (`SolarOpenAttention`: q/k/v carry `attention_bias`, o_proj
    never; no q/k norms). `SolarOpenConfig` deletes GLM's `intermediate_size`,
    `first_k_dense_replace`, `use_qk_norm` and MTP fields, so a file's copies of them
    build nothing (irrelevant.py)."""
    expert = c.integer("moe_intermediate_size")
    shared = c.integer("n_shared_experts", minimum=0)
    moe = MoE(
        experts=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_experts=1 if shared else 0,
        shared_intermediate_size=expert * shared,
    )
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    return decoder_model(c, Stack(
        layers=c.integer("num_hidden_layers"), hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads), intermediate_size=0,
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=c.flag("attention_bias"), o_bias=False,
        partial_rotary_factor=c.number("partial_rotary_factor", 1.0),
        rope_scaling=rope_scaling(c), moe=moe))


def _rotary_share(c: HFConfig) -> float:
    """partial_rotary_factor: the file's key, else inside rope_parameters (where
    transformers 5 keeps it; `GlmRotaryEmbedding` reads it there), else full."""
    if c.has("partial_rotary_factor"):
        return c.number("partial_rotary_factor")
    rope = c.raw("rope_parameters")
    value = rope.get("partial_rotary_factor") if isinstance(rope, dict) else None
    return float(value) if isinstance(value, int | float) and 0 < value <= 1 else 1.0


def _glm_dense(c: HFConfig, norms: int) -> ModelSpec:
    return decoder_model(c, Stack(**core(
        c, qkv_bias=c.flag("attention_bias"), o_bias=False, mlp_bias=False,
        norms_per_layer=norms, partial_rotary_factor=_rotary_share(c))))


def glm(c: HFConfig) -> ModelSpec:
    """GLM-4 (transformers `models/glm`): q/k/v with `attention_bias`, o_proj never
    (`GlmAttention`), a fused gate_up MLP without biases (`GlmMLP`, the same tensors as a
    gated MLP), two norms per layer, partial rotary."""
    return _glm_dense(c, 2)


def glm4(c: HFConfig) -> ModelSpec:
    """GLM-4-0414 (transformers `models/glm4`): GLM-4's layers with norms after attention
    and after the MLP as well (`Glm4DecoderLayer`: four norms)."""
    return _glm_dense(c, 4)
