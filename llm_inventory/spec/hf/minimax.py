"""MiniMax-M2 and M2.5 (transformers `models/minimax_m2`): every layer full attention with
q/k norms over the whole projection width and partial rotary heads, every MLP routed experts
behind a sigmoid router."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def _mtp_note(c: HFConfig) -> list[str]:
    modules = c.opt_integer("num_mtp_modules", minimum=0)
    if not modules or c.raw("use_mtp") is False:
        return []
    return [f"the config names {modules} multi-token-prediction module(s) "
            "(num_mtp_modules); transformers builds none and their shapes are not in the "
            "config, so every count here leaves them out"]


def minimax_m2(c: HFConfig) -> ModelSpec:
    """`MiniMaxM2Attention`: bias-free q/k/v/o and RMS norms of heads × head_dim (q) and
    kv_heads × head_dim (k); `rotary_dim` (the released files' spelling) over head_dim is the
    rotary fraction (`MiniMaxM2Config.convert_rope_params_to_dict`). `MiniMaxM2SparseMoeBlock`:
    `num_local_experts` experts of `intermediate_size`, a bias-free router whose
    `e_score_correction_bias` is a buffer, no shared expert. The hub files' `attn_type_list`
    (1 = softmax attention on every layer; transformers does not read it) must agree."""
    kinds = c.int_list("attn_type_list")
    if kinds is not None and set(kinds) - {1}:
        raise InputError(f"{c.label}: attn_type_list",
                         "0 (lightning attention) is not supported for minimax_m2, whose "
                         "layers are all softmax attention (1)")
    head_dim = c.integer("head_dim")
    rotary = c.opt_integer("rotary_dim")
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    fields = core(c, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="full", moe=moe,
                  partial_rotary_factor=min(1.0, rotary / head_dim) if rotary else
                  c.number("partial_rotary_factor", 1.0))
    return decoder_model(c, Stack(**fields), notes=_mtp_note(c))
