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

from llm_inventory.spec.model import (
    Component,
    ExtraTensor,
    Family,
    LayerKind,
    ModelSpec,
    Shard,
    Stack,
)

StackName = Literal["decoder", "encoder", "projector"]


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


_Entry = tuple[str, tuple[int, ...], Component, Shard, bool, int]


def _norm(name: str, width: int, stack: Stack) -> Iterator[_Entry]:
    yield f"{name}.weight", (width,), Component.NORMS, Shard.REPLICATED, False, 0
    if stack.norm == "layer":
        yield f"{name}.bias", (width,), Component.NORMS, Shard.REPLICATED, False, 0


def _linear(
    name: str, out: int, inp: int, component: Component, shard: Shard, bias: bool
) -> Iterator[_Entry]:
    yield f"{name}.weight", (out, inp), component, shard, True, 0
    if bias:
        bias_shard = Shard.REPLICATED if shard is Shard.ROW else shard
        yield f"{name}.bias", (out,), component, bias_shard, False, 0


def _attention(prefix: str, s: Stack, cross: bool = False) -> Iterator[_Entry]:
    """q/k/v/o projections (+ biases, q/k norms, sinks) of one attention block."""
    hidden, heads, kv = s.hidden_size or 0, s.heads or 0, s.n_kv_heads
    hd, vd = s.k_dim, s.v_dim
    k_bias = s.qkv_bias if s.k_bias is None else s.k_bias
    a = Component.ATTENTION
    yield from _linear(f"{prefix}.q_proj", heads * hd, hidden, a, Shard.COLUMN, s.qkv_bias)
    yield from _linear(f"{prefix}.k_proj", kv * hd, hidden, a, Shard.KV, k_bias)
    yield from _linear(f"{prefix}.v_proj", kv * vd, hidden, a, Shard.KV, s.qkv_bias)
    yield from _linear(f"{prefix}.o_proj", hidden, heads * vd, a, Shard.ROW, s.o_bias)
    qk_norm = "head" if cross and s.cross_qk_norm else ("none" if cross else s.qk_norm)
    if qk_norm == "head":
        yield f"{prefix}.q_norm.weight", (hd,), a, Shard.REPLICATED, False, 0
        yield f"{prefix}.k_norm.weight", (hd,), a, Shard.REPLICATED, False, 0
    elif qk_norm == "full":
        yield f"{prefix}.q_norm.weight", (heads * hd,), a, Shard.COLUMN, False, 0
        yield f"{prefix}.k_norm.weight", (kv * hd,), a, Shard.KV, False, 0
    if s.sinks and not cross:
        yield f"{prefix}.sinks", (heads,), a, Shard.COLUMN, False, 0


def _mla(prefix: str, s: Stack) -> Iterator[_Entry]:
    """DeepSeek's latent attention: low-rank q, a shared KV latent, per-head up-projections."""
    assert s.mla is not None
    m, hidden, heads = s.mla, s.hidden_size or 0, s.heads or 0
    a = Component.ATTENTION
    q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    if m.q_lora_rank:
        yield from _linear(f"{prefix}.q_a_proj", m.q_lora_rank, hidden, a, Shard.REPLICATED,
                           s.qkv_bias)
        yield f"{prefix}.q_a_layernorm.weight", (m.q_lora_rank,), a, Shard.REPLICATED, False, 0
        yield from _linear(f"{prefix}.q_b_proj", q_width, m.q_lora_rank, a, Shard.COLUMN, False)
    else:
        yield from _linear(f"{prefix}.q_proj", q_width, hidden, a, Shard.COLUMN, False)
    yield from _linear(f"{prefix}.kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim,
                       hidden, a, Shard.REPLICATED, s.qkv_bias)
    yield f"{prefix}.kv_a_layernorm.weight", (m.kv_lora_rank,), a, Shard.REPLICATED, False, 0
    yield from _linear(f"{prefix}.kv_b_proj", heads * (m.qk_nope_head_dim + m.v_head_dim),
                       m.kv_lora_rank, a, Shard.COLUMN, False)
    yield from _linear(f"{prefix}.o_proj", hidden, heads * m.v_head_dim, a, Shard.ROW, s.o_bias)


