"""The facts one placement search reuses for every split: the model's weights by layer and
sharding rule, its state layout, its experts, and the engine's settings.

Everything a split's memory depends on is computed here once, then per (tp, ep), per
(tp, layer range) or per reserve shape in explicit memo tables: the search's cost grows with
the candidates, not with candidates × layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llm_inventory.engine import kinds
from llm_inventory.engine.device_weights import WeightLayout, weight_layout
from llm_inventory.engine.dtypes import activation_dtype, kv_dtype, weight_dtypes
from llm_inventory.engine.lora import LoraRule
from llm_inventory.engine.mm_budget import MmFigures, MmRule
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.placement.models import PlacementRequest
from llm_inventory.engine.placement.tiers import rules as offload_rules
from llm_inventory.engine.serving import ServingEngine
from llm_inventory.engine.serving import get as get_engine
from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvLayer,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    StageShape,
    device_layers_by_index,
)
from llm_inventory.engine.speculative import Drafter
from llm_inventory.engine.state import StateLayer, layer_dtype
from llm_inventory.engine.weight_scheme import WeightScheme, describe_weights
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec, MoE, Quantization, Stack
from llm_inventory.units import DTYPE_BITS

DEFAULT_CONTEXT = 8000  # the seed's worked example


@dataclass
class ModelFacts:
    """A model, an engine and a request, reduced to what every split's fit reads."""

    spec: ModelSpec
    request: PlacementRequest
    engine: ServingEngine
    settings: EngineSettings
    per_node: int
    weight_dtype: str
    quant: Quantization | None
    scheme: WeightScheme
    layout: WeightLayout
    kv_dtype: str
    act_bits: int
    state: tuple[StateLayer, ...]
    stack: Stack | None
    layers: int
    moe: MoE | None
    experts: int
    has_encoder: bool
    dense_widths: list[int]  # distinct intermediate sizes of the dense MLPs, in layer order
    _prefix: dict[tuple[int, int], tuple[float, ...]] = field(default_factory=dict)
    _reserve: dict[tuple[int, int, int, bool, bool, int], ReserveEstimate] = field(
        default_factory=dict)
    _kv: dict[int, tuple[tuple[KvLayer, ...], ...]] = field(default_factory=dict)
    _pools: dict[tuple[int, int, int], PoolLayout] = field(default_factory=dict)
    _ranges: dict[int, list[range]] = field(default_factory=dict)
    _counts: dict[int, list[int]] = field(default_factory=dict)
    _stage_shapes: dict[tuple[int, int, int, int], StageShape] = field(default_factory=dict)
    _widest: dict[tuple[int, int], int] = field(default_factory=dict)
    _sequence: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    _drafters: dict[tuple[int, int], Drafter | None] = field(default_factory=dict)
    # serving features (`placement/features.py`): the engine's rules when asked for
    lora_rule: LoraRule | None = None
    mm_rule: MmRule | None = None
    _lora: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    _mm: dict[tuple[int, int], MmFigures | None] = field(default_factory=dict)

    @property
    def context(self) -> int:
        """The max_model_len every figure is quoted at (the request's, or its default)."""
        return self.settings.max_model_len

    @property
    def usable(self) -> int:
        """Bytes of a device the engine budgets (its memory fraction of the total)."""
        return int(self.request.device.memory_bytes * self.settings.memory_fraction)

    # --- layers and experts ---------------------------------------------------------------

    def ranges(self, pp: int) -> list[range]:
        """Layer index ranges of each stage, as the engine partitions them; past the layer
        count (illegal, still sized) one layer per stage and empty stages after."""
        if pp not in self._ranges:
            partition = self.request.pp_layer_partition
            own = self.engine.stage_ranges(self.layers, pp, self.settings)
            if partition is not None and len(partition) == pp:
                starts = [sum(partition[:i]) for i in range(pp)]
                own = [range(a, a + n) for a, n in zip(starts, partition, strict=True)]
            if own is not None:
                self._ranges[pp] = own
            elif pp > self.layers:
                self._ranges[pp] = [range(min(i, self.layers), min(i + 1, self.layers))
                                    for i in range(pp)]
            else:
                found, start = [], 0
                for size in self.engine.pp_partition(self.layers, pp):
                    found.append(range(start, start + size))
                    start += size
                self._ranges[pp] = found
        return self._ranges[pp]

    def expert_counts(self, ep: int) -> list[int]:
        if ep not in self._counts:
            self._counts[ep] = self.engine.expert_counts(self.experts, ep)
        return self._counts[ep]

    def expert_share(self, tp: int, ep: int) -> float:
        """The share of every routed expert's bytes one rank holds."""
        if ep > 1 and self.experts:
            return max(self.expert_counts(ep)) / self.experts
        return 1 / tp

    # --- weights --------------------------------------------------------------------------

    def _vocab_share(self, tp: int) -> float:
        vocab = self.layout.vocab
        if not vocab:
            return 1 / tp
        pad = self.engine.vocab_padding
        padded = -(-vocab // pad) * pad
        return -(-padded // tp) / vocab

    def _device_prefix(self, tp: int, ep: int) -> tuple[float, ...]:
        """Cumulative bytes one rank holds for layers 0 … i − 1, under (tp, ep)."""
        key = (tp, ep)
        if key in self._prefix:
            return self._prefix[key]
        layout, s = self.layout, self.stack
        expert_share = self.expert_share(tp, ep)
        sums = [0.0]
        padded = layout.padded_experts
        for i in range(layout.layers):
            kv_share = 1.0
            if s is not None and s.mla is None:
                heads = s.at(i).n_kv_heads
                kv_share = max(1, heads // tp) / heads if heads else 1.0
            experts = (padded.rank_bytes(tp, ep, i, i + 1) if padded is not None
                       else layout.expert[i] * expert_share)
            sums.append(sums[-1] + layout.split[i] / tp + layout.kv[i] * kv_share
                        + layout.rep[i] + experts)
        self._prefix[key] = tuple(sums)
        return self._prefix[key]

    def stage_weights(self, tp: int, pp: int, ep: int) -> list[int]:
        """Weight bytes one rank of each pipeline stage holds (the engine's extras included)."""
        return self._with_drafter(self.target_stage_weights(tp, pp, ep), tp, ep)

    def target_stage_weights(self, tp: int, pp: int, ep: int) -> list[int]:
        """`stage_weights` without a drafter's: what the target's own steps read."""
        layout = self.layout
        ranges = self.ranges(pp)
        own = self.engine.stage_weights(layout, ranges, self.settings)
        if own is not None:
            return own
        if layout.coarse_total is not None:
            dense = layout.coarse_total - layout.coarse_experts
            experts = layout.coarse_experts
            expert_part = (experts * max(self.expert_counts(ep)) / self.experts / pp
                           if ep > 1 and self.experts else experts / tp / pp)
            return [int(dense / tp / pp + expert_part)] * pp
        prefix = self._device_prefix(tp, ep)
        vocab_share = self._vocab_share(tp)
        first = layout.first_vocab * vocab_share + layout.first_split / tp + layout.first_rep
        last = layout.last_vocab * vocab_share + layout.last_rep
        if pp > 1 and layout.tied_vocab:
            last += layout.tied_vocab * vocab_share
        weights = []
        for index, stage in enumerate(ranges):
            total = prefix[stage.stop] - prefix[stage.start] + layout.buffers
            if index == 0:
                total += first
            if index == pp - 1:
                total += last
            weights.append(math.ceil(total))
        return weights

    def target_stage_reads(self, tp: int, pp: int, ep: int) -> list[int]:
        """Weight bytes one rank of each stage reads in a step: `target_stage_weights`, the
        looped layers' once more per further pass (`Stack.loop`)."""
        weights = self.target_stage_weights(tp, pp, ep)
        loop = self.stack.loop if self.stack is not None else None
        if loop is None or loop.passes < 2 or self.layout.coarse_total is not None:
            return weights
        prefix = self._device_prefix(tp, ep)
        reads = []
        for held, stage in zip(weights, self.ranges(pp), strict=True):
            lo, hi = max(stage.start, loop.start), min(stage.stop, loop.end)
            again = (prefix[hi] - prefix[lo]) * (loop.passes - 1) if hi > lo else 0
            reads.append(math.ceil(held + again))
        return reads

    def expert_reads(self, tp: int, ep: int) -> float:
        """`expert_bytes`, the looped layers' experts once more per further pass."""
        held = self.expert_bytes(tp, ep)
        loop = self.stack.loop if self.stack is not None else None
        layout = self.layout
        if (loop is None or loop.passes < 2 or layout.coarse_total is not None
                or layout.padded_experts is not None):
            return held
        looped = sum(layout.expert[loop.start:loop.end]) * self.expert_share(tp, ep)
        return held + looped * (loop.passes - 1)

    # --- speculative decoding (engine/speculative.py) --------------------------------------

    def drafter(self, tp: int, ep: int = 1) -> Drafter | None:
        """The drafter the request asks for on one rank of the last stage (memoised)."""
        key = (tp, ep)
        if key not in self._drafters:
            from llm_inventory.engine.speculative import place_drafter

            self._drafters[key] = place_drafter(self, tp, ep)
        return self._drafters[key]

    def _budgeted_drafter(self, tp: int, ep: int = 1, part: str = "kv") -> Drafter | None:
        """The drafter, when the engine budgets its `part` (kv or weights; None: no
        drafter, or that part is allocated on top)."""
        if self.request.speculative is None:
            return None
        rule = self.engine.draft_rule()
        if not (rule.kv_budgeted if part == "kv" else rule.weights_budgeted):
            return None
        return self.drafter(tp, ep)

    def _with_drafter(self, weights: list[int], tp: int, ep: int) -> list[int]:
        """Stage weights with a budgeted drafter's beside the last stage's."""
        drafter = self._budgeted_drafter(tp, ep, "weights")
        if drafter is None or not weights:
            return weights
        return [*weights[:-1], weights[-1] + drafter.weight_bytes]

    def expert_bytes(self, tp: int, ep: int) -> float:
        """Routed-expert bytes one rank holds over every layer."""
        layout = self.layout
        if layout.padded_experts is not None:
            return layout.padded_experts.rank_bytes(tp, ep, 0, self.layers)
        share = self.expert_share(tp, ep)
        if layout.coarse_total is not None:
            return layout.coarse_experts * share
        return sum(layout.expert) * share

    # --- reserve --------------------------------------------------------------------------

    def stage_shape(self, tp: int, pp: int, ep: int, stage: int) -> StageShape:
        """What an engine's reserve and pool rules read about one stage of a split
        (memoised: fit, reserve and host rules all ask for it)."""
        key = (tp, pp, ep, stage)
        found = self._stage_shapes.get(key)
        if found is None:
            s = self.stack
            found = self._stage_shapes[key] = StageShape(
                tp=tp, pp=pp, ep=ep, stage=stage, first_stage=stage == 0,
                last_stage=stage == pp - 1, has_layers=s is not None, vocab=self.layout.vocab,
                hidden=s.hidden_size if s is not None and s.hidden_size else 0,
                widest_per_token=self.widest(tp, ep),
                moe_workspace_per_token=self._moe_workspace(tp, ep),
                activation_bits=self.act_bits, layers=len(self.ranges(pp)[stage]),
                device_memory_bytes=self.request.device.memory_bytes,
                mla=s is not None and s.mla is not None,
                heads=(s.heads or 0) // tp if s is not None else 0,
                head_dim=s.k_dim if s is not None else 0, model_layers=self.layers,
                fixed_state=any(not kinds.get(run.kind).grows for run in self.state),
            )
        return found

    def widest(self, tp: int, ep: int) -> int:
        """Activation elements per token of the widest layer on one rank, per (tp, ep)."""
        key = (tp, ep)
        if key not in self._widest:
            self._widest[key] = _widest(self.stack, tp, ep) if self.stack is not None else 0
        return self._widest[key]

    def reserve(self, tp: int, pp: int, ep: int, stage: int) -> ReserveEstimate:
        """The engine's reserve on one stage (memoised on what it can depend on)."""
        key = (tp, pp, ep, stage == 0, stage == pp - 1, len(self.ranges(pp)[stage]))
        if key not in self._reserve:
            reserve = self.engine.reserve(self.stage_shape(tp, pp, ep, stage), self.settings)
            if stage == 0:
                from llm_inventory.engine.placement.features import with_encoder

                reserve = with_encoder(self, reserve, tp)
            self._reserve[key] = reserve
        return self._reserve[key]

    def _moe_workspace(self, tp: int, ep: int) -> int:
        """Elements per token of the fused-MoE workspace (kernels that keep one)."""
        moe, s = self.moe, self.stack
        if moe is None or s is None or self.layout.padded_experts is not None:
            return 0
        inter = moe.expert_intermediate_size // (1 if ep > 1 else tp)
        up = 2 * inter if moe.gated else inter
        return moe.top_k * (max(up, s.hidden_size or 0) + inter)

    # --- state ----------------------------------------------------------------------------

    def kv_layers(self, tp: int, start: int, stop: int) -> tuple[KvLayer, ...]:
        """State of one TP rank for layers start … stop − 1 (a budgeted drafter's layers
        with the last stage's)."""
        found = self.target_kv_layers(tp, start, stop)
        drafter = self._budgeted_drafter(tp) if stop >= self.layers else None
        return found + drafter.layers if drafter is not None else found

    def target_kv_layers(self, tp: int, start: int, stop: int) -> tuple[KvLayer, ...]:
        """The target model's own state of one TP rank for layers start … stop − 1."""
        if tp not in self._kv:
            per = device_layers_by_index(self.state, tp, self.kv_dtype, self.layers)
            self._kv[tp] = tuple(tuple(layers) for layers in per)
        return tuple(layer for layers in self._kv[tp][start:stop] for layer in layers)

    def pool_layout(self, tp: int, start: int, stop: int) -> PoolLayout:
        key = (tp, start, stop)
        if key not in self._pools:
            self._pools[key] = self.engine.pool_layout(self.kv_layers(tp, start, stop),
                                                       self.settings)
        return self._pools[key]

    def sequence_bytes(self, tp: int, start: int, stop: int, context: int) -> int:
        """One request's state on one rank of layers start … stop − 1 at `context` tokens,
        held as each kind holds it (windows capped, paged into blocks); memoised."""
        key = (tp, start, stop, context)
        if key in self._sequence:
            return self._sequence[key]
        total = 0
        block = self.settings.block_size
        # an engine's own cache type (llama.cpp's q8_0: 8.5 bits a value with its scales)
        own = self.engine.kv_bits(self.settings)
        scale = own / DTYPE_BITS[self.kv_dtype] if own is not None else 1.0
        for run in self.state:
            overlap = len(range(max(run.first, start), min(run.first + run.count, stop)))
            if overlap:
                kind = kinds.get(run.kind)
                held = kind.sequence_bytes(run, context, layer_dtype(run, self.kv_dtype),
                                           block, tp)
                total += overlap * (held if run.dtype or scale == 1.0
                                    else math.ceil(held * scale))
        drafter = self._budgeted_drafter(tp) if stop >= self.layers else None
        if drafter is not None:  # its layers hold the sequence's tokens too
            total += sum(-(-context // block) * block * layer.bytes_per_token
                         + layer.fixed_bytes for layer in drafter.layers)
        self._sequence[key] = total
        return total


def _dense_widths(stack: Stack | None) -> list[int]:
    """Distinct intermediate sizes of the stack's dense (not MoE) MLPs."""
    if stack is None:
        return []
    moe, found = stack.moe, []
    for index in range(stack.layers):
        s = stack.at(index)
        if s.mlp == "none" or not s.intermediate_size or (moe and moe.is_moe_layer(index)):
            continue
        if s.intermediate_size not in found:
            found.append(s.intermediate_size)
    return found


def _widest(stack: Stack, tp: int, ep: int) -> int:
    """Activation elements per token of the widest layer on one rank (forward peak)."""
    hidden = stack.hidden_size or 0
    mlp = 0
    for width in {stack.at(i).intermediate_size or 0 for i in range(stack.layers)
                  if stack.at(i).mlp != "none"}:
        mlp = max(mlp, (3 if stack.mlp == "gated" else 2) * width // tp)
    if stack.moe is not None:
        width = stack.moe.expert_intermediate_size // (1 if ep > 1 else tp)
        mlp = max(mlp, stack.moe.top_k * (3 * width + hidden))
    mixers = max((k.activation_width(s, tp) for k, s in kinds.variants(stack)), default=0)
    return 2 * hidden + max(mixers, mlp)


def model_facts(spec: ModelSpec, request: PlacementRequest) -> ModelFacts:
    """Resolve the engine, its settings and the model's weights and state for a search."""
    engine = get_engine(request.engine)
    device = request.device
    if not device.runs(engine.name):
        raise InputError("engine", f"{engine.name} does not run on {device.name}; engines "
                         f"that do: {', '.join(device.engines)}")
    offload_rules(engine, request.offload)  # InputError for offload the engine cannot do
    weight_dtype, quant = weight_dtypes(spec, request.dtype)
    own = engine.kv_dtype_word(request.kv_dtype) if request.kv_dtype else None
    if own is not None:  # the engine's own cache type: its flags ask for it (flags given win)
        request = request.model_copy(update={
            "kv_dtype": None, "engine_flags": {**own, **request.engine_flags}})
    kv = kv_dtype(spec, request.kv_dtype, serving=False)
    engine.check_kv_dtype(kv, spec, device)
    context = request.context
    if context is None:
        limit = engine.context_limit(spec)
        context = min(DEFAULT_CONTEXT, limit) if limit else DEFAULT_CONTEXT
    request = request.model_copy(update={"context": context})
    settings = engine.settings(device, LaunchSettings(
        context=context, kv_dtype=kv, max_num_batched_tokens=request.max_num_batched_tokens,
        max_num_seqs=request.max_num_seqs, block_size=request.block_size,
        memory_fraction=request.gpu_memory_utilization, flags=request.engine_flags,
        dtype=activation_dtype(spec)))
    settings = engine.model_settings(settings, spec)
    stack = spec.decoder
    layers = stack.layers if stack is not None else 1
    moe = stack.moe if stack is not None else None
    coarse = spec.coarse
    experts = (moe.experts if moe else coarse.experts if coarse and coarse.experts else 0)
    if request.speculative is not None:
        from llm_inventory.engine.speculative import check

        check(spec, request.speculative)
        settings = engine.speculative_settings(settings, request.speculative)
    from llm_inventory.engine.placement.features import feature_rules

    lora_rule, mm_rule, settings = feature_rules(spec, request, engine, settings)
    facts = ModelFacts(
        spec=spec, request=request, engine=engine, settings=settings,
        lora_rule=lora_rule, mm_rule=mm_rule,
        per_node=request.per_node or device.devices_per_node or request.count,
        weight_dtype=weight_dtype, quant=quant, scheme=describe_weights(spec, request.dtype),
        # A checkpoint's own tensors, as stored, unless the weights are re-typed at load.
        layout=weight_layout(spec, weight_dtype, quant, engine, request.dtype is None,
                             device),
        kv_dtype=kv,
        act_bits=DTYPE_BITS[activation_dtype(spec)],
        state=engine.state_layers(spec, state_layers(spec), settings), stack=stack,
        layers=layers,
        moe=moe, experts=experts,
        has_encoder=spec.encoder is not None and spec.family.decodes,
        dense_widths=_dense_widths(stack),
    )
    if request.speculative is not None:
        from llm_inventory.engine.speculative import check_rule

        check_rule(facts)
    return facts
