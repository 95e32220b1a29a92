"""Conditional communication a split creates, per token, in bytes of activations.

Rules:
- Tensor parallelism: two all-reduces per layer (after attention or the mixer, after the
  MLP), each of hidden × activation bytes per token; a ring all-reduce moves
  2 × (tp − 1) / tp of that through every device.
- Expert parallelism: each MoE layer dispatches a token's hidden state to the ranks owning
  its top_k experts and combines the outputs back: at most top_k × hidden × activation bytes
  each way per token (less when chosen experts share a rank or sit locally).
- Pipeline parallelism: hidden × activation bytes per token at each stage boundary.
- Encoder → language model: feature tokens × the LM's hidden × activation bytes per item.
- Prefill/decode disaggregation: the prompt's whole persistent state moves once.
"""

from __future__ import annotations

from pydantic import BaseModel

from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import bytes_for


class Communication(BaseModel):
    activation_dtype: str
    tp_allreduce_bytes_per_layer_per_token: int | None
    tp_allreduces_per_layer: int
    tp_ring_factor_note: str
    ep_dispatch_bytes_per_moe_layer_per_token: int | None
    ep_combine_bytes_per_moe_layer_per_token: int | None
    pp_handoff_bytes_per_token: int | None
    encoder_feature_bytes_per_item: int | None
    kv_transfer_bytes_per_request: int | None  # prefill/decode disaggregation


def communication(
    spec: ModelSpec,
    *,
    activation_dtype: str,
    feature_tokens: int | None,
    prompt_state_bytes: int | None,
) -> Communication:
    """Payload sizes of every collective the topology makes available."""
    stack = spec.decoder
    hidden = stack.hidden_size if stack is not None else None
    moe = stack.moe if stack is not None else None
    per_token = bytes_for(hidden, activation_dtype) if hidden else None
    top_k = moe.top_k if moe else (spec.coarse.top_k if spec.coarse else None)
    return Communication(
        activation_dtype=activation_dtype,
        tp_allreduce_bytes_per_layer_per_token=2 * per_token if per_token else None,
        tp_allreduces_per_layer=2,
        tp_ring_factor_note="a ring all-reduce moves 2 × (tp − 1) / tp of the payload "
                            "through each device",
        ep_dispatch_bytes_per_moe_layer_per_token=top_k * per_token
        if per_token and top_k else None,
        ep_combine_bytes_per_moe_layer_per_token=top_k * per_token
        if per_token and top_k else None,
        pp_handoff_bytes_per_token=per_token,
        encoder_feature_bytes_per_item=feature_tokens * per_token
        if feature_tokens and per_token else None,
        kv_transfer_bytes_per_request=prompt_state_bytes,
    )
