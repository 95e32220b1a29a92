"""Every split of a model over N devices: legal or not and why, and whether it fits.

Splits: tensor (TP), pipeline (PP), expert (EP, MoE only: experts spread over the TP × DP
ranks of an engine instance, each expert whole), data (DP: instances), encoder
disaggregation and prefill/decode disaggregation. The rules follow the serving engines
(vLLM), not tidier ones:

- TP shards attention heads, MLP columns and vocabulary (padded to a multiple of 64);
  norms and routers are replicated. KV heads shard while tp ≤ kv_heads and are replicated
  beyond (with their k/v projection weights); an MLA latent is whole on every rank.
- PP gives each stage layers // pp layers and the remainder one each to the stages before
  the last, which also holds the final norm and lm_head (and, with tied embeddings, a copy
  of the embedding); embeddings and the encoder sit on the first stage.
- EP gives each rank experts // ep experts and the first experts % ep ranks one more; the
  fullest rank sets the memory; uneven placement is legal unless even placement is asked.
- Memory per device: usable = memory × gpu_memory_utilization; KV pool = usable − weights
  − reserve (see `memory.py`, an estimate); the engine sizes the pool on every worker and
  keeps the smallest block count.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine import kinds
from llm_inventory.engine.device_weights import weight_layout
from llm_inventory.engine.kv_pool import (
    KvLayer,
    PoolLayout,
    device_layers_by_index,
    longest_context,
    pool_layout,
)
from llm_inventory.engine.memory import ReserveEstimate, ReserveModel, estimate_reserve
from llm_inventory.engine.model_state import context_notes, state_layers
from llm_inventory.engine.parallel import pp_partition
from llm_inventory.engine.params import count_parameters, runtime_quantization
from llm_inventory.engine.roofline import Efficiency, Timing, roofline
from llm_inventory.engine.routing import expected_distinct_experts, expert_rank_counts
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.engine.tensors import TensorGroup, model_tensors
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec, Stack
from llm_inventory.units import DTYPE_BITS, normalize_dtype

GIB = 2**30
VOCAB_PADDING = 64  # vLLM pads vocabulary tables to a multiple of 64 rows


class PlacementRequest(BaseModel):
    """The devices, the split pins and the workload a placement search runs for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: Device
    count: int = Field(ge=1)
    per_node: int | None = Field(default=None, ge=1)
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    context: int = Field(default=8000, ge=1)  # max_model_len
    concurrency: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    block_size: int = Field(default=16, ge=1)
    dtype: str | None = None
    kv_dtype: str | None = None
    even_experts: bool = False
    allow_cross_node_tp: bool = False
    legal_only: bool = False
    limit: int = Field(default=50, ge=0)  # 0: every plan
    reserve: ReserveModel = ReserveModel()
    batch: int | None = Field(default=None, ge=1)  # decode batch for timings (default: fit)
    prompt_tokens: int | None = Field(default=None, ge=1)  # prefill length for timings
    efficiency: Efficiency = Efficiency()


class StageFit(BaseModel):
    """One pipeline stage's devices: what each holds."""

    stage: int
    layers: int
    weight_bytes: int
    reserve_bytes: int
    kv_pool_bytes: int
    kv_blocks: int
    kv_capacity_tokens: int


class DeviceFit(BaseModel):
    """The binding device of a plan (the stage with the fewest KV blocks), in bytes."""

    memory_bytes: int
    usable_bytes: int
    weight_bytes: int
    reserve_bytes: int
    reserve: ReserveEstimate
    kv_pool_bytes: int
    kv_capacity_tokens: int
    kv_blocks: int
    kv_bytes_per_token: int
    state_bytes_per_sequence: int  # one request at `context` on this device
    workload_bytes: int  # `concurrency` requests at `context`


class Plan(BaseModel):
    tp: int
    pp: int
    ep: int
    dp: int
    devices_per_replica: int
    devices_used: int
    idle_devices: int
    disaggregation: str | None = None  # "encoder" or "prefill/decode"
    legal: bool
    reasons: list[str]
    warnings: list[str]
    fits: bool
    fits_context: bool | None
    longest_context: int | None
    max_concurrency: float | None  # per engine, as vLLM prints it
    engines: int  # engine instances: replicas × attention-DP ranks inside an EP group
    total_concurrency: float | None  # every engine together
    per_device: DeviceFit | None
    stages: list[StageFit]
    experts_per_rank: list[int] | None = None
    kv_handover_bytes: int | None = None
    timing: Timing | None = None  # roofline estimate for one replica


