"""LongCat-Flash (transformers `models/longcat_flash`, `LongcatFlashForCausalLM`).

Each of its `num_layers` decoder layers holds two MLA blocks, two dense MLPs and one MoE
whose output joins after the second block (the "shortcut" MoE, `LongcatFlashDecoderLayer`).
The stack here has one layer per MLA block (2 × num_layers, as transformers numbers their
caches): layer 2i carries the MoE with the first dense MLP as its always-on part (a
shared expert of ffn_hidden_size), layer 2i + 1 the second dense MLP, so parameters, the
cache (one MLA latent per block) and FLOPs are transformers' own. The router scores the
routed experts plus `zero_expert_num` identity experts that cost nothing, so active
parameters are a range.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, rope_scaling
from llm_inventory.spec.model import MLA, ModelSpec, MoE, Stack


def longcat_flash(c: HFConfig) -> ModelSpec:
    """LongCat-Flash: `LongcatFlashMLA` is DeepSeek-V3's MLA (always a query LoRA);
    `LongcatFlashExperts` allocates gate_up_proj rows for the zero experts too
    (n_routed + zero_expert_num), which no checkpoint holds: counted apart."""
    if c.has("num_layers") or not c.has("num_hidden_layers"):
        blocks = c.integer("num_layers")
    else:  # LongcatFlashConfig's setter: num_hidden_layers is twice num_layers
        blocks = c.integer("num_hidden_layers") // 2
    mla = MLA(kv_lora_rank=c.integer("kv_lora_rank"),
              qk_rope_head_dim=c.integer("qk_rope_head_dim"),
              qk_nope_head_dim=c.integer("qk_nope_head_dim"),
              v_head_dim=c.integer("v_head_dim"), q_lora_rank=c.integer("q_lora_rank"))
    qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    if c.has("qk_head_dim") and c.integer("qk_head_dim") != qk:
        raise InputError(f"{c.label}: qk_head_dim", f"must be qk_nope_head_dim + "
                         f"qk_rope_head_dim ({qk}) for this model type")
    heads, dense = c.integer("num_attention_heads"), c.integer("ffn_hidden_size")
    zero = c.integer("zero_expert_num", minimum=0)
    moe = MoE(experts=c.integer("n_routed_experts"), top_k=c.integer("moe_topk"),
              expert_intermediate_size=c.integer("expert_ffn_hidden_size"),
              router_bias=c.flag("router_bias", False), shared_experts=1,
              shared_intermediate_size=dense, every=2, zero_experts=zero,
              reference_zero_rows=bool(zero))
    bias = c.flag("attention_bias")
    stack = Stack(layers=2 * blocks, hidden_size=c.integer("hidden_size"), heads=heads,
                  kv_heads=heads, head_dim=qk, v_head_dim=mla.v_head_dim,
                  intermediate_size=dense, vocab_size=c.integer("vocab_size"),
                  tied_embeddings=c.flag("tie_word_embeddings"), qkv_bias=bias, o_bias=bias,
                  mla=mla, moe=moe, rope_scaling=rope_scaling(c))
    notes = [f"{blocks} decoder layers of two MLA blocks each, counted as {2 * blocks} "
             "layers (one per block); the MoE sits on the even ones"]
    if zero:
        notes.append(f"{zero} of the router's {moe.experts + zero} experts are "
                     "zero-computation (identity) experts: active parameters are a range")
    if c.has("num_nextn_predict_layers") and c.integer("num_nextn_predict_layers",
                                                        minimum=0):
        notes.append("the checkpoint also holds multi-token-prediction layers, which "
                     "transformers does not build; their shape is not modelled here")
    return decoder_model(c, stack, notes=notes)
