"""A model's MoE layer, reduced to what routing needs: experts, top-k, hidden, expert bytes."""

from __future__ import annotations

from pydantic import BaseModel

from llm_inventory.engine.tensors import model_tensors
from llm_inventory.engine.weights import group_bytes
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import dtype_bits, normalize_dtype


class MoEShape(BaseModel):
    experts: int
    top_k: int
    hidden: int | None
    expert_bytes: int | None  # one routed expert in one MoE layer, as the checkpoint stores it
    moe_layers: int


def moe_shape(spec: ModelSpec) -> MoEShape:
    """Experts, top-k, hidden size, bytes of one expert in one layer, and MoE layer count.

    Raises InputError for a model without experts.
    """
    stack = spec.decoder
    moe = stack.moe if stack is not None else None
    if moe is not None and stack is not None:
        groups = [g for g in model_tensors(spec) if g.experts]
        dtype = normalize_dtype(spec.dtype)
        first = groups[0].layers[0] if groups and groups[0].layers else None
        per_layer = sum(group_bytes(g.model_copy(update={"layers": (first,)}), dtype,
                                    spec.quantization)
                        for g in groups if first in g.layers)
        layers = len({layer for g in groups for layer in g.layers})
        return MoEShape(experts=moe.experts, top_k=moe.top_k, hidden=stack.hidden_size,
                        expert_bytes=per_layer // moe.experts if per_layer else None,
                        moe_layers=max(1, layers))
    coarse = spec.coarse
    if coarse is not None and coarse.experts and coarse.top_k:
        expert_bytes = None
        if coarse.expert_parameters:
            expert_bytes = coarse.expert_parameters * dtype_bits(spec.dtype) // 8
        return MoEShape(experts=coarse.experts, top_k=coarse.top_k,
                        hidden=stack.hidden_size if stack is not None else None,
                        expert_bytes=expert_bytes, moe_layers=1)
    raise InputError("model", f"{spec.name} is a {spec.family} model with no routed experts")
