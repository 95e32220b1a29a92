"""Parameter accounting: total (resident) and active-per-token, per component, and bytes.

Counts follow what the reference implementation allocates: every tensor once (tied
embeddings once), biases, norms, routers, shared experts, encoders and projectors; buffers
such as rotary caches are not parameters. Active = total − (experts − top_k) routed experts
in every MoE layer: routers, shared experts, attention and embeddings all count as active.
"""

from __future__ import annotations

from pydantic import BaseModel

from llm_inventory.engine.dtypes import weight_dtypes
from llm_inventory.engine.tensors import TensorGroup, model_tensors, mtp_tensors
from llm_inventory.engine.weights import group_bytes
from llm_inventory.spec.model import Component, ModelSpec, Quantization
from llm_inventory.units import dtype_bits, normalize_dtype


class ComponentCount(BaseModel):
    component: Component
    parameters: int
    active: int
    weight_bytes: int


class ParameterCount(BaseModel):
    """Parameters and the bytes a checkpoint holds for them."""

    total: int
    active: int
    input_embedding: int
    lm_head: int
    active_excluding_input_embedding: int
    by_component: list[ComponentCount]
    experts: int | None = None
    top_k: int | None = None
    moe_layers: int = 0
    parameters_per_expert: int | None = None  # one routed expert in one MoE layer
    weight_dtype: str
    quantization: str | None
    weight_bytes: int
    given: bool  # True when the totals were given (coarse form), not counted from shapes
    derived: list[str]  # which figures were derived from given ones
    # Multi-token-prediction layers: checkpoints hold them, transformers does not build them,
    # engines load them only for speculative decoding. Not in `total` (transformers'
    # convention); `total_with_mtp` is what the checkpoint holds (model cards quote either).
    mtp_parameters: int = 0
    total_with_mtp: int | None = None
    # Zero-computation experts (LongCat-Flash): a token's top_k picks may land on identity
    # experts, so active parameters are a range. `active` is its maximum (every pick a real
    # expert); the minimum has every pick a zero expert; `active_expected` assumes the router
    # spreads picks evenly over all experts, zero ones included (an estimate: the real share
    # follows the router's learned load).
    active_min: int | None = None
    active_max: int | None = None
    active_expected: int | None = None
    # Rows transformers allocates for the zero experts (LongcatFlashExperts' gate_up_proj):
    # held by no checkpoint, loaded by no engine, so not in `total`; `transformers_total` is
    # what transformers counts with them.
    phantom_parameters: int = 0
    transformers_total: int | None = None


def _active_elements(group: TensorGroup, top_k: int | None) -> int:
    if group.experts and top_k:
        return group.parameters // group.experts * top_k
    return group.parameters


def count_parameters(spec: ModelSpec, dtype: str | None = None) -> ParameterCount:
    """Count `spec`'s parameters, per component, and their bytes.

    `dtype` overrides the stored weights: a 16/32-bit float re-types every tensor; an 8-bit or
    narrower type quantizes matmul weights as an engine would at load time, replacing the
    checkpoint's own quantization.
    """
    base, quant = weight_dtypes(spec, dtype)
    if spec.coarse is not None:
        return _coarse(spec, base, quant)
    if spec.diffusion is not None:
        return _diffusion(spec, base)

    groups = model_tensors(spec)
    mtp = sum(g.parameters for g in mtp_tensors(spec))
    moe = spec.decoder.moe if spec.decoder else None
    top_k = moe.top_k if moe else None
    per: dict[Component, list[int]] = {}
    for group in groups:
        row = per.setdefault(group.component, [0, 0, 0])
        row[0] += group.parameters
        row[1] += _active_elements(group, top_k)
        row[2] += group_bytes(group, base, quant)
    components = [
        ComponentCount(component=c, parameters=v[0], active=v[1], weight_bytes=v[2])
        for c, v in per.items()
    ]
    total = sum(c.parameters for c in components)
    active = sum(c.active for c in components)
    # The token table the input goes through: the decoder's, or an encoder-only model's own.
    token_stack = "decoder" if spec.decoder is not None else "encoder"
    embed = sum(g.parameters for g in groups
                if g.component is Component.EMBEDDINGS and g.name.endswith("embed_tokens.weight")
                and g.stack == token_stack)
    head = per.get(Component.LM_HEAD, [0])[0]
    expert_groups = [g for g in groups if g.experts]
    moe_layers = len({layer for g in expert_groups for layer in g.layers})
    per_expert = (
        sum(g.elements // g.experts for g in expert_groups if g.layers[:1] == (
            expert_groups[0].layers[0],)) if expert_groups else None
    )
    ranges = _zero_expert_ranges(spec, active, per_expert, moe_layers)
    return ParameterCount(
        **ranges,
        total=total,
        active=active,
        input_embedding=embed,
        lm_head=head,
        active_excluding_input_embedding=active - embed,
        by_component=components,
        experts=moe.experts if moe else None,
        top_k=top_k,
        moe_layers=moe_layers,
        parameters_per_expert=per_expert,
        weight_dtype=base,
        quantization=quant_label(quant),
        weight_bytes=sum(c.weight_bytes for c in components),
        given=False,
        derived=[],
        mtp_parameters=mtp,
        total_with_mtp=total + mtp if mtp else None,
        transformers_total=total + ranges["phantom_parameters"]
        if ranges.get("phantom_parameters") else None,
    )


