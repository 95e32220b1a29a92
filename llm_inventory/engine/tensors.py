"""A model's tensors, derived from its spec: the inventory every other figure is summed from.

Each `TensorGroup` is one named tensor shape repeated over a set of layers, with the
component it belongs to, how tensor parallelism splits it, and whether it is a matmul weight
(what quantization applies to). Names follow the Llama-style layout of Hugging Face
checkpoints (`model.layers.{i}.self_attn.q_proj.weight`), whatever the architecture.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict

from llm_inventory.engine import kinds
from llm_inventory.engine.blocks import Entry, dense_mlp, linear, norm
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    ModelSpec,
    Shard,
    Stack,
)

# "other_encoder": a model's further encoders (an audio tower beside the vision one) and their
# projectors, which per-image encoder work leaves out.
StackName = Literal["decoder", "encoder", "projector", "other_encoder"]


class TensorGroup(BaseModel):
    """One tensor shape, once per listed layer (or once, when `layers` is empty)."""

    model_config = ConfigDict(frozen=True)

    name: str
    shape: tuple[int, ...]
    component: Component
    shard: Shard
    stack: StackName = "decoder"
    layers: tuple[int, ...] = ()
    linear: bool = False
    experts: int = 0  # the leading dimension counts experts (expert parallelism places them)

    @property
    def elements(self) -> int:
        """Elements in one copy (one layer's tensor)."""
        return math.prod(self.shape)

    @property
    def copies(self) -> int:
        return max(1, len(self.layers))

    @property
    def parameters(self) -> int:
        return self.elements * self.copies


def _mlp(prefix: str, s: Stack, index: int) -> Iterator[Entry]:
    """A dense MLP, or a MoE layer: router, experts, shared experts."""
    hidden = s.hidden_size or 0
    moe = s.moe
    if moe is not None and moe.is_moe_layer(index):
        e, i = moe.experts, moe.expert_intermediate_size
        up = 2 * i if moe.gated else i
        # The router scores the zero-computation experts too (LongCat-Flash).
        yield from linear(f"{prefix}.gate", e + moe.zero_experts, hidden, Component.ROUTER,
                          Shard.REPLICATED, moe.router_bias)
        ex = Component.EXPERTS
        width = moe.latent_size or hidden  # the experts' own width (Nemotron-3 latent MoE)
        yield f"{prefix}.experts.gate_up_proj", (e, up, width), ex, Shard.COLUMN, True, e
        yield f"{prefix}.experts.down_proj", (e, width, i), ex, Shard.ROW, True, e
        if moe.latent_size:
            yield from linear(f"{prefix}.fc1_latent_proj", width, hidden, Component.MLP,
                              Shard.REPLICATED, s.mlp_bias)
            yield from linear(f"{prefix}.fc2_latent_proj", hidden, width, Component.MLP,
                              Shard.REPLICATED, s.mlp_bias)
        if moe.expert_bias:
            yield f"{prefix}.experts.gate_up_proj_bias", (e, up), ex, Shard.COLUMN, False, e
            yield f"{prefix}.experts.down_proj_bias", (e, hidden), ex, Shard.REPLICATED, False, e
        if moe.shared_experts:
            width = moe.shared_experts * moe.shared_intermediate_size
            yield from dense_mlp(f"{prefix}.shared_experts", hidden, width, moe.gated, False,
                                 Component.SHARED_EXPERTS)
            if moe.shared_expert_gate:
                yield from linear(f"{prefix}.shared_expert_gate", 1, hidden,
                                  Component.SHARED_EXPERTS, Shard.REPLICATED, False)
    elif s.mlp != "none" and s.intermediate_size:
        yield from dense_mlp(prefix, hidden, s.intermediate_size, s.mlp == "gated", s.mlp_bias,
                             Component.MLP)


def _layer(prefix: str, stack: Stack, index: int) -> Iterator[Entry]:
    s = stack.at(index)
    hidden = s.hidden_size or 0
    for j in range(s.norms_per_layer):
        yield from norm(f"{prefix}.norm_{j}", hidden, s)
    for kind, module in kinds.mixers(stack, index):
        yield from kind.tensors(f"{prefix}.{module}", s)
    yield from _mlp(f"{prefix}.mlp", s, index)


def _extra(extra: ExtraTensor, prefix: str, stack: StackName) -> TensorGroup:
    return TensorGroup(
        name=f"{prefix}.{extra.name}" if prefix else extra.name,
        shape=tuple(extra.shape),
        component=extra.component,
        shard=extra.shard,
        stack=stack,
        layers=tuple(extra.layers or ()),
        linear=extra.linear,
    )


def stack_tensors(
    s: Stack, prefix: str, stack: StackName, component: Component | None = None
) -> list[TensorGroup]:
    """Every tensor of one stack; `component` relabels them all (an encoder's)."""
    if not s.shaped:
        return []
    hidden = s.hidden_size or 0
    groups: list[TensorGroup] = []

    def add(entry: Entry, layers: tuple[int, ...] = ()) -> None:
        name, shape, comp, shard, linear, experts = entry
        groups.append(TensorGroup(
            name=name, shape=shape, component=component or comp, shard=shard, stack=stack,
            layers=layers, linear=linear, experts=experts,
        ))

    width = s.embedding_dim or hidden
    if s.vocab_size:
        rows = s.embedding_rows or s.vocab_size
        add((f"{prefix}.embed_tokens.weight", (rows, width), Component.EMBEDDINGS,
             Shard.VOCAB, False, 0))
    if s.position_embeddings:
        add((f"{prefix}.embed_positions.weight", (s.position_embeddings, hidden),
             Component.EMBEDDINGS, Shard.REPLICATED, False, 0))
    if s.token_types:
        add((f"{prefix}.token_type_embeddings.weight", (s.token_types, hidden),
             Component.EMBEDDINGS, Shard.REPLICATED, False, 0))
    if s.embedding_norm:
        for entry in norm(f"{prefix}.embed_norm", hidden, s):
            add(entry)

    by_entry: dict[Entry, list[int]] = {}
    for index in range(s.layers):
        for entry in _layer(f"{prefix}.layers.{{i}}", s, index):
            by_entry.setdefault(entry, []).append(index)
    for entry, layers in by_entry.items():
        add(entry, tuple(layers))

    if s.final_norm:
        for entry in norm(f"{prefix}.norm", hidden, s):
            add(entry)
    if s.pooler:
        for entry in linear(f"{prefix}.pooler.dense", hidden, hidden, Component.OTHER,
                             Shard.REPLICATED, True):
            add(entry)
    if s.vocab_size and s.lm_head and not s.tied_embeddings:
        add(("lm_head.weight", (s.vocab_size, width), Component.LM_HEAD, Shard.VOCAB, False,
             0))
    if s.vocab_size and s.lm_head and s.lm_head_bias:
        add(("lm_head.bias", (s.vocab_size,), Component.LM_HEAD, Shard.VOCAB, False, 0))
    for extra in s.extra:
        groups.append(_extra(extra, prefix, stack).model_copy(
            update={"component": component or extra.component}
        ))
    return groups


def mtp_tensors(spec: ModelSpec) -> list[TensorGroup]:
    """The multi-token-prediction layers' tensors (empty when the model has none): each a
    decoder layer numbered after the stack's, plus its extra tensors, all `Component.MTP`.
    Kept apart from `model_tensors`: engines load them only for speculative decoding."""
    stack = spec.decoder
    if stack is None or stack.mtp is None or not stack.shaped:
        return []
    mtp = stack.mtp
    kind = mtp.kind or stack.kind_of(stack.layers - 1)
    # MTP layers are shaped like the decoder's own: the last layer's overrides, this kind,
    # and the MoE block when `moe` (every MTP index then counts as an MoE layer).
    last = stack.at(stack.layers - 1)
    moe = last.moe.model_copy(update={"layers": None, "first_dense": 0, "every": 1,
                                      "offset": 0, "dense_layers": []}) \
        if mtp.moe and last.moe is not None else None
    # An MTP layer runs its own sparse-attention indexer even where the last decoder layer
    # shares another's (GLM-5.2's layer 78 holds one).
    shaped = last.model_copy(update={"layer_types": [kind], "moe": moe, "overrides": [],
                                     "mtp": None, "shares_indexer": False})
    groups: list[TensorGroup] = []
    by_entry: dict[Entry, list[int]] = {}
    for j in range(mtp.layers):
        index = stack.layers + j
        for entry in _layer("model.layers.{i}", shaped, index):
            by_entry.setdefault(entry, []).append(index)
    for (name, shape, _, shard, linear_, experts), layers in by_entry.items():
        groups.append(TensorGroup(name=name, shape=shape, component=Component.MTP, shard=shard,
                                  stack="decoder", layers=tuple(layers), linear=linear_,
                                  experts=experts))
    for extra in mtp.extra:
        groups.append(TensorGroup(
            name=f"model.layers.{{i}}.{extra.name}", shape=tuple(extra.shape),
            component=Component.MTP, shard=extra.shard, stack="decoder",
            layers=tuple(range(stack.layers, stack.layers + mtp.layers)), linear=extra.linear))
    return groups


def _encoder_tensors(encoder: Encoder, prefix: str, stack: StackName,
                     projector_stack: StackName, relabel: Component | None) -> list[TensorGroup]:
    """One encoder's tower and projector. A tower given by its count alone (a timm model
    whose layout the config does not describe) is one group of that many elements."""
    groups: list[TensorGroup] = []
    if encoder.stack is not None:
        groups += stack_tensors(encoder.stack, prefix, stack, relabel)
    elif encoder.parameters:
        groups.append(TensorGroup(name=f"{prefix}.weights", shape=(encoder.parameters,),
                                  component=Component.ENCODER, shard=Shard.REPLICATED,
                                  stack=stack))
    for extra in encoder.projector:
        name = "projector" if projector_stack == "projector" else f"{prefix}.projector"
        groups.append(_extra(extra, name, projector_stack).model_copy(
            update={"component": Component.PROJECTOR}
        ))
    return groups


def model_tensors(spec: ModelSpec) -> list[TensorGroup]:
    """Every tensor of a shaped model: encoders, projectors, decoder. Empty for coarse specs."""
    groups: list[TensorGroup] = []
    encoder = spec.encoder
    if encoder is not None:
        # An encoder-only model's stack is the model: keep its breakdown.
        relabel = None if spec.family is Family.ENCODER else Component.ENCODER
        groups += _encoder_tensors(encoder, "encoder", "encoder", "projector", relabel)
    for more in spec.extra_encoders:
        groups += _encoder_tensors(more, f"{more.kind}_encoder", "other_encoder",
                                   "other_encoder", Component.ENCODER)
    if spec.decoder is not None:
        groups += stack_tensors(spec.decoder, "model", "decoder")
    return groups


def work_tensors(spec: ModelSpec) -> list[TensorGroup]:
    """The tensors a forward pass runs: `model_tensors`, a looped stack's looped layers
    listed once per pass (`Stack.loop`: their weights are read and multiplied again each
    pass, while memory holds them once). Only for work (FLOPs, bytes read), never sizes."""
    groups = model_tensors(spec)
    stack = spec.decoder
    if stack is None or stack.loop is None:
        return groups
    return [group.model_copy(update={"layers": tuple(
                i for i in group.layers for _ in range(stack.visits(i)))})
            if group.stack == "decoder" and group.layers else group
            for group in groups]