class WidthSummary(BaseModel):
    """One tensor-parallel width at pp 1, without disaggregation: the seed's way of asking."""

    tp: int
    legal: bool
    fits: bool
    weight_bytes: int  # per device
    state_bytes_per_sequence: int  # one request at `context`, per device
    max_concurrency: float | None
    why: str | None  # the first reason it is illegal, or why it does not fit


class PlacementResult(BaseModel):
    schema_version: int = 1
    model: str
    device: str
    device_memory_bytes: int
    count: int
    per_node: int
    context: int
    concurrency: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    weight_dtype: str
    kv_dtype: str
    estimate: str  # what is estimated, and how
    candidates: int
    legal: int
    fitting: int
    shown: int
    model_weight_bytes: int  # one whole replica's weights
    usable_bytes: int  # per device
    notes: list[str]  # facts about the request itself (a context past the model's)
    widths: list[WidthSummary]
    plans: list[Plan]


# --- one candidate ---------------------------------------------------------------------------


@dataclass
class _Candidate:
    tp: int
    pp: int
    ep: int
    dp: int
    group: int  # devices across one pipeline stage of an instance (tp, or ep with EP)
    disaggregation: str | None = None
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stage_weights: list[int] = field(default_factory=list)
    stage_reserve: list[ReserveEstimate] = field(default_factory=list)
    stage_layouts: list[PoolLayout] = field(default_factory=list)
    stage_measures: list[tuple[int, int, float]] = field(default_factory=list)
    stage_pools: list[int] = field(default_factory=list)
    stage_layers: list[int] = field(default_factory=list)
    binding: int = 0
    fits: bool = False
    concurrency: float | None = None
    experts_per_rank: list[int] | None = None

    @property
    def devices(self) -> int:
        return self.group * self.pp


