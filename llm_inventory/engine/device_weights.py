"""A model's weights on one device, reduced to per-layer bytes per sharding rule.

Placement needs, for any split, the bytes a rank holds for a range of layers: column and
row-parallel tensors divide by tp; K/V projections follow the KV heads (replicated past
their count); replicated tensors stay whole; routed experts divide by tp or sit whole on
their EP rank; vocabulary tables divide by tp after padding. Outside the layers: the
embedding (first stage), the final norm and lm_head (last stage), and the cos/sin caches
engines keep with the weights (every stage). Bytes come from the checkpoint's own tensors
when its headers were read, else from the config's tensor inventory at its quantization.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_inventory.engine.experts import expert_rank_counts
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.serving.base import ExpertPadding, ServingEngine
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.engine.weights import copy_bytes, quantized_bits
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import (
    CheckpointFacts,
    Component,
    ModelSpec,
    Quantization,
    Shard,
    TensorRole,
)
from llm_inventory.units import DTYPE_BITS, dtype_bits


@dataclass
class WeightLayout:
    """Weight bytes per layer by sharding rule, and what sits outside the layers."""

    layers: int
    split: list[int]  # column/row: divided by tp
    kv: list[int]  # K/V projections: by KV head, replicated past the head count
    rep: list[int]  # replicated
    expert: list[int]  # routed experts: divided by tp, or by experts per EP rank
    first_vocab: int = 0  # embeddings (first stage)
    first_split: int = 0
    first_rep: int = 0  # encoder and projector pieces that do not shard, positions …
    last_vocab: int = 0  # lm_head (last stage)
    last_rep: int = 0  # final norm
    tied_vocab: int = 0  # embedding bytes a last stage copies when the head is tied
    vocab: int = 0
    buffers: int = 0  # rotary caches held with the weights, every stage
    from_checkpoint: bool = False  # read from a checkpoint's tensor headers
    coarse_total: int | None = None  # coarse specs: everything splits evenly
    coarse_experts: int = 0
    padded_experts: PaddedExperts | None = None  # expert bytes recomputed per split


@dataclass(frozen=True)
class PaddedExperts:
    """Routed experts whose serving kernels pad their matrices at load time."""

    experts: int
    intermediate: int
    hidden: int
    gated: bool
    bias: bool
    pad: ExpertPadding
    quant: Quantization
    layers: frozenset[int]

    def rank_bytes(self, tp: int, ep: int, start: int, stop: int) -> float:
        """Expert bytes of one rank over layers start … stop − 1, laid out as `ExpertPadding`
        says: the per-rank intermediate and the hidden size rounded up to the kernel's
        multiples, then each matrix's values and scales padded by its swizzle."""
        pad = self.pad
        inter = _round_up(self.intermediate // (1 if ep > 1 else tp), pad.intermediate)
        hidden_in = _round_up(self.hidden, pad.hidden)
        hidden_out = hidden_in if pad.hidden_out else self.hidden
        up = 2 * inter if self.gated else inter
        bits = self._matrix_bits(up, hidden_in) + self._matrix_bits(hidden_out, inter)
        if self.bias:
            bits += (up + hidden_out) * pad.bias_bits
        experts = max(expert_rank_counts(self.experts, ep)) if ep > 1 else self.experts
        layers = sum(1 for layer in self.layers if start <= layer < stop)
        return bits / 8 * experts * layers

    def _matrix_bits(self, rows: int, reduction: int) -> float:
        """One expert matrix [rows, reduction]: its values with the swizzle's padding, its
        scales (one per group of the reduction) padded, plus the loaded copy when kept."""
        q, pad = self.quant, self.pad
        if q.group_size is None:
            return quantized_bits((rows, reduction), 1, q)
        packed = -(-int(reduction * q.bits) // 8)
        values = _round_up(rows, pad.rows) * _round_up(packed, pad.reduction_bytes) * 8
        groups = -(-reduction // q.group_size)
        scales = _round_up(rows, pad.scale_rows) * _round_up(groups, pad.scale_groups)
        if pad.scale_copies > 1:
            scales += (pad.scale_copies - 1) * rows * groups
        return values + scales * q.scale_bits


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


_KV_NAMES = ("k_proj", "v_proj", "attn_k.", "attn_v.")
_REPLICATED_NAMES = ("norm", "q_a_proj", "kv_a_proj", "router", ".gate.", "gate_inp",
                     "sinks")


def _from_checkpoint(spec: ModelSpec, facts: CheckpointFacts, act_bits: int,
                     engine: ServingEngine) -> WeightLayout:
    """Bytes per layer and sharding rule from the checkpoint's own tensors, as stored.

    Layers past the config's stack (DeepSeek-V3's multi-token-prediction layer) are left
    out: engines load them only for speculative decoding.
    """
    stack = spec.decoder
    n = stack.layers if stack is not None else 1
    layout = WeightLayout(layers=n, split=[0] * n, kv=[0] * n, rep=[0] * n, expert=[0] * n)
    layout.vocab = stack.vocab_size if stack is not None else 0
    for t in facts.tensors:
        nbytes = t.bytes or 0
        name = t.name
        if t.layer is not None:
            if t.layer >= n:
                continue
            if t.component is Component.EXPERTS:
                layout.expert[t.layer] += nbytes
            elif any(k in name for k in _KV_NAMES):
                layout.kv[t.layer] += nbytes
            elif t.role is not TensorRole.WEIGHT or any(k in name for k in _REPLICATED_NAMES) \
                    or t.component in (Component.NORMS, Component.ROUTER):
                layout.rep[t.layer] += nbytes
            else:
                layout.split[t.layer] += nbytes
            if "kv_b_proj" in name and t.role is TensorRole.WEIGHT and t.elements:
                layout.split[t.layer] += engine.mla_extra_bytes(
                    spec, t.elements, nbytes * 8 // t.elements, act_bits)
        elif t.component is Component.LM_HEAD:
            layout.last_vocab += nbytes
        elif t.component is Component.EMBEDDINGS and t.shape and layout.vocab and \
                t.shape[0] >= layout.vocab:
            layout.first_vocab += nbytes
            if stack is not None and stack.tied_embeddings:
                layout.tied_vocab += nbytes
        elif t.component is Component.NORMS:
            layout.last_rep += nbytes
        elif t.component in (Component.ENCODER, Component.PROJECTOR):
            layout.first_split += nbytes
        else:
            layout.first_rep += nbytes
    return layout


def weight_layout(spec: ModelSpec, dtype: str, q: Quantization | None,
                  engine: ServingEngine, use_checkpoint: bool = True,
                  device: Device | None = None) -> WeightLayout:
    """Weight bytes per layer and sharding rule, with what `engine` adds at load time on
    `device`: its absorbed MLA copies, its padded expert matrices and its runtime buffers."""
    stack = spec.decoder
    act_dtype = "bf16" if DTYPE_BITS[dtype] < 16 else dtype
    act_bits = dtype_bits(act_dtype)
    facts = spec.checkpoint
    pad = engine.expert_padding(spec, device) if q is not None else None
    if (use_checkpoint and facts is not None and facts.headers_read and facts.tensors
            and spec.coarse is None and not pad):
        layout = _from_checkpoint(spec, facts, act_bits, engine)
        layout.buffers = engine.runtime_buffer_bytes(spec, act_dtype)
        layout.from_checkpoint = True
        return layout
    n = stack.layers if stack is not None else 1
    layout = WeightLayout(layers=n, split=[0] * n, kv=[0] * n, rep=[0] * n, expert=[0] * n)
    if spec.coarse is not None or spec.diffusion is not None:
        # Only totals are known (a coarse spec, a diffusion pipeline's parts): they split
        # evenly over the devices, experts over the expert ranks.
        params = count_parameters(spec)
        layout.coarse_total = params.weight_bytes
        layout.coarse_experts = sum(c.weight_bytes for c in params.by_component
                                    if c.component is Component.EXPERTS)
        return layout
    moe = stack.moe if stack is not None else None
    if q is not None and pad and moe is not None and stack is not None:
        layout.padded_experts = PaddedExperts(
            experts=moe.experts, intermediate=moe.expert_intermediate_size,
            hidden=stack.hidden_size or 0, gated=moe.gated, bias=moe.expert_bias,
            pad=pad, quant=q.experts or q,
            layers=frozenset(i for i in range(stack.layers) if moe.is_moe_layer(i)),
        )
    for group in model_tensors(spec):
        if group.stack == "decoder" and group.layers:
            bucket = ("expert" if group.experts else "kv" if group.shard is Shard.KV else
                      "rep" if group.shard is Shard.REPLICATED else "split")
            target = getattr(layout, bucket)
            for layer in group.layers:
                target[layer] += copy_bytes(group, dtype, q, layer)
            if group.name.endswith("kv_b_proj.weight") and group.elements:
                # What the engine's MLA backend keeps beside kv_b_proj (vLLM: W_UK, W_UV).
                for layer in group.layers:
                    stored = copy_bytes(group, dtype, q, layer) * 8 // group.elements
                    layout.split[layer] += engine.mla_extra_bytes(spec, group.elements,
                                                                  stored, act_bits)
            continue
        nbytes = copy_bytes(group, dtype, q, None) * group.copies
        if group.component is Component.LM_HEAD:
            layout.last_vocab += nbytes
            layout.vocab = layout.vocab or group.shape[0]
        elif group.shard is Shard.VOCAB:
            layout.first_vocab += nbytes
            layout.vocab = group.shape[0]
            if stack is not None and stack.tied_embeddings:
                layout.tied_vocab += nbytes
        elif group.stack == "decoder" and group.name.endswith((".norm.weight", ".norm.bias")):
            layout.last_rep += nbytes
        elif group.shard in (Shard.COLUMN, Shard.ROW):
            layout.first_split += nbytes
        else:
            layout.first_rep += nbytes
    layout.buffers = engine.runtime_buffer_bytes(spec, act_dtype)
    return layout