def ssm_dims(s: Stack) -> tuple[int, int, int, int]:
    """(d_inner, dt_rank or heads, conv channels, SSM state elements) of a Mamba mixer."""
    assert s.ssm is not None and s.hidden_size
    m = s.ssm
    d_inner = m.expand * s.hidden_size
    if m.version == 1:
        dt_rank = m.dt_rank or math.ceil(s.hidden_size / 16)
        return d_inner, dt_rank, d_inner, d_inner * m.d_state
    heads = m.heads or d_inner // m.head_dim
    conv = d_inner + 2 * m.n_groups * m.d_state
    return d_inner, heads, conv, heads * (d_inner // heads) * m.d_state


def _mamba(prefix: str, s: Stack) -> Iterator[_Entry]:
    """Mamba-1 / Mamba-2 mixer tensors as transformers lays them out."""
    assert s.ssm is not None
    m, hidden, x = s.ssm, s.hidden_size or 0, Component.MIXER
    d_inner, second, conv, _ = ssm_dims(s)
    col, row = Shard.COLUMN, Shard.ROW
    if m.version == 1:
        dt_rank = second
        yield from _linear(f"{prefix}.in_proj", 2 * d_inner, hidden, x, col, m.proj_bias)
        yield f"{prefix}.conv1d.weight", (d_inner, 1, m.d_conv), x, col, False, 0
        if m.conv_bias:
            yield f"{prefix}.conv1d.bias", (d_inner,), x, col, False, 0
        yield from _linear(f"{prefix}.x_proj", dt_rank + 2 * m.d_state, d_inner, x, row, False)
        yield from _linear(f"{prefix}.dt_proj", d_inner, dt_rank, x, col, True)
        yield f"{prefix}.A_log", (d_inner, m.d_state), x, col, False, 0
        yield f"{prefix}.D", (d_inner,), x, col, False, 0
        if m.inner_norms:
            yield f"{prefix}.dt_layernorm.weight", (dt_rank,), x, Shard.REPLICATED, False, 0
            yield f"{prefix}.b_layernorm.weight", (m.d_state,), x, Shard.REPLICATED, False, 0
            yield f"{prefix}.c_layernorm.weight", (m.d_state,), x, Shard.REPLICATED, False, 0
    else:
        heads = second
        width = 2 * d_inner + 2 * m.n_groups * m.d_state + heads
        yield from _linear(f"{prefix}.in_proj", width, hidden, x, col, m.proj_bias)
        yield f"{prefix}.conv1d.weight", (conv, 1, m.d_conv), x, col, False, 0
        if m.conv_bias:
            yield f"{prefix}.conv1d.bias", (conv,), x, col, False, 0
        for name in ("dt_bias", "A_log", "D"):
            yield f"{prefix}.{name}", (heads,), x, col, False, 0
        if m.gated_norm:
            yield f"{prefix}.norm.weight", (d_inner,), x, col, False, 0
    yield from _linear(f"{prefix}.out_proj", hidden, d_inner, x, row, m.proj_bias)


def _mlp(prefix: str, s: Stack, index: int) -> Iterator[_Entry]:
    """A dense MLP, or a MoE layer: router, experts, shared experts."""
    hidden = s.hidden_size or 0
    moe = s.moe
    if moe is not None and moe.is_moe_layer(index):
        e, i = moe.experts, moe.expert_intermediate_size
        up = 2 * i if moe.gated else i
        yield from _linear(f"{prefix}.gate", e, hidden, Component.ROUTER, Shard.REPLICATED,
                           moe.router_bias)
        ex = Component.EXPERTS
        yield f"{prefix}.experts.gate_up_proj", (e, up, hidden), ex, Shard.COLUMN, True, e
        yield f"{prefix}.experts.down_proj", (e, hidden, i), ex, Shard.ROW, True, e
        if moe.expert_bias:
            yield f"{prefix}.experts.gate_up_proj_bias", (e, up), ex, Shard.COLUMN, False, e
            yield f"{prefix}.experts.down_proj_bias", (e, hidden), ex, Shard.REPLICATED, False, e
        if moe.shared_experts:
            width = moe.shared_experts * moe.shared_intermediate_size
            yield from _dense(f"{prefix}.shared_experts", hidden, width, True, False,
                              Component.SHARED_EXPERTS)
            if moe.shared_expert_gate:
                yield from _linear(f"{prefix}.shared_expert_gate", 1, hidden,
                                   Component.SHARED_EXPERTS, Shard.REPLICATED, False)
    elif s.mlp != "none" and s.intermediate_size:
        yield from _dense(prefix, hidden, s.intermediate_size, s.mlp == "gated", s.mlp_bias,
                          Component.MLP)


def _dense(
    prefix: str, hidden: int, width: int, gated: bool, bias: bool, component: Component
) -> Iterator[_Entry]:
    if gated:
        yield from _linear(f"{prefix}.gate_proj", width, hidden, component, Shard.COLUMN, bias)
    yield from _linear(f"{prefix}.up_proj", width, hidden, component, Shard.COLUMN, bias)
    yield from _linear(f"{prefix}.down_proj", hidden, width, component, Shard.ROW, bias)


def _layer(prefix: str, s: Stack, index: int) -> Iterator[_Entry]:
    hidden = s.hidden_size or 0
    for j in range(s.norms_per_layer):
        yield from _norm(f"{prefix}.norm_{j}", hidden, s)
    kind = s.kind_of(index)
    if kind is LayerKind.MLA:
        yield from _mla(f"{prefix}.self_attn", s)
    elif kind is LayerKind.MAMBA:
        yield from _mamba(f"{prefix}.mixer", s)
    elif kind is LayerKind.CROSS:
        yield from _attention(f"{prefix}.cross_attn", s, cross=True)
    else:
        yield from _attention(f"{prefix}.self_attn", s)
    if s.cross_attention and kind is not LayerKind.CROSS:
        yield from _attention(f"{prefix}.encoder_attn", s, cross=True)
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

    def add(entry: _Entry, layers: tuple[int, ...] = ()) -> None:
        name, shape, comp, shard, linear, experts = entry
        groups.append(TensorGroup(
            name=name, shape=shape, component=component or comp, shard=shard, stack=stack,
            layers=layers, linear=linear, experts=experts,
        ))

    if s.vocab_size:
        rows = s.embedding_rows or s.vocab_size
        add((f"{prefix}.embed_tokens.weight", (rows, hidden), Component.EMBEDDINGS,
             Shard.VOCAB, False, 0))
    if s.position_embeddings:
        add((f"{prefix}.embed_positions.weight", (s.position_embeddings, hidden),
             Component.EMBEDDINGS, Shard.REPLICATED, False, 0))
    if s.token_types:
        add((f"{prefix}.token_type_embeddings.weight", (s.token_types, hidden),
             Component.EMBEDDINGS, Shard.REPLICATED, False, 0))
    if s.embedding_norm:
        for entry in _norm(f"{prefix}.embed_norm", hidden, s):
            add(entry)

    by_entry: dict[_Entry, list[int]] = {}
    for index in range(s.layers):
        for entry in _layer(f"{prefix}.layers.{{i}}", s, index):
            by_entry.setdefault(entry, []).append(index)
    for entry, layers in by_entry.items():
        add(entry, tuple(layers))

    if s.final_norm:
        for entry in _norm(f"{prefix}.norm", hidden, s):
            add(entry)
    if s.pooler:
        for entry in _linear(f"{prefix}.pooler.dense", hidden, hidden, Component.OTHER,
                             Shard.REPLICATED, True):
            add(entry)
    if s.vocab_size and s.lm_head and not s.tied_embeddings:
        add(("lm_head.weight", (s.vocab_size, hidden), Component.LM_HEAD, Shard.VOCAB, False,
             0))
    if s.vocab_size and s.lm_head and s.lm_head_bias:
        add(("lm_head.bias", (s.vocab_size,), Component.LM_HEAD, Shard.VOCAB, False, 0))
    for extra in s.extra:
        groups.append(_extra(extra, prefix, stack).model_copy(
            update={"component": component or extra.component}
        ))
    return groups


def model_tensors(spec: ModelSpec) -> list[TensorGroup]:
    """Every tensor of a shaped model: encoder, projector, decoder. Empty for coarse specs."""
    groups: list[TensorGroup] = []
    encoder = spec.encoder
    if encoder is not None:
        if encoder.stack is not None:
            # An encoder-only model's stack is the model: keep its breakdown.
            relabel = None if spec.family is Family.ENCODER else Component.ENCODER
            groups += stack_tensors(encoder.stack, "encoder", "encoder", relabel)
        for extra in encoder.projector:
            groups.append(_extra(extra, "projector", "projector").model_copy(
                update={"component": Component.PROJECTOR}
            ))
    if spec.decoder is not None:
        groups += stack_tensors(spec.decoder, "model", "decoder")
    return groups