def _zero_expert_ranges(spec: ModelSpec, active: int, per_expert: int | None,
                        moe_layers: int) -> dict[str, int]:
    """Active range and phantom rows of a MoE with zero-computation experts (see
    ParameterCount); empty for every other model."""
    moe = spec.decoder.moe if spec.decoder else None
    if moe is None or not moe.zero_experts or not per_expert:
        return {}
    routed = moe.top_k * per_expert * moe_layers
    low = active - routed
    real_share = moe.top_k * moe.experts / (moe.experts + moe.zero_experts)
    out = {"active_min": low, "active_max": active,
           "active_expected": low + round(real_share * per_expert * moe_layers)}
    if moe.reference_zero_rows and spec.decoder is not None:
        gate_up = (2 if moe.gated else 1) * moe.expert_intermediate_size
        phantom = moe.zero_experts * gate_up * (spec.decoder.hidden_size or 0) * moe_layers
        out |= {"phantom_parameters": phantom}
    return out


_ROLES = {"text_encoder": Component.TEXT_ENCODER, "denoiser": Component.DENOISER,
          "vae": Component.VAE}


def _diffusion(spec: ModelSpec, base: str) -> ParameterCount:
    """A diffusion pipeline: its parts' given counts, each at its own dtype (or `base`)."""
    assert spec.diffusion is not None
    rows: dict[Component, list[int]] = {}
    for part in spec.diffusion.parts:
        dtype = normalize_dtype(part.dtype) if part.dtype else base
        row = rows.setdefault(_ROLES[part.role], [0, 0])
        row[0] += part.parameters
        row[1] += -(-part.parameters * dtype_bits(dtype) // 8)
    components = [ComponentCount(component=c, parameters=v[0], active=v[0], weight_bytes=v[1])
                  for c, v in rows.items()]
    total = sum(c.parameters for c in components)
    return ParameterCount(
        total=total, active=total, input_embedding=0, lm_head=0,
        active_excluding_input_embedding=total, by_component=components, weight_dtype=base,
        quantization=None, weight_bytes=sum(c.weight_bytes for c in components), given=True,
        derived=["total", "weight_bytes"],
    )


def _coarse(spec: ModelSpec, base: str, quant: Quantization | None) -> ParameterCount:
    """Totals from the coarse block: given figures, and what follows from them."""
    assert spec.coarse is not None
    c = spec.coarse
    bits = quant.bits if quant is not None else dtype_bits(base)
    derived: list[str] = []
    components: list[ComponentCount] = []
    if c.experts is not None and c.top_k is not None and c.expert_parameters is not None:
        experts_total = c.experts * c.expert_parameters
        total = c.shared_parameters + experts_total
        active = c.shared_parameters + c.top_k * c.expert_parameters
        derived += ["total", "active"]
        components.append(ComponentCount(
            component=Component.EXPERTS, parameters=experts_total,
            active=c.top_k * c.expert_parameters,
            weight_bytes=-(-int(experts_total * bits) // 8),
        ))
        if c.shared_parameters:
            components.append(ComponentCount(
                component=Component.OTHER, parameters=c.shared_parameters,
                active=c.shared_parameters,
                weight_bytes=-(-int(c.shared_parameters * bits) // 8),
            ))
        if c.total is not None:
            total = c.total
            derived.remove("total")
        if c.active is not None:
            active = c.active
            derived.remove("active")
    else:
        assert c.total is not None
        total = c.total
        active = c.active if c.active is not None else total
        if c.active is None:
            derived.append("active")
        components.append(ComponentCount(
            component=Component.OTHER, parameters=total, active=active,
            weight_bytes=-(-int(total * bits) // 8),
        ))
    derived.append("weight_bytes")
    return ParameterCount(
        total=total,
        active=active,
        input_embedding=0,
        lm_head=0,
        active_excluding_input_embedding=active,
        by_component=components,
        experts=c.experts,
        top_k=c.top_k,
        moe_layers=0,
        parameters_per_expert=c.expert_parameters,
        weight_dtype=base,
        quantization=quant_label(quant),
        weight_bytes=-(-int(total * bits) // 8),
        given=True,
        derived=derived,
    )


def quant_label(quant: Quantization | None) -> str | None:
    """The checkpoint's scheme in words: its method, and its routed experts' where they are
    stored apart ("fp8 (block-scaled); routed experts fp4 (e2m1)")."""
    if quant is None:
        return None
    experts = quant.experts
    return quant.method + (f"; routed experts {experts.method}" if experts else "")
