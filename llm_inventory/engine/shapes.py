"""The work a pass creates: GEMM shapes, FLOPs, bytes read and arithmetic intensity.

Rules:
- Every matmul weight of shape out × in is one GEMM of M × N × K = tokens × out × in per
  copy; 2 × M × N × K FLOPs. Prefill runs M = prompt tokens per sequence; a decode step runs
  M = batch (one new position per sequence).
- Routed experts: a token runs top_k of them, so expert GEMMs see tokens × top_k / experts
  rows each on average, and a decode step reads only the experts its batch touches:
  E × (1 − (1 − k/E)^B) of them under uniform routing.
- The lm_head computes logits only where a token is sampled: one row per sequence in
  prefill, one per sequence per decode step.
- Attention scores (QKᵀ and AV) add 2 × heads × (k_dim + v_dim) FLOPs per attended position:
  a token at position t attends min(t, window) positions (the encoder's tokens for
  cross-attention); Mamba mixers add a scan of about 6 × d_inner × d_state per token.
- Bytes read by a decode step: every weight once (routed experts only as touched; the
  embedding table only the rows looked up) plus every sequence's state.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from llm_inventory.engine import kinds
from llm_inventory.engine.experts import expected_distinct_experts
from llm_inventory.engine.params import ParameterCount
from llm_inventory.engine.tensors import TensorGroup
from llm_inventory.engine.weights import group_bytes
from llm_inventory.spec.model import Component, ModelSpec, Quantization, Stack


class Gemm(BaseModel):
    """One GEMM shape, repeated `count` times in the pass (layers, experts)."""

    name: str
    m: int
    n: int
    k: int
    count: int
    flops: int


class PhaseWork(BaseModel):
    """The work of one prefill (per sequence) or one decode step (for the whole batch)."""

    phase: Literal["prefill", "decode"]
    tokens: int  # rows the GEMMs see (prompt tokens, or the decode batch)
    sequences: int
    context: int  # positions attended by the last token
    gemms: list[Gemm]
    matmul_flops: int
    attention_flops: int
    flops: int
    flops_per_token: int
    weight_bytes_read: int
    state_bytes_read: int
    bytes_read: int
    arithmetic_intensity: float  # FLOPs per byte read
    experts_touched: float | None = None  # routed experts one MoE layer runs


def attention_flops(
    stack: Stack, *, start: int, stop: int, sequences: int, encoder_tokens: int
) -> int:
    """Score FLOPs for positions start+1 … stop of `sequences` sequences, every layer (a
    looped layer once per pass), as each layer's mixers count them (see `engine/kinds/`)."""
    total = 0
    for index in range(stack.layers):
        for kind, _ in kinds.mixers(stack, index):
            total += kind.score_flops(stack.at(index), start, stop,
                                      encoder_tokens) * stack.visits(index)
    return total * sequences


def _gemm(group: TensorGroup, rows: int, top_k: int | None) -> Gemm | None:
    if not group.linear or len(group.shape) < 2:
        return None
    out, inp = group.shape[-2], group.shape[-1]
    count = group.copies
    m = rows
    if group.experts:
        count *= group.experts
        m = -(-rows * (top_k or 1) // group.experts)
        flops = 2 * rows * (top_k or 1) * out * inp * group.copies
    else:
        flops = 2 * m * out * inp * count
    name = group.name.replace("model.layers.{i}.", "").replace(".weight", "")
    return Gemm(name=name, m=m, n=out, k=inp, count=count, flops=flops)


def _coarse_reads(params: ParameterCount, rows: int) -> tuple[int, float | None]:
    """Weight bytes a step over `rows` rows reads, and experts touched, from totals alone."""
    experts = sum(c.weight_bytes for c in params.by_component
                  if c.component is Component.EXPERTS)
    if not experts or not params.experts or not params.top_k:
        return params.weight_bytes, None
    touched = expected_distinct_experts(params.experts, params.top_k, rows)
    return int(params.weight_bytes - experts * (1 - touched / params.experts)), touched


def phase_work(
    spec: ModelSpec,
    groups: list[TensorGroup],
    *,
    phase: Literal["prefill", "decode"],
    tokens: int,
    sequences: int,
    context: int,
    state_bytes: int,
    dtype: str,
    quant: Quantization | None,
    encoder_tokens: int = 0,
    coarse: ParameterCount | None = None,
) -> PhaseWork:
    """The work of one phase on the decoder (see the module rules).

    Prefill: `tokens` prompt positions of each of `sequences` sequences. Decode: one step of a
    batch of `sequences`, each at `context` positions, holding `state_bytes` of state each.
    A coarse model (only totals known, `coarse` its counted parameters) does 2 FLOPs per
    active parameter per row and reads its weights (routed experts as the batch touches them).
    """
    stack = spec.decoder
    moe = stack.moe if stack else None
    top_k = moe.top_k if moe else None
    rows = tokens * sequences if phase == "prefill" else sequences
    gemms: list[Gemm] = []
    weight_bytes = 0
    touched: float | None = None
    for group in groups:
        if group.stack != "decoder":
            continue
        nbytes = group_bytes(group, dtype, quant)
        if group.component is Component.LM_HEAD:
            lm_rows = sequences
            gemm = _gemm(group, lm_rows, None)
            if gemm is None:  # lm_head bias
                weight_bytes += nbytes
                continue
            gemms.append(gemm)
            weight_bytes += nbytes
            continue
        if group.component is Component.EMBEDDINGS:
            if group.shape[0] > 0:  # only the looked-up rows are read
                weight_bytes += min(nbytes, -(-nbytes * rows // group.shape[0]))
            continue
        gemm = _gemm(group, rows, top_k)
        if gemm is not None:
            gemms.append(gemm)
        if group.experts and top_k:
            touched = expected_distinct_experts(group.experts, top_k, rows)
            weight_bytes += int(nbytes * touched / group.experts)
        else:
            weight_bytes += nbytes
    if stack is not None and spec.decoder is not None and stack.shaped:
        if phase == "prefill":
            attn = attention_flops(stack, start=0, stop=tokens, sequences=sequences,
                                   encoder_tokens=encoder_tokens)
        else:
            attn = attention_flops(stack, start=context - 1, stop=context,
                                   sequences=sequences, encoder_tokens=encoder_tokens)
    else:
        attn = 0
    if coarse is not None and not groups:
        weight_bytes, touched = _coarse_reads(coarse, rows)
        gemms = []
    matmul = sum(g.flops for g in gemms) if coarse is None or groups else \
        2 * coarse.active * rows
    flops = matmul + attn
    state_read = state_bytes * sequences if phase == "decode" else 0
    read = weight_bytes + state_read
    return PhaseWork(
        phase=phase,
        tokens=rows,
        sequences=sequences,
        context=context,
        gemms=gemms,
        matmul_flops=matmul,
        attention_flops=attn,
        flops=flops,
        flops_per_token=flops // max(1, rows),
        weight_bytes_read=weight_bytes,
        state_bytes_read=state_read,
        bytes_read=read,
        arithmetic_intensity=flops / read if read else 0.0,
        experts_touched=touched,
    )
