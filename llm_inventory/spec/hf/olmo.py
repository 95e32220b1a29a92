"""OLMo family (transformers `models/olmo2`, `olmo3`, `olmoe`).

OLMo 2 and 3 normalise q and k over all heads at once (`q_norm` of heads × head_dim, `k_norm`
of KV heads × head_dim) and put their two RMS norms after attention and after the MLP.
OLMo 3 adds sliding-window layers (`layer_types`; by default three sliding, then one full),
each kind with its own rotary embedding.
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, ModelSpec, MoE, Stack


def olmoe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    # OLMoE normalises q and k over all heads at once.
    return decoder_model(c, Stack(**core(c, qk_norm="full", moe=moe)))


def olmo2(c: HFConfig) -> ModelSpec:
    """OLMo 2: q/k norms over the whole projection width, post-norm layers."""
    return decoder_model(c, Stack(**core(c, qk_norm="full")))


def olmo3(c: HFConfig) -> ModelSpec:
    """OLMo 3: OLMo 2's layers, sliding-window layers by `layer_types` (Olmo3Config's
    `__post_init__`: sliding unless (i + 1) % 4 == 0)."""
    fields = core(c, qk_norm="full")
    kinds = layer_types(c) or [LayerKind.SLIDING if (i + 1) % 4 else LayerKind.FULL
                               for i in range(fields["layers"])]
    window = c.integer("sliding_window") if LayerKind.SLIDING in kinds else None
    return decoder_model(c, Stack(**fields, layer_types=kinds, sliding_window=window))
