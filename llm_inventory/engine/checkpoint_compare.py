"""Config versus checkpoint: do the shapes a config implies match the tensors a file holds?

Rules:
- Checkpoint parameters are the elements of its weight tensors inside the config's decoder
  layers (tensors outside any layer — embeddings, final norm, lm_head, encoders — included).
  Packed integer weights (GPTQ/AWQ `qweight`, compressed-tensors `weight_packed`, MXFP4
  `_blocks`, NVFP4 and bitsandbytes 4-bit bytes) count dtype bits ÷ quantization bits
  parameters per stored element.
- Quantization scales, zero points, GPTQ's g_idx and stored buffers (DeepSeek's
  `e_score_correction_bias`, llama.cpp's `rope_freqs`) are not parameters: they are
  tallied apart, by role.
- Layers whose index is at or past the config's layer count (DeepSeek-V3's
  multi-token-prediction layer `model.layers.61.*`) are reported as extra layers.
- Shape checks read one tensor per fact (the first layer that has it) from its unpacked
  float shape: hidden size, vocabulary, q/k/v/o widths (or the MLA projections), the dense
  MLP width, experts per MoE layer and the expert width, and the layer count.

`checkpoint_weight_bytes` is what the files hold for the model a config describes: the
real bytes that placement should prefer over a dtype estimate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from llm_inventory.engine import kinds
from llm_inventory.engine.params import count_parameters
from llm_inventory.spec.model import (
    CheckpointFacts,
    CheckpointTensor,
    Component,
    ModelSpec,
    Quantization,
    Stack,
    TensorRole,
)

# Stored widths of the integer dtypes packed formats use (safetensors names).
_INTEGER_BITS = {"U8": 8, "I8": 8, "U16": 16, "I16": 16, "U32": 32, "I32": 32, "U64": 64,
                 "I64": 64}
# Safetensors dtypes whose shape is the logical shape (GGUF shapes always are).
_FLOAT = {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
          "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"}
_MAX_LISTED = 10


class ComponentDelta(BaseModel):
    """One component's parameters: config-derived against the checkpoint's tensors."""

    component: str
    config_parameters: int
    checkpoint_parameters: int
    difference: int


class ShapeCheck(BaseModel):
    """A config field against the tensor dimension that must equal it."""

    what: str
    tensor: str
    config: int
    checkpoint: int
    agrees: bool


class ExtraLayer(BaseModel):
    """A layer the checkpoint holds past the config's layer count."""

    layer: int
    kind: str  # "multi-token prediction" or "unexplained"
    tensors: int
    parameters: int | None  # None: known from the index alone
    bytes: int | None


class AuxiliaryTally(BaseModel):
    """Tensors that are not parameters, by role: scales, zero points, indices, buffers."""

    role: TensorRole
    tensors: int
    bytes: int


class CheckpointComparison(BaseModel):
    """Config-derived parameters and shapes against a checkpoint's headers."""

    schema_version: int = 1
    model: str
    format: str
    headers_read: bool
    tensor_count: int
    stack_layers: int | None
    config_parameters: int
    checkpoint_parameters: int | None  # weights inside the config's layers, unpacked
    difference: int | None  # checkpoint − config
    parameters_agree: bool | None
    extra_layer_parameters: int | None
    config_weight_bytes: int  # the config's estimate at its dtype and quantization
    checkpoint_bytes: int  # every tensor the files hold
    model_bytes: int  # what the files hold for the config's model (extra layers left out)
    components: list[ComponentDelta]
    checks: list[ShapeCheck]
    extra_layers: list[ExtraLayer]
    auxiliary: list[AuxiliaryTally]
    unexplained: list[str]  # weight tensors no component rule names (first few)
    unexplained_count: int
    disagreements: list[str]
    notes: list[str]


def _stack_layers(spec: ModelSpec) -> int | None:
    return spec.decoder.layers if spec.decoder is not None else None


def _in_stack(tensor: CheckpointTensor, layers: int | None) -> bool:
    return layers is None or tensor.layer is None or tensor.layer < layers


