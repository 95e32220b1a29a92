"""DeepSeek-V2 and V3 (transformers `models/deepseek_v2`, `deepseek_v3`): multi-head latent
attention (MLA), routed plus shared experts after `first_k_dense_replace` dense layers."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default
from llm_inventory.spec.model import MLA, ModelSpec, MoE, Stack


def _moe(c: HFConfig, notes: list[str]) -> MoE | None:
    """The routed experts; an explicit null n_routed_experts makes every MLP dense."""
    routed = present_or_default(c, "n_routed_experts")
    if not routed:
        return None
    top_k = present_or_default(c, "num_experts_per_tok")
    if top_k is None:  # unset, and DeepseekV2Config has no default
        top_k = 6
        notes.append("num_experts_per_tok is not set; active parameters assume 6 experts "
                     "per token (DeepSeek-V2's routing)")
    shared = present_or_default(c, "n_shared_experts", minimum=0) or 0
    expert_size = c.integer("moe_intermediate_size")
    return MoE(
        experts=routed,
        top_k=top_k,
        expert_intermediate_size=expert_size,
        shared_experts=shared,
        shared_intermediate_size=expert_size if shared else 0,
        first_dense=present_or_default(c, "first_k_dense_replace", minimum=0) or 0,
        # Neither class has moe_layer_freq any more; old files set it, 1 (every layer) if not.
        every=c.integer("moe_layer_freq", 1),
    )


def _deepseek(c: HFConfig) -> ModelSpec:
    heads = c.integer("num_attention_heads")
    mla = MLA(
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
        # An explicit null q_lora_rank is a full-rank q_proj (DeepSeek-V2-Lite).
        q_lora_rank=present_or_default(c, "q_lora_rank"),
    )
    notes: list[str] = []
    moe = _moe(c, notes)
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=c.integer("hidden_size"),
        heads=heads,
        kv_heads=heads,
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
        v_head_dim=mla.v_head_dim,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        qkv_bias=c.flag("attention_bias"),
        o_bias=c.flag("attention_bias"),
        mla=mla,
        moe=moe,
    )
    # DeepseekV2Config has no multi-token-prediction layers; an explicit null has none.
    if present_or_default(c, "num_nextn_predict_layers", minimum=0):
        notes.append(
            f"the checkpoint also carries {c.raw('num_nextn_predict_layers')} multi-token-"
            "prediction layer(s), which transformers does not instantiate and this count "
            "leaves out"
        )
    return decoder_model(c, stack, notes=notes)


def deepseek_v2(c: HFConfig) -> ModelSpec:
    return _deepseek(c)


def deepseek_v3(c: HFConfig) -> ModelSpec:
    return _deepseek(c)