class _Search:
    """Shared, cached pieces of one placement search."""

    def __init__(self, spec: ModelSpec, request: PlacementRequest) -> None:
        self.spec = spec
        self.request = request
        device = request.device
        large = device.memory_bytes >= 70 * GIB and "a100" not in device.id
        self.batched = request.max_num_batched_tokens or (8192 if large else 2048)
        self.seqs = request.max_num_seqs or (1024 if large else 256)
        self.per_node = request.per_node or device.devices_per_node or request.count
        self.usable = int(device.memory_bytes * request.gpu_memory_utilization)
        params = count_parameters(spec, request.dtype)
        self.weight_dtype = params.weight_dtype
        quant = spec.quantization
        if request.dtype is not None:
            wanted = normalize_dtype(request.dtype, "dtype")
            quant = runtime_quantization(wanted) if DTYPE_BITS[wanted] < 16 else None
        self.quant = quant
        # A checkpoint's own tensors, as stored, unless the weights are re-typed at load.
        self.layout = weight_layout(spec, self.weight_dtype, quant, request.dtype is None)
        self.kv_dtype = normalize_dtype(request.kv_dtype or spec.dtype, "kv_dtype")
        if DTYPE_BITS[self.kv_dtype] < 8:
            raise InputError("kv_dtype", f"{self.kv_dtype} is not a KV cache dtype engines "
                             "offer; use bf16, fp16, fp8 or fp32")
        base = normalize_dtype(spec.dtype)
        self.act_bits = DTYPE_BITS[base] if DTYPE_BITS[base] >= 16 else 16
        self.state = state_layers(spec)
        stack = spec.decoder
        self.stack = stack
        self.layers = stack.layers if stack is not None else 1
        self.moe = stack.moe if stack is not None else None
        coarse = spec.coarse
        self.experts = (self.moe.experts if self.moe else coarse.experts
                        if coarse and coarse.experts else 0)
        self.has_encoder = spec.encoder is not None and spec.family.decodes
        self.dense_mlp = stack is not None and stack.mlp != "none" and (
            self.moe is None or any(not self.moe.is_moe_layer(i) for i in range(self.layers)))

    @lru_cache(maxsize=1)  # noqa: B019 - the search object lives for one call
    def groups(self) -> list[TensorGroup]:
        return model_tensors(self.spec) if self.spec.coarse is None else []

    def expert_bytes(self, tp: int, ep: int) -> float:
        """Routed-expert bytes one rank holds over all its stages' layers."""
        layout = self.layout
        if layout.padded_experts is not None:
            return layout.padded_experts.rank_bytes(tp, ep, 0, self.layers)
        share = _fullest(self.experts, ep) / self.experts if ep > 1 and self.experts \
            else 1 / tp
        if layout.coarse_total is not None:
            return layout.coarse_experts * share
        return sum(layout.expert) * share

    # ---- legality -------------------------------------------------------------------------

    def reasons(self, tp: int, pp: int, ep: int) -> tuple[list[str], list[str]]:
        """Why a split is illegal, and what to warn about when it is legal."""
        parts = (self._tp_reasons(tp), self._pp_reasons(pp), self._ep_reasons(tp, ep))
        return ([r for part in parts for r in part[0]], [w for part in parts for w in part[1]])

    @lru_cache(maxsize=1024)  # noqa: B019 - the search object lives for one call
    def _tp_reasons(self, tp: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        reasons: list[str] = []
        warnings: list[str] = []
        s = self.stack
        if s is not None:
            for kind in kinds.present(s):
                more, warn = kind.tp_limits(s, tp)
                reasons += [r for r in more if r not in reasons]
                warnings += [w for w in warn if w not in warnings]
        if s is not None and s.intermediate_size and self.dense_mlp and (
                s.intermediate_size % tp):
            reasons.append(f"tp {tp} does not divide the MLP intermediate size "
                           f"{s.intermediate_size}")
        if tp > self.per_node:
            if self.request.allow_cross_node_tp:
                warnings.append(f"tp {tp} spans nodes of {self.per_node} devices")
            else:
                reasons.append(f"tp {tp} spans nodes of {self.per_node} devices "
                               "(--allow-cross-node-tp permits it)")
        return tuple(reasons), tuple(warnings)

    @lru_cache(maxsize=1024)  # noqa: B019 - the search object lives for one call
    def _pp_reasons(self, pp: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if pp > self.layers:
            return (f"pp {pp} exceeds the {self.layers} layers",), ()
        if self.layers % pp:
            sizes = pp_partition(self.layers, pp)
            return (), ("uneven pipeline stages: " + "/".join(map(str, sizes))
                        + " layers (vLLM gives the remainder to the middle stages)",)
        return (), ()

    @lru_cache(maxsize=4096)  # noqa: B019 - the search object lives for one call
    def _ep_reasons(self, tp: int, ep: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        reasons: list[str] = []
        warnings: list[str] = []
        if self.moe is not None and ep == 1 and self.moe.expert_intermediate_size % tp:
            reasons.append(f"tp {tp} does not divide the expert intermediate size "
                           f"{self.moe.expert_intermediate_size}")
        if ep > 1:
            if not self.experts:
                reasons.append("expert parallelism on a dense model: there are no experts")
            else:
                if ep % tp:
                    reasons.append(f"ep {ep} is not a multiple of tp {tp}: experts spread "
                                   "over the TP × DP ranks of an instance")
                if ep > self.experts:
                    reasons.append(f"ep {ep} exceeds the {self.experts} experts")
                elif self.experts % ep:
                    counts = expert_rank_counts(self.experts, ep)
                    text = (f"{self.experts} experts do not divide evenly over ep {ep} ("
                            + "/".join(map(str, counts))
                            + " per rank; the fullest rank sets the memory)")
                    if self.request.even_experts:
                        reasons.append(text + "; --even-experts asks for even placement")
                    else:
                        warnings.append(text)
        return tuple(reasons), tuple(warnings)

    # ---- memory -----------------------------------------------------------------------------

    def _vocab_share(self, tp: int) -> float:
        vocab = self.layout.vocab
        if not vocab:
            return 1 / tp
        padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
        return -(-padded // tp) / vocab

    @lru_cache(maxsize=1024)  # noqa: B019 - the search object lives for one call
    def _device_prefix(self, tp: int, ep: int) -> tuple[float, ...]:
        """Cumulative bytes one rank holds for layers 0 … i − 1, under (tp, ep)."""
        layout, s = self.layout, self.stack
        kv_share = 1.0
        if s is not None and s.n_kv_heads and s.mla is None:
            kv_share = max(1, s.n_kv_heads // tp) / s.n_kv_heads
        expert_share = _fullest(self.experts, ep) / self.experts if ep > 1 and \
            self.experts else 1 / tp
        sums = [0.0]
        for i in range(layout.layers):
            if layout.padded_experts is not None:
                experts = layout.padded_experts.rank_bytes(tp, ep, i, i + 1)
            else:
                experts = layout.expert[i] * expert_share
            sums.append(sums[-1] + layout.split[i] / tp + layout.kv[i] * kv_share
                        + layout.rep[i] + experts)
        return tuple(sums)

    def stage_weights(self, tp: int, pp: int, ep: int) -> tuple[list[int], list[range]]:
        """Weight bytes one rank of each pipeline stage holds."""
        layout = self.layout
        ranges = _ranges(self.layers, pp)
        if layout.coarse_total is not None:
            dense = layout.coarse_total - layout.coarse_experts
            experts = layout.coarse_experts
            expert_share = experts * _fullest(self.experts, ep) / self.experts / pp \
                if ep > 1 and self.experts else experts / tp / pp
            per = int(dense / tp / pp + expert_share)
            return [per] * pp, ranges
        prefix = self._device_prefix(tp, ep)
        vocab_share = self._vocab_share(tp)
        first = (layout.first_vocab * vocab_share + layout.first_split / tp + layout.first_rep)
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
        return weights, ranges

    def reserve(self, tp: int, pp: int, ep: int, stage: int) -> ReserveEstimate:
        return self._reserve(tp, pp > 1, ep, stage == pp - 1)

    @lru_cache(maxsize=4096)  # noqa: B019 - the search object lives for one call
    def _reserve(self, tp: int, piped: bool, ep: int, last: bool) -> ReserveEstimate:
        s = self.stack
        hidden = s.hidden_size if s is not None and s.hidden_size else 0
        return estimate_reserve(
            self.request.reserve, tp=tp, pp=2 if piped else 1, last_stage=last,
            has_layers=s is not None, tokens=self.batched,
            logit_rows=min(self.seqs, self.batched), vocab=self.layout.vocab, hidden=hidden,
            widest_per_token=_widest(s, tp, ep) if s is not None else 0,
            activation_bits=self.act_bits,
            moe_workspace_per_token=self._moe_workspace(tp, ep),
        )

    def _moe_workspace(self, tp: int, ep: int) -> int:
        """Elements per token of the fused-MoE workspace (kernels that keep one)."""
        moe, s = self.moe, self.stack
        if moe is None or s is None or self.layout.padded_experts is not None:
            return 0
        inter = moe.expert_intermediate_size // (1 if ep > 1 else tp)
        up = 2 * inter if moe.gated else inter
        return moe.top_k * (max(up, s.hidden_size or 0) + inter)

    @lru_cache(maxsize=256)  # noqa: B019 - the search object lives for one call
    def _kv_by_layer(self, tp: int) -> tuple[tuple[KvLayer, ...], ...]:
        per = device_layers_by_index(self.state, tp, self.kv_dtype, self.layers)
        return tuple(tuple(layers) for layers in per)

    def kv_layers(self, tp: int, start: int, stop: int) -> tuple[KvLayer, ...]:
        """KV of one TP rank for layers start … stop − 1."""
        return tuple(layer for layers in self._kv_by_layer(tp)[start:stop] for layer in layers)

    @lru_cache(maxsize=8192)  # noqa: B019 - the search object lives for one call
    def pool_layout(self, tp: int, start: int, stop: int) -> PoolLayout:
        return pool_layout(self.kv_layers(tp, start, stop),
                           block_size=self.request.block_size,
                           max_model_len=self.request.context,
                           max_num_batched_tokens=self.batched)

    def judge(self, c: _Candidate) -> None:
        """Legality: the reasons a split is refused and the warnings it carries."""
        c.reasons, c.warnings = self.reasons(c.tp, c.pp, c.ep)
        if c.devices > self.request.count:
            c.reasons.append(f"needs {c.devices} devices per replica, only "
                             f"{self.request.count} given")
        if self.experts and c.ep > 1:
            c.experts_per_rank = expert_rank_counts(self.experts, c.ep)

    def evaluate(self, c: _Candidate) -> None:
        """Memory of every stage, the binding stage, and whether the workload fits."""
        if c.stage_weights:
            return
        weights, ranges = self.stage_weights(c.tp, c.pp, c.ep)
        c.stage_weights = weights
        c.stage_layers = [len(r) for r in ranges]
        has_state = bool(self.state)
        best = 0
        best_key: tuple[float, int] | None = None
        for index, stage in enumerate(ranges):
            reserve = self.reserve(c.tp, c.pp, c.ep, index)
            pool = self.usable - weights[index] - reserve.reserve_bytes
            layout = self.pool_layout(c.tp, stage.start, stage.stop)
            measured = layout.measure(pool)
            c.stage_reserve.append(reserve)
            c.stage_pools.append(pool)
            c.stage_layouts.append(layout)
            c.stage_measures.append(measured)
            paged = layout.page or layout.fixed
            key = (measured[2] if paged else float("inf"), pool)
            if best_key is None or key < best_key:
                best, best_key = index, key
        c.binding = best
        c.concurrency = min(m[2] for m, lay in zip(c.stage_measures, c.stage_layouts,
                                                   strict=True)
                            if lay.page or lay.fixed) if has_state and any(
            lay.page or lay.fixed for lay in c.stage_layouts) else None
        weights_fit = all(p > 0 for p in c.stage_pools)
        if has_state:
            c.fits = weights_fit and (c.concurrency or 0) >= 1
        else:
            c.fits = weights_fit
        c.fits = c.fits and not c.reasons
        if has_state and c.concurrency is not None:
            c.fits = c.fits and c.concurrency * self.engines(c) >= self.request.concurrency

    @staticmethod
    def engines(c: _Candidate) -> int:
        """Engine instances: replicas, times the attention-DP ranks of an EP group."""
        return max(1, c.dp) * (c.ep // c.tp if c.ep > 1 and c.ep % c.tp == 0 else 1)


@lru_cache(maxsize=4096)
def _fullest(experts: int, ep: int) -> int:
    return max(expert_rank_counts(experts, ep))


@lru_cache(maxsize=4096)
def _ranges_cached(layers: int, pp: int) -> tuple[range, ...]:
    from llm_inventory.engine.parallel import pp_ranges

    return tuple(pp_ranges(layers, pp))


def _ranges(layers: int, pp: int) -> list[range]:
    if pp > layers:  # illegal, but still sized: one layer per stage, empty stages after
        return [range(min(i, layers), min(i + 1, layers)) for i in range(pp)]
    return list(_ranges_cached(layers, pp))


def _widest(s: Stack, tp: int, ep: int) -> int:
    """Activation elements per token of the widest layer on one rank (forward peak)."""
    hidden = s.hidden_size or 0
    mlp = 0
    if s.intermediate_size and s.mlp != "none":
        mlp = (3 if s.mlp == "gated" else 2) * s.intermediate_size // tp
    if s.moe is not None:
        width = s.moe.expert_intermediate_size // (1 if ep > 1 else tp)
        mlp = max(mlp, s.moe.top_k * (3 * width + hidden))
    mixers = max((k.activation_width(s, tp) for k in kinds.present(s)), default=0)
    return 2 * hidden + max(mixers, mlp)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _candidates(search: _Search) -> Iterator[_Candidate]:
    """The (tp, pp, ep) shapes worth judging on the devices.

    TP: every width up to a node (so illegal widths show why), and node multiples across
    nodes. PP: every depth up to 8 and every divisor of the devices left, up to one past
    the layer count. EP (MoE): tp × k for every small k ≤ 8 and every k that divides the
    devices left. A pinned dimension takes only its value.
    """
    request, count = search.request, search.request.count
    if request.tp:
        tps = [request.tp]
    else:
        tps = sorted(set(range(1, min(count, search.per_node) + 1))
                     | set(range(search.per_node * 2, count + 1, search.per_node)))
    for tp in tps:
        room = max(1, count // tp)
        if request.pp:
            pps = [request.pp]
        else:
            pps = sorted(p for p in set(range(1, min(room, 8) + 1)) | set(_divisors(room))
                         if p <= search.layers + 1)
        for pp in pps:
            left = max(1, count // (tp * pp))
            if request.ep:
                eps = [request.ep]
            elif search.experts:
                ks = set(range(1, min(left, 8) + 1)) | set(_divisors(left))
                eps = [1] + sorted(tp * k for k in ks if 1 < tp * k <= search.experts)
            else:
                eps = [1]
            for ep in eps:
                group = ep if ep > 1 else tp
                devices = group * pp
                dp = count // devices if devices <= count else 0
                yield _Candidate(tp=tp, pp=pp, ep=ep, dp=dp, group=group)
    if not search.experts and not request.ep:
        width = min(count, 8) if count > 1 else 2
        yield _Candidate(tp=1, pp=1, ep=width, dp=1, group=width)


def plan_placement(spec: ModelSpec, request: PlacementRequest) -> PlacementResult:
    """Enumerate, judge and size every split; sorted fitting first, then by devices per
    replica, then by KV capacity."""
    search = _Search(spec, request)
    judged: list[_Candidate] = []
    for candidate in _candidates(search):
        search.judge(candidate)
        if not candidate.reasons:  # illegal splits are sized only if they are shown
            search.evaluate(candidate)
        judged.append(candidate)
    judged += list(_variants(search, judged))
    legal = [c for c in judged if not c.reasons]
    fitting = [c for c in legal if c.fits]
    shown_pool = legal if request.legal_only else judged

    def order(c: _Candidate) -> tuple[int, int, int, float]:
        tokens = c.stage_measures[c.binding][1] if c.stage_measures else 0
        return (0 if c.fits else 1 if not c.reasons else 2, c.devices,
                0 if c.disaggregation is None else 1, -tokens)

    shown_pool.sort(key=order)
    limit = request.limit or len(shown_pool)
    for candidate in shown_pool[:limit]:
        search.evaluate(candidate)
    plans = [_to_plan(search, c) for c in shown_pool[:limit]]
    widths = _widths(search, judged)
    return PlacementResult(
        model=spec.name,
        device=request.device.id,
        device_memory_bytes=request.device.memory_bytes,
        count=request.count,
        per_node=search.per_node,
        context=request.context,
        concurrency=request.concurrency,
        gpu_memory_utilization=request.gpu_memory_utilization,
        max_num_batched_tokens=search.batched,
        max_num_seqs=search.seqs,
        block_size=request.block_size,
        weight_dtype=search.weight_dtype,
        kv_dtype=search.kv_dtype,
        estimate=(
            "weights and KV bytes are exact; the reserve (activation peak of a profiling "
            f"pass over {search.batched:,} tokens and {min(search.seqs, search.batched):,} "
            "sampled rows, plus non-torch memory) is an estimate calibrated on vLLM 0.19 "
            "start-ups"
        ),
        candidates=len(judged),
        legal=len(legal),
        fitting=len(fitting),
        shown=len(plans),
        model_weight_bytes=count_parameters(spec, request.dtype).weight_bytes
        if spec.checkpoint is None or request.dtype is not None
        else sum(search.stage_weights(1, 1, 1)[0]) - search.layout.buffers,
        usable_bytes=search.usable,
        notes=context_notes(spec, request.context),
        widths=widths,
        plans=plans,
    )


def _widths(search: _Search, judged: list[_Candidate]) -> list[WidthSummary]:
    """Each TP width at pp 1 (no EP, no disaggregation), in order."""
    rows = []
    for c in judged:
        if c.pp != 1 or c.ep != 1 or c.disaggregation is not None:
            continue
        search.evaluate(c)
        layers = list(search.kv_layers(c.tp, 0, search.layers))
        state = _sequence_bytes(layers, search.request.context, search.request.block_size)
        why = c.reasons[0] if c.reasons else None
        if why is None and not c.fits:
            pool = c.stage_pools[c.binding]
            why = ("the weights leave no room for the KV cache" if pool <= 0 else
                   "one request at the context does not fit" if (c.concurrency or 0) < 1
                   else "the workload's concurrency does not fit")
        rows.append(WidthSummary(
            tp=c.tp, legal=not c.reasons, fits=c.fits, weight_bytes=c.stage_weights[0],
            state_bytes_per_sequence=state,
            max_concurrency=round(c.concurrency, 2) if c.concurrency is not None else None,
            why=why))
    return sorted(rows, key=lambda r: r.tp)


def _variants(search: _Search, judged: list[_Candidate]) -> Iterator[_Candidate]:
    """Encoder and prefill/decode disaggregation of the legal shapes (sized like them)."""
    count = search.request.count
    if not search.has_encoder:
        base = next((c for c in judged if not c.reasons and c.tp == 1 and c.pp == 1
                     and c.ep == 1), None)
        if base is not None:
            yield _clone(search, base, "encoder", ["encoder disaggregation: the model has no "
                                                   "encoder stage"], base.dp)
    for c in judged:
        if c.reasons or c.disaggregation:
            continue
        if search.has_encoder and c.devices <= count - 1:
            yield _clone(search, c, "encoder", [], (count - 1) // c.devices)
        if search.state and 2 * c.devices <= count:
            yield _clone(search, c, "prefill/decode", [], count // (2 * c.devices))


def _clone(search: _Search, c: _Candidate, kind: str, reasons: list[str],
           dp: int) -> _Candidate:
    """A disaggregated variant of a sized shape: same devices per replica, `dp` replicas."""
    copy = _Candidate(tp=c.tp, pp=c.pp, ep=c.ep, dp=dp, group=c.group, disaggregation=kind,
                      reasons=list(c.reasons) + reasons, warnings=list(c.warnings),
                      stage_weights=c.stage_weights, stage_reserve=c.stage_reserve,
                      stage_layouts=c.stage_layouts, stage_measures=c.stage_measures,
                      stage_pools=c.stage_pools,
                      stage_layers=c.stage_layers, binding=c.binding,
                      fits=False, concurrency=c.concurrency,
                      experts_per_rank=c.experts_per_rank)
    pools_ok = all(p > 0 for p in c.stage_pools)
    enough = c.concurrency is None or (
        c.concurrency >= 1
        and c.concurrency * _Search.engines(copy) >= search.request.concurrency)
    copy.fits = not copy.reasons and pools_ok and enough
    return copy


def _to_plan(search: _Search, c: _Candidate) -> Plan:
    request = search.request
    b = c.binding
    cap = c.stage_layouts[b].capacity(c.stage_pools[b])
    reserve = c.stage_reserve[b]
    layers = list(search.kv_layers(c.tp, *_bounds(search, c.pp, b)))
    per_seq = _sequence_bytes(layers, request.context, request.block_size)
    fits_context = longest = None
    if search.state:
        fits_context = (c.concurrency or 0) >= 1
        if not fits_context:
            longest = min(
                longest_context(list(search.kv_layers(c.tp, *_bounds(search, c.pp, i))),
                                pool, block_size=request.block_size,
                                max_num_batched_tokens=search.batched,
                                upper=request.context)
                for i, pool in enumerate(c.stage_pools))
    devices_used = c.devices * c.dp
    if c.disaggregation == "encoder":
        devices_used += 1
    if c.disaggregation == "prefill/decode":
        devices_used *= 2
    warnings = list(c.warnings)
    idle = max(0, request.count - devices_used)
    if idle and not c.reasons:
        warnings.append(f"{idle} of {request.count} devices idle")
    timing = _timing(search, c) if not c.reasons and all(p > 0 for p in c.stage_pools) \
        else None
    handover = None
    if c.disaggregation == "prefill/decode":
        handover = size_state(StateRequest(layers=search.state, tokens=request.context,
                                           dtype=search.kv_dtype)).bytes_per_sequence
    return Plan(
        tp=c.tp, pp=c.pp, ep=c.ep, dp=c.dp, devices_per_replica=c.devices,
        devices_used=min(devices_used, request.count), idle_devices=idle,
        disaggregation=c.disaggregation, legal=not c.reasons, reasons=c.reasons,
        warnings=warnings, fits=c.fits, fits_context=fits_context, longest_context=longest,
        max_concurrency=round(c.concurrency, 4) if c.concurrency is not None else None,
        engines=_Search.engines(c),
        total_concurrency=round(c.concurrency * _Search.engines(c), 4)
        if c.concurrency is not None else None,
        per_device=DeviceFit(
            memory_bytes=request.device.memory_bytes,
            usable_bytes=search.usable,
            weight_bytes=c.stage_weights[b],
            reserve_bytes=reserve.reserve_bytes,
            reserve=reserve,
            kv_pool_bytes=max(0, c.stage_pools[b]),
            kv_capacity_tokens=cap.tokens,
            kv_blocks=cap.blocks,
            kv_bytes_per_token=cap.bytes_per_token,
            state_bytes_per_sequence=per_seq,
            workload_bytes=per_seq * request.concurrency,
        ),
        stages=[StageFit(stage=i, layers=c.stage_layers[i], weight_bytes=c.stage_weights[i],
                         reserve_bytes=c.stage_reserve[i].reserve_bytes,
                         kv_pool_bytes=max(0, c.stage_pools[i]),
                         kv_blocks=c.stage_measures[i][0],
                         kv_capacity_tokens=c.stage_measures[i][1])
                for i in range(len(c.stage_weights))],
        experts_per_rank=c.experts_per_rank,
        kv_handover_bytes=handover,
        timing=timing,
    )


def _timing(search: _Search, c: _Candidate) -> Timing | None:
    """Roofline prefill/decode for one replica of a sized, legal plan (see roofline.py).

    Decode batch: --batch, else as many requests as one engine holds at --context (at most
    max_num_seqs); weights read per step count routed experts only as the batch touches them.
    """
    from llm_inventory.engine.shapes import phase_work

    spec, request, s = search.spec, search.request, search.stack
    if s is None or not s.shaped:
        return None
    coarse = count_parameters(spec, request.dtype) if spec.coarse is not None else None
    concurrency = int(c.concurrency or 0)
    batch = request.batch or max(1, min(concurrency, search.seqs))
    prompt = request.prompt_tokens or min(1000, request.context)
    groups = search.groups()
    prefill = phase_work(spec, groups, phase="prefill", tokens=prompt, sequences=1,
                         context=prompt, state_bytes=0, dtype=search.weight_dtype,
                         quant=search.quant, coarse=coarse)
    decode = phase_work(spec, groups, phase="decode", tokens=1, sequences=batch,
                        context=request.context, state_bytes=0, dtype=search.weight_dtype,
                        quant=search.quant, coarse=coarse)
    weights = sum(c.stage_weights)
    experts = search.expert_bytes(c.tp, c.ep)
    touched = 1.0
    if search.moe is not None:
        touched = expected_distinct_experts(search.moe.experts, search.moe.top_k,
                                            batch) / search.moe.experts
    state = sum(_sequence_bytes(list(search.kv_layers(c.tp, *_bounds(search, c.pp, i))),
                                request.context, request.block_size)
                for i in range(c.pp))
    hidden = s.hidden_size or 0
    act = search.act_bits // 8
    bits = search.quant.bits if search.quant is not None else DTYPE_BITS[search.weight_dtype]
    return roofline(
        request.device, tp=c.tp, devices_per_replica=c.devices, weight_bits=int(bits),
        batch=batch, prompt_tokens=prompt, prefill_flops=prefill.flops,
        prefill_bytes_per_device=weights,
        prefill_allreduce=2 * search.layers * prompt * hidden * act,
        decode_flops=decode.flops,
        decode_bytes_per_device=int(weights - experts * (1 - touched)) + batch * state,
        decode_allreduce=2 * search.layers * batch * hidden * act,
        efficiency=request.efficiency,
    )


def _bounds(search: _Search, pp: int, stage: int) -> tuple[int, int]:
    r = _ranges(search.layers, pp)[stage]
    return r.start, r.stop


def _sequence_bytes(layers: list[KvLayer], context: int, block: int) -> int:
    """One request's state on one device at `context` tokens (paged, windows capped)."""
    total = 0
    for layer in layers:
        held = context
        if layer.window:
            held = min(context, layer.window)
        total += -(-held // block) * block * layer.bytes_per_token + layer.fixed_bytes
    return total

