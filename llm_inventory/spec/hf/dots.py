"""dots.llm1 (transformers `models/dots1`): per-head q/k norms, `first_k_dense_replace`
dense layers, then routed experts (a router whose `e_score_correction_bias` is a buffer)
plus shared experts, and sliding attention from layer `max_window_layers` on."""

from __future__ import annotations

from typing import Any

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types, present_or_default
from llm_inventory.spec.model import LayerKind, ModelSpec, MoE, Stack


def _sliding(c: HFConfig) -> dict[str, Any]:
    """`layer_types` as given, else sliding from layer `max_window_layers` on whenever a
    `sliding_window` is set (`Dots1Config.__post_init__`; no use_sliding_window switch)."""
    window = present_or_default(c, "sliding_window")
    kinds = layer_types(c)
    if kinds is None:
        start = c.integer("max_window_layers", minimum=0)
        kinds = [LayerKind.SLIDING if window is not None and i >= start else LayerKind.FULL
                 for i in range(c.integer("num_hidden_layers"))]
    if LayerKind.SLIDING not in kinds or window is None:
        return {}
    return {"layer_types": kinds, "sliding_window": window}


def dots1(c: HFConfig) -> ModelSpec:
    """`Dots1DecoderLayer`: `Dots1MoE` from layer `first_k_dense_replace` on (experts of
    `moe_intermediate_size`, one shared MLP of n_shared_experts × moe_intermediate_size),
    `Dots1MLP` of `intermediate_size` before; q/k/v/o all biased by `attention_bias`. The
    class leaves n_routed_experts unset; with none, every MLP is dense, as vLLM builds it
    (`vllm/model_executor/models/dots1.py`, `Dots1DecoderLayer`)."""
    notes: list[str] = []
    routed = present_or_default(c, "n_routed_experts")
    moe = None
    if routed:
        expert = c.integer("moe_intermediate_size")
        shared = present_or_default(c, "n_shared_experts", minimum=0) or 0
        moe = MoE(
            experts=routed,
            top_k=c.integer("num_experts_per_tok"),
            expert_intermediate_size=expert,
            shared_experts=shared,
            shared_intermediate_size=expert if shared else 0,
            first_dense=c.integer("first_k_dense_replace", minimum=0),
        )
    else:
        notes.append("n_routed_experts is not set: every MLP is dense")
    bias = c.flag("attention_bias")
    fields = core(c, qkv_bias=bias, o_bias=bias, mlp_bias=False, qk_norm="head", moe=moe)
    fields.update(_sliding(c))
    return decoder_model(c, Stack(**fields), notes=notes)