def unpacked_parameters(tensor: CheckpointTensor, quant: Quantization | None) -> int:
    """Parameters one weight tensor stands for: packed integers hold several per element."""
    elements = tensor.elements or 0
    width = _INTEGER_BITS.get(tensor.dtype or "")
    if tensor.role is not TensorRole.WEIGHT or width is None or quant is None:
        return elements
    bits = quant.bits
    if bits < width and float(bits).is_integer() and width % int(bits) == 0:
        return elements * (width // int(bits))
    return elements


def checkpoint_weight_bytes(spec: ModelSpec, *, include_extra_layers: bool = False) -> int | None:
    """Bytes the checkpoint's files hold for the model `spec` describes; None without one.

    From headers: every tensor (scales and buffers included) except layers past the
    decoder's layer count, unless `include_extra_layers`. From an index alone: its
    `total_size`, which cannot leave extra layers out.
    """
    facts = spec.checkpoint
    if facts is None:
        return None
    layers = _stack_layers(spec)
    if not facts.headers_read or include_extra_layers or layers is None:
        return facts.total_bytes
    return sum(t.bytes or 0 for t in facts.tensors if _in_stack(t, layers))


# --- shape checks ----------------------------------------------------------------------------

Expect = Callable[[Stack], int | None]


@dataclass(frozen=True)
class _Rule:
    what: str
    pattern: re.Pattern[str]
    axis: int
    expect: Expect
    where: str = "attention"  # which layer to read: attention, dense, moe, or none


def _vocab_rows(s: Stack) -> int | None:
    return s.embedding_rows or s.vocab_size or None


def _head_rows(s: Stack) -> int | None:
    return s.vocab_size if s.vocab_size and not s.tied_embeddings else None


def _mlp_width(s: Stack) -> int | None:
    return s.intermediate_size or None


def _expert_width(s: Stack) -> int | None:
    return s.moe.expert_intermediate_size if s.moe else None


def _experts(s: Stack) -> int | None:
    return s.moe.experts if s.moe else None


_L = r"(?:^|\.)(?:layers|blk)\.\d+\."
_STACK_RULES: tuple[_Rule, ...] = (
    _Rule("hidden size", re.compile(r"(^|\.)(embed_tokens|token_embd)\.weight$"), -1,
          lambda s: s.hidden_size, "none"),
    _Rule("vocabulary rows", re.compile(r"(^|\.)(embed_tokens|token_embd)\.weight$"), 0,
          _vocab_rows, "none"),
    _Rule("lm_head rows", re.compile(r"^(lm_head|output)\.weight$"), 0, _head_rows, "none"),
)
_MLP_RULES: tuple[_Rule, ...] = (
    _Rule("MLP width (intermediate_size)",
          re.compile(_L + r"(mlp\.down_proj|ffn_down)\.weight$"), -1, _mlp_width, "dense"),
    _Rule("expert width (expert intermediate size)",
          re.compile(_L + r"(mlp\.experts\.0\.down_proj|block_sparse_moe\.experts\.0\.w2"
                     r"|ffn_down_exps)\.weight$"), -1, _expert_width, "moe"),
    _Rule("experts per MoE layer", re.compile(_L + r"ffn_down_exps\.weight$"), 0, _experts,
          "moe"),
)


def _fixed(value: int) -> Expect:
    return lambda _stack: value


def _rules(stack: Stack) -> list[_Rule]:
    """Stack-wide rules, the first layer's mixer rules (its kind's), then the MLP rules."""
    mixer = [_Rule(r.what, r.pattern, r.axis, _fixed(r.expected))
             for r in kinds.of_layer(stack, 0).shape_rules(stack.at(0))]
    return [*_STACK_RULES, *mixer, *_MLP_RULES]


_EXPERT_INDEX = re.compile(r"\.experts\.(\d+)\.")


def _logical_shape(tensor: CheckpointTensor, fmt: str) -> tuple[int, ...] | None:
    if tensor.shape is None or tensor.role is not TensorRole.WEIGHT:
        return None
    if fmt == "gguf" or (tensor.dtype in _FLOAT):
        return tensor.shape
    return None


def _checks(spec: ModelSpec, facts: CheckpointFacts) -> list[ShapeCheck]:
    stack = spec.decoder
    if stack is None or not facts.headers_read:
        return []
    layers = stack.layers
    moe = stack.moe
    targets = {
        "none": None,
        "attention": 0,
        "dense": next((i for i in range(layers) if moe is None or not moe.is_moe_layer(i)),
                      None),
        "moe": next((i for i in range(layers) if moe is not None and moe.is_moe_layer(i)),
                    None),
    }
    by_layer: dict[int | None, list[CheckpointTensor]] = {}
    for tensor in facts.tensors:
        if tensor.component in (Component.ENCODER, Component.PROJECTOR):
            continue
        if tensor.layer is None or tensor.layer in targets.values():
            by_layer.setdefault(tensor.layer, []).append(tensor)
    checks: list[ShapeCheck] = []
    for rule in _rules(stack):
        expected = rule.expect(stack)
        if expected is None or rule.where not in targets:
            continue
        layer = targets[rule.where]
        if rule.where != "none" and layer is None:
            continue
        for tensor in by_layer.get(layer, []):
            shape = _logical_shape(tensor, facts.format)
            if shape and rule.pattern.search(tensor.name):
                actual = shape[rule.axis]
                checks.append(ShapeCheck(what=rule.what, tensor=tensor.name, config=expected,
                                         checkpoint=actual, agrees=actual == expected))
                break
    if moe is not None and targets["moe"] is not None:
        indices = {int(m.group(1)) for t in by_layer.get(targets["moe"], [])
                   if (m := _EXPERT_INDEX.search(t.name))}
        if indices:
            first = next(t.name for t in by_layer[targets["moe"]]
                         if _EXPERT_INDEX.search(t.name))
            checks.append(ShapeCheck(what="experts per MoE layer", tensor=first,
                                     config=moe.experts, checkpoint=len(indices),
                                     agrees=len(indices) == moe.experts))
    seen = {t.layer for t in facts.tensors if t.layer is not None and t.layer < layers
            and t.component not in (Component.ENCODER, Component.PROJECTOR)}
    if seen:
        checks.append(ShapeCheck(what="decoder layers", tensor=f"layers 0–{max(seen)}",
                                 config=layers, checkpoint=len(seen),
                                 agrees=len(seen) == layers))
    return checks


_MTP_NAMES = re.compile(r"(eh_proj|enorm|hnorm|shared_head|nextn)")


def _extra_layers(facts: CheckpointFacts, layers: int | None,
                  quant: Quantization | None) -> list[ExtraLayer]:
    if layers is None:
        return []
    grouped: dict[int, list[CheckpointTensor]] = {}
    for tensor in facts.tensors:
        if tensor.layer is not None and tensor.layer >= layers:
            grouped.setdefault(tensor.layer, []).append(tensor)
    extra = []
    for layer, tensors in sorted(grouped.items()):
        mtp = any(_MTP_NAMES.search(t.name) for t in tensors)
        extra.append(ExtraLayer(
            layer=layer,
            kind="multi-token prediction" if mtp else "unexplained",
            tensors=len(tensors),
            parameters=sum(unpacked_parameters(t, quant) for t in tensors
                           if t.role is TensorRole.WEIGHT) if facts.headers_read else None,
            bytes=sum(t.bytes or 0 for t in tensors) if facts.headers_read else None,
        ))
    return extra


def compare_checkpoint(spec: ModelSpec) -> CheckpointComparison:
    """Compare `spec`'s config-derived parameters and shapes with its checkpoint's tensors.

    Raises ValueError when `spec` carries no checkpoint facts.
    """
    facts = spec.checkpoint
    if facts is None:
        raise ValueError(f"{spec.name} carries no checkpoint facts")
    config_spec = spec.model_copy(update={"checkpoint": None})
    counted = count_parameters(config_spec)
    layers = _stack_layers(spec)
    quant = spec.quantization
    inside = [t for t in facts.tensors if _in_stack(t, layers)]
    weights = [t for t in inside if t.role is TensorRole.WEIGHT]

    ckpt_params: int | None = None
    difference: int | None = None
    per_component: dict[str, int] = {}
    if facts.headers_read:
        for tensor in weights:
            key = tensor.component.value
            per_component[key] = per_component.get(key, 0) + unpacked_parameters(tensor, quant)
        ckpt_params = sum(per_component.values())
        difference = ckpt_params - counted.total
    config_components = {c.component.value: c.parameters for c in counted.by_component}
    components = []
    if facts.headers_read and not counted.given:
        for key in sorted(set(config_components) | set(per_component),
                          key=lambda k: -max(config_components.get(k, 0),
                                             per_component.get(k, 0))):
            config_value = config_components.get(key, 0)
            ckpt_value = per_component.get(key, 0)
            components.append(ComponentDelta(component=key, config_parameters=config_value,
                                             checkpoint_parameters=ckpt_value,
                                             difference=ckpt_value - config_value))

    extra = _extra_layers(facts, layers, quant)
    auxiliary: dict[TensorRole, list[int]] = {}
    for tensor in facts.tensors:
        if tensor.role is not TensorRole.WEIGHT:
            entry = auxiliary.setdefault(tensor.role, [0, 0])
            entry[0] += 1
            entry[1] += tensor.bytes or 0
    unexplained = [t.name for t in weights if t.component is Component.OTHER]
    checks = _checks(spec, facts)

    disagreements: list[str] = []
    if difference:
        disagreements.append(
            f"the checkpoint holds {ckpt_params:,} parameters within the config's layers; "
            f"the config implies {counted.total:,} ({difference:+,})")
    for check in checks:
        if not check.agrees:
            disagreements.append(f"{check.what}: the config implies {check.config:,}, "
                                 f"{check.tensor} has {check.checkpoint:,}")
    for layer in extra:
        size = (f": {layer.parameters:,} parameters, {layer.bytes:,} B"
                if layer.parameters is not None and layer.bytes is not None else "")
        disagreements.append(f"layer {layer.layer} is past the config's {layers} layers "
                             f"({layer.kind}, {layer.tensors} tensors{size})")
    if unexplained:
        disagreements.append(f"{len(unexplained):,} weight tensor(s) no component rule "
                             f"explains (first: {unexplained[0]})")

    notes = list(facts.notes)
    if not facts.headers_read:
        notes.append("headers were not read (index only): parameters and shapes cannot be "
                     "checked, bytes are the index's total_size")
    if any(unpacked_parameters(t, quant) != (t.elements or 0) for t in weights):
        notes.append(f"packed integer weights counted at {quant.bits:g} bits per parameter "
                     "(the config's quantization)" if quant else "")
    if auxiliary:
        notes.append("scales, zero points, indices and buffers are not parameters; they are "
                     "tallied by role")
    if counted.given:
        notes.append("the config's totals are given (coarse), not counted from shapes")
    return CheckpointComparison(
        model=spec.name,
        format=facts.format,
        headers_read=facts.headers_read,
        tensor_count=facts.tensor_count,
        stack_layers=layers,
        config_parameters=counted.total,
        checkpoint_parameters=ckpt_params,
        difference=difference,
        parameters_agree=None if difference is None else difference == 0,
        extra_layer_parameters=(sum(e.parameters or 0 for e in extra)
                                if facts.headers_read else None),
        config_weight_bytes=counted.weight_bytes,
        checkpoint_bytes=facts.total_bytes,
        model_bytes=checkpoint_weight_bytes(spec) or 0,
        components=components,
        checks=checks,
        extra_layers=extra,
        auxiliary=[AuxiliaryTally(role=r, tensors=v[0], bytes=v[1])
                   for r, v in sorted(auxiliary.items(), key=lambda kv: kv[0].value)],
        unexplained=unexplained[:_MAX_LISTED],
        unexplained_count=len(unexplained),
        disagreements=disagreements,
        notes=[n for n in notes if n],
    )
