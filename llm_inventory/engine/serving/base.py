"""The interface every serving engine implements: how it accounts for one device's memory.

Placement asks the engine, for each split and pipeline stage: the launch settings it resolves
(defaults included), how layers fall into stages and experts onto ranks, the padding and
runtime buffers it adds to the weights, the reserve it holds (activation peak, non-torch
memory), how much of the device becomes the KV pool and how the pool is cut (blocks, pages,
cells), what its maximum concurrency means, and the lines it prints at start-up. An engine
module implements these from the engine's own source code and cites it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine import kinds
from llm_inventory.engine.lora import LoraRequest
from llm_inventory.engine.mm_budget import MultimodalRequest
from llm_inventory.engine.offload import Offload, OffloadRules
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan
from llm_inventory.engine.speculative import Speculative
from llm_inventory.engine.state import StateLayer, layer_dtype
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

if TYPE_CHECKING:
    from llm_inventory.engine.device_weights import WeightLayout
    from llm_inventory.engine.lora import LoraRule
    from llm_inventory.engine.mm_budget import MmRule
    from llm_inventory.engine.speculative import DraftRule
    from llm_inventory.engine.trust import Trust

FlagValue = str | int | float | bool


@dataclass(frozen=True)
class ExpertPadding:
    """How a MoE kernel lays out quantized expert matrices at load time.

    The weights are created with each rank's intermediate size rounded up to a multiple of
    `intermediate` and the hidden size to `hidden` as gate_up's reduction dimension (and as
    down's output too when `hidden_out`). A swizzle then pads each packed value matrix's
    output rows to a multiple of `rows` and its reduction to `reduction_bytes` bytes, and
    each scale matrix's rows to `scale_rows` and its columns to `scale_groups`;
    `scale_copies` is 2 when the checkpoint's scales stay loaded beside the swizzled ones;
    biases are held at `bias_bits`.
    """

    intermediate: int
    hidden: int = 1
    hidden_out: bool = False
    rows: int = 1
    reduction_bytes: int = 1
    scale_rows: int = 1
    scale_groups: int = 1  # scale columns (one per quantization group) padded to a multiple
    scale_copies: int = 1
    bias_bits: int = 16


class LaunchSettings(BaseModel):
    """What a launch asks the engine for; None leaves a setting to the engine's default.

    The common settings use vLLM's names; each engine maps its own flags onto them:
    `memory_fraction` is vLLM's gpu_memory_utilization, SGLang's mem_fraction_static,
    TensorRT-LLM's free_gpu_memory_fraction; `block_size` a block, page or cell padding in
    tokens. `flags` holds the rest by the engine's own option names (`swa_full`,
    `n_gpu_layers`, `max_total_tokens` …).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    context: int
    kv_dtype: str
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    memory_fraction: float | None = None
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    dtype: str | None = None  # the model's activation dtype (vLLM V0 aligns MLA entries by it)


class EngineSettings(BaseModel):
    """The launch settings an engine resolved for one device type (its defaults filled in);
    `flags` holds its engine-specific ones, resolved too."""

    model_config = ConfigDict(frozen=True)

    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    memory_fraction: float
    kv_dtype: str
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    dtype: str | None = None  # the model's activation dtype, when the engine reads it


class LaunchCommand(BaseModel):
    """An engine's own launch command line, read back: where it runs and what it asks for.

    `context` None means the engine's default (the model's own limit, for most engines).
    `understood` lists the flags the reader used, `ignored` those it does not model (never
    fatal: an unknown flag is listed, not refused).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str  # the registry name: vllm, sglang, trtllm, llamacpp
    version: str | None = None  # when the command line says (e.g. a pinned image tag)
    model: str  # the model id or path as given
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int | None = None
    context: int | None = None
    dtype: str | None = None
    kv_dtype: str | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    memory_fraction: float | None = None
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    understood: list[str] = Field(default_factory=list)
    ignored: list[str] = Field(default_factory=list)
    speculative: Speculative | None = None  # speculative decoding asked (draft not loaded)
    lora: LoraRequest | None = None  # LoRA adapter buffers asked for (`engine/lora.py`)
    multimodal: MultimodalRequest | None = None  # multimodal limits (`engine/mm_budget.py`)
    offload: Offload | None = None  # weights and KV kept off the GPU (engine/offload.py)


class ReserveEstimate(BaseModel):
    """The reserve one worker holds, by part, in bytes. An estimate."""

    non_torch_bytes: int
    forward_peak_bytes: int
    sampler_peak_bytes: int
    activation_bytes: int
    reserve_bytes: int
    cuda_graph_bytes: int = 0  # CUDA-graph memory subtracted up front (included in reserve_bytes)
    # the encoder's profiling pass of a vision-language model (`engine/mm_budget.py`;
    # included in reserve_bytes)
    encoder_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Occupied:
    """Memory other processes hold on a device, as one engine meets it: what its KV pool
    loses (bytes) and the error it stops with at start-up (None: it starts)."""

    pool_loss_bytes: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class KvLayer:
    """One layer's state on one device: its kind, window and bytes per token (or fixed)."""

    kind: str
    window: int | None = None
    bytes_per_token: int = 0
    fixed_bytes: int = 0
    split_kv: bool = True  # held as K and V heads (False: one latent per token, as MLA)
    # Elements behind those bytes, for engines that type K and V apart (llama.cpp): K and
    # V per token on the rank (an MLA latent counts as K), and the fixed state's.
    k_elements: int = 0
    v_elements: int = 0
    fixed_elements: int = 0


def _device_layer(run: StateLayer, tp: int, dtype: str) -> KvLayer | None:
    """One layer of `run` on one TP rank (None for a layer that stores nothing)."""
    kind = kinds.get(run.kind)
    own_dtype = layer_dtype(run, dtype)
    per_token = kind.bytes_per_token(run, own_dtype, tp)
    fixed = kind.fixed_bytes(run, own_dtype, tp)
    if not per_token and not fixed:
        return None
    elements = kind.token_elements(run, tp)
    heads = kind.heads_per_device(run, tp)
    k_elements, v_elements = elements, 0
    if heads and run.k_head_dim + run.v_head_dim and heads * (
            run.k_head_dim + run.v_head_dim) == elements:
        k_elements, v_elements = heads * run.k_head_dim, heads * run.v_head_dim
    return KvLayer(kind=run.kind, window=run.window, bytes_per_token=per_token,
                   fixed_bytes=fixed, split_kv=heads is not None, k_elements=k_elements,
                   v_elements=v_elements,
                   fixed_elements=-(-run.state_elements // tp) if fixed else 0)


def device_layers_by_index(
    layers: tuple[StateLayer, ...], tp: int, dtype: str, count: int
) -> list[list[KvLayer]]:
    """Per-layer KV of one TP rank, indexed by layer (a layer may keep two kinds).

    Heads per rank are kv_heads ÷ tp, never below one; a split that does not divide the
    heads is sized as if rounded down (it is illegal anyway, and reported so elsewhere).
    """
    out: list[list[KvLayer]] = [[] for _ in range(count)]
    for run in layers:
        layer = _device_layer(run, tp, dtype)
        if layer is None:
            continue
        for index in range(run.first, min(run.first + run.count, count)):
            out[index].append(layer)
    return out


class KvCapacity(BaseModel):
    """What one device's pool holds."""

    blocks: int
    tokens: int
    max_concurrency: float
    bytes_per_token: int  # per device: what one more token of one sequence costs (all layers)
    groups: int
    request_blocks: int  # blocks one request at max_model_len needs
    page_bytes: int  # bytes of one block id
    fixed_bytes_per_request: int
    # the longest max_model_len one request fits, when one at max_model_len does not
    longest_context: int | None = None
    kv_bytes: int | None = None  # what an engine that allocates a fixed amount asks for
    # Engines that page fixed state with attention (vLLM V1): the attention block size they
    # chose, one layer's page, and one layer's fixed state before padding to that page.
    block_size: int | None = None
    layer_page_bytes: int = 0
    state_page_bytes: int = 0
    # Engines that keep each request's fixed state in slots of its own, apart from the token
    # pool (SGLang's Mamba pool): the slots (they cap concurrency), the bytes they take of
    # the pool, and the slot count at which slots and tokens hold the most requests at
    # max_model_len, with that concurrency (what the engine's slot knob can reach).
    state_slots: int = 0
    state_slot_bytes: int = 0
    state_slots_best: int | None = None
    state_slots_best_concurrency: float | None = None


class PoolLayout(ABC):
    """How one device's pool is cut for a given max_model_len."""

    page: int  # bytes of one block, page or cell id (0: nothing is paged)
    fixed: int  # bytes of fixed per-request state

    @abstractmethod
    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        """(blocks, tokens, maximum concurrency) of a pool of `pool_bytes`."""

    @abstractmethod
    def capacity(self, pool_bytes: int) -> KvCapacity:
        """The full figures of a pool of `pool_bytes`."""

    @property
    def keeps_state(self) -> bool:
        return bool(self.page or self.fixed)

    def allocated(self, pool_bytes: int) -> int:
        """Bytes the engine allocates for KV out of a pool of `pool_bytes` (all of it, for an
        engine that sizes its pool from free memory)."""
        return max(0, pool_bytes)


@dataclass(frozen=True)
class StageShape:
    """The facts of one pipeline stage on one rank an engine needs for its reserve."""

    tp: int
    pp: int
    ep: int
    stage: int
    first_stage: bool
    last_stage: bool
    has_layers: bool
    vocab: int
    hidden: int
    widest_per_token: int  # activation elements per token of the widest layer on one rank
    moe_workspace_per_token: int  # fused-MoE workspace elements per token (0: none)
    activation_bits: int
    heads: int = 0  # attention heads on one rank (score-matrix workspaces)
    head_dim: int = 0
    model_layers: int = 0  # decoder layers of the whole model
    mla: bool = False  # the stage's attention keeps an MLA latent (some engines reserve more)
    layers: int = 0  # decoder layers on this stage
    device_memory_bytes: int = 0  # the device's total memory, as the runtime reports it
    fixed_state: bool = False  # the model keeps fixed-size state (Mamba, linear attention)


@dataclass(frozen=True)
class StartupContext:
    """What the engine's start-up report reads beyond its pool: the device, and one worker's
    weights and reserve (the binding worker's)."""

    device: Device
    weight_bytes: int
    reserve: ReserveEstimate


@dataclass(frozen=True)
class StartupReport:
    """The lines an engine prints about its KV cache at start-up, and the error it stops with
    (None: it starts)."""

    lines: list[str]
    error: str | None = None


class ServingEngine(ABC):
    """One serving engine in one accounting era."""

    name: ClassVar[str]  # as --engine spells it
    versions: ClassVar[str]  # the releases whose accounting this module follows
    version: ClassVar[str]  # the release it answers for by default
    label: ClassVar[str]  # how tables name it
    summary: ClassVar[str]  # one line: what decides its KV pool
    rules: ClassVar[tuple[tuple[str, str], ...]]  # (rule, source) pairs for `inventory engines`
    calibrated_on: ClassVar[str | None] = None  # the start-ups its estimates were fitted on
    # the reserve model its eras share, which names its band in `serving/bands.py` (the
    # out-of-sample error over the start-ups of every era of that model; "" = `name`)
    reserve_group: ClassVar[str] = ""
    # the engine allocates the KV its context flags ask for (llama.cpp's -c over -np slots)
    # rather than sizing a pool from memory: the sequences a device can hold are then its
    # room over one sequence's state, whatever one launch allocated
    kv_from_context: ClassVar[bool] = False
    # releases past the newest era whose source was read but not modelled, and what they
    # change ("0.34": "..."): a warning for such a release names it
    later_releases: ClassVar[dict[str, str]] = {}
    # set on the copy `serving.get` returns for a release newer than the newest one read:
    # the newest era answers for it, and says so (None: a release inside the eras read)
    release_warning: str | None = None

    # --- settings and model facts ---------------------------------------------------------

    @abstractmethod
    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        """The engine's launch settings on `device`: `asked`, its defaults for the rest.
        Raises InputError for a flag it does not know or a value it refuses."""

    def context_limit(self, spec: ModelSpec) -> int | None:
        """The longest max_model_len the engine accepts for `spec` (None: no limit known)."""
        return spec.max_context

    def launch_context(self, spec: ModelSpec, command: LaunchCommand) -> int | None:
        """The context a command line that names none serves (by default the model's
        limit, as vLLM and SGLang take max_position_embeddings; None: unknown)."""
        return self.context_limit(spec)

    def state_layers(self, spec: ModelSpec, layers: tuple[StateLayer, ...],
                     settings: EngineSettings) -> tuple[StateLayer, ...]:
        """The state the engine keeps for `spec`, from the model's own `layers` (by default
        the same; an engine that caches a layer kind its own way says so here)."""
        return layers

    def split_limits(self, tp: int, pp: int, ep: int) -> list[str]:
        """Why the engine cannot run a split at all (none by default)."""
        return []

    def pp_partition(self, layers: int, pp: int) -> list[int]:
        """Layers per pipeline stage (vLLM's rule by default; see `engine/parallel.py`)."""
        from llm_inventory.engine.parallel import pp_partition

        return pp_partition(layers, pp)

    def expert_counts(self, experts: int, ep: int) -> list[int]:
        """Routed experts each EP rank holds (contiguous blocks, remainder to the first)."""
        from llm_inventory.engine.experts import expert_rank_counts

        return expert_rank_counts(experts, ep)

    disaggregates: ClassVar[bool] = True  # serves prefill and decode from separate pools

    def estimate_note(self, settings: EngineSettings) -> str | None:
        """What a plan's figures estimate, and how, in one sentence (None: placement's
        profiling-reserve wording)."""
        return None

    vocab_padding: ClassVar[int] = 1  # vocabulary tables padded to a multiple of this
    absorbs_mla: ClassVar[bool] = False  # keeps MLA up-projections split per head beside kv_b

    def mla_extra_bytes(self, spec: ModelSpec, kv_b_elements: int, stored_bits: int,
                        act_bits: int) -> int:
        """Bytes an MLA layer's backend keeps beside its kv_b_proj (`kv_b_elements`
        elements stored at `stored_bits`), split over TP like the heads: by default the
        up-projection split per head in the activation dtype when `absorbs_mla`."""
        return kv_b_elements * act_bits // 8 if self.absorbs_mla else 0

    def expert_padding(self, spec: ModelSpec, device: Device | None = None
                       ) -> ExpertPadding | None:
        """How expert matrices are padded at load time on `device`, when the engine does."""
        return None

    def runtime_buffer_bytes(self, spec: ModelSpec, dtype: str) -> int:
        """Buffers the engine keeps with the weights on every stage (rotary caches …)."""
        return 0

    # --- memory ---------------------------------------------------------------------------

    @abstractmethod
    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """Memory one worker holds beyond weights and the KV pool (an estimate)."""

    @abstractmethod
    def pool_bytes(
        self, device: Device, settings: EngineSettings, shape: StageShape, weight_bytes: int,
        reserve: ReserveEstimate,
    ) -> int:
        """Bytes of one worker's KV pool (may be ≤ 0: the weights leave no room)."""

    @abstractmethod
    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        """How one worker's pool is cut for its layers' state."""

    def stage_ranges(self, layers: int, pp: int,
                     settings: EngineSettings) -> list[range] | None:
        """Layer ranges the devices of each stage hold, for an engine that lays layers out
        its own way (None: `pp_partition`, every layer on some stage)."""
        return None

    def stage_weights(self, layout: WeightLayout, ranges: Sequence[range],
                      settings: EngineSettings) -> list[int] | None:
        """Weight bytes each stage's device holds, for an engine that places tensors its own
        way (None: the placement's own sharding rules)."""
        return None

    def host_share(self, layout: WeightLayout, ranges: Sequence[range], shape: StageShape,
                   settings: EngineSettings) -> tuple[range, int, int] | None:
        """(layers, weight bytes, compute-buffer bytes) the engine keeps in host RAM, for the
        stages' `ranges` (None: nothing)."""
        return None

    def host_kv_layers(self, host_layers: range, model_layers: int,
                       settings: EngineSettings) -> range:
        """The layers whose caches live in host RAM (by default those of the layers kept
        there; llama.cpp's -nkvo keeps every layer's)."""
        return host_layers

    def host_pool_layout(self, layers: Sequence[KvLayer],
                         settings: EngineSettings) -> PoolLayout:
        """How the caches kept in host RAM are laid out (by default as a device's)."""
        return self.pool_layout(layers, settings)

    def plan_startup_lines(self, capacities: Sequence[KvCapacity],
                           layouts: Sequence[PoolLayout], pools: Sequence[int], binding: int,
                           settings: EngineSettings,
                           host: PoolLayout | None = None) -> list[str] | None:
        """Start-up lines over every stage of a plan and the layers kept in host RAM, for an
        engine that prints one line per device (None: `startup`'s, the binding worker's)."""
        return None

    def binding_stage(self, measures: Sequence[tuple[int, int, float]],
                      layouts: Sequence[PoolLayout], pools: Sequence[int]) -> int:
        """The stage whose pool limits the engine: every worker sizes its own pool and the
        engine keeps the smallest (vLLM: the minimum block count over workers)."""
        keys = [(m[2] if lay.keeps_state else float("inf"), pool)
                for m, lay, pool in zip(measures, layouts, pools, strict=True)]
        return min(range(len(keys)), key=keys.__getitem__)

    # --- its own command line --------------------------------------------------------------

    # Argument prefixes that start this engine: ("vllm", "serve"),
    # ("python", "-m", "sglang.launch_server") … `inventory launch` picks the engine by them.
    programs: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # the flag that sets the state slots of `KvCapacity.state_slots` (None: none)
    state_slots_knob: ClassVar[str | None] = None

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        """Read the engine's own command line (after its program prefix). Raises InputError
        for a malformed one (a flag missing its value, a value it refuses)."""
        from llm_inventory.errors import InputError

        raise InputError("launch", f"{self.label} command lines are not read yet")

    def takes_launch_flag(self, name: str) -> bool:
        """Whether this era models the engine flag `name` that its command-line reader
        read (True unless the era says otherwise). A flag one era of an engine models and
        another does not (vLLM's enforce_eager before 0.21) is then listed as ignored by
        `inventory launch` rather than refused."""
        return True

    def options_file(self, command: LaunchCommand) -> str | None:
        """The file of further options the command line names, which the engine reads at
        start-up (TensorRT-LLM's `--extra_llm_api_options`; None: it names none). The
        caller reads it and hands its mapping to `with_options`."""
        return None

    def with_options(self, command: LaunchCommand, options: object) -> LaunchCommand:
        """`command` with the options of the file `options_file` named applied (the
        file's parsed contents; InputError for a value the engine refuses)."""
        return command

    def kv_dtype_word(self, word: str) -> dict[str, FlagValue] | None:
        """The engine flags that ask for a KV cache type in the engine's own word (llama.cpp's
        q8_0, q4_0, iq4_nl …), when `word` is one the tool's dtypes do not spell (None)."""
        return None

    def kv_bits(self, settings: EngineSettings) -> float | None:
        """Bits one KV value takes as the engine stores it, when its own cache types set it
        (block scales included); None: the KV dtype's own width."""
        return None

    def launch_lines(self, plan: LaunchPlan) -> list[LaunchLine]:
        """The processes to start for `plan` in the engine's own flags, each server line
        reading back through `parse_launch` to the plan ([]: no writer, or the plan needs
        settings the engine's command line cannot say)."""
        return []

    def on_devices(self, command: LaunchCommand, count: int) -> LaunchCommand:
        """The command as it runs when it sees `count` devices (most engines: the split it
        names, any devices beyond it running replicas)."""
        return command

    # How the engine is told its layers per pipeline stage (None: it takes no partition)
    layer_partition: ClassVar[str | None] = None

    # Whether the memory budget (its fraction) bounds all the engine holds on a device, so
    # instances can share a device by their fractions (vLLM: total × gpu_memory_utilization
    # covers weights, activations, CUDA graphs and KV); SGLang's fraction bounds weights
    # and KV only, its activations and graphs taking the rest.
    budget_bounds_use: ClassVar[bool] = False

    def occupied(self, device: Device, settings: EngineSettings,
                 others_bytes: int) -> Occupied:
        """What memory other processes already hold on the device does to this engine: the
        bytes its pool loses and the error it stops with, if any. By default the engine
        budgets its fraction of the memory it finds free (SGLang's mem_fraction_static of the
        free memory at init, TensorRT-LLM's free_gpu_memory_fraction), so the pool loses
        that fraction of what the others hold; an engine that budgets its total overrides
        this."""
        return Occupied(pool_loss_bytes=int(others_bytes * settings.memory_fraction))

    def context_fallback(self, capacity: KvCapacity, settings: EngineSettings) -> str | None:
        """What the engine does instead of failing when one request at the context does not
        fit, in a phrase (None: it refuses, or the request fits)."""
        return None

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """The error the engine stops with at start-up for this pool, in its own words, led by
        the exception it raises where it raises one (None: it starts)."""
        return None

    # --- what it prints -------------------------------------------------------------------

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        """The lines the engine prints about its KV cache at start-up, in its own words."""
        return []

    def startup(self, capacity: KvCapacity, pool_bytes: int, settings: EngineSettings,
                context: StartupContext) -> StartupReport:
        """What placement and `inventory launch` show of a start-up: by default
        `startup_lines` and `startup_error`; an engine whose lines quote its total memory,
        weights or reserve overrides this one."""
        return StartupReport(lines=self.startup_lines(capacity, pool_bytes, settings),
                             error=self.startup_error(capacity, pool_bytes, settings))

    # --- versions -------------------------------------------------------------------------

    def check_kv_dtype(self, kv_dtype: str, spec: ModelSpec, device: Device) -> None:
        """InputError when the engine cannot keep `spec`'s cache in `kv_dtype` on `device`;
        by default no cache below 8 bits."""
        from llm_inventory.errors import InputError
        from llm_inventory.units import DTYPE_BITS

        if DTYPE_BITS[kv_dtype] < 8:
            raise InputError("kv_dtype", f"{kv_dtype} is not a KV cache dtype {self.label} "
                             "offers; use bf16, fp16, fp8 or fp32")

    def claims_launch(self, argv: list[str]) -> bool:
        """Whether a command line that starts with one of `programs` is this engine's rather
        than an engine registered before it with the same programs (a fork's own flags or
        path); False by default."""
        return False

    def draft_rule(self) -> DraftRule:
        """How the engine places a speculative drafter (`engine/speculative.py`): by default
        its weights and KV inside the budget, the draft at tp 1 or the target's."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=True, kv_budgeted=True,
                         source="the drafter's weights beside the target's and its KV "
                         "layers in the same pool (generic rule)")

    def draft_cache(self, flags: dict[str, FlagValue],
                    asked: Speculative) -> dict[str, object]:
        """What a draft model's placement request changes so its cache is typed as the
        engine types a draft's (by default nothing: the target's KV dtype and flags)."""
        return {}

    def model_settings(self, settings: EngineSettings, spec: ModelSpec) -> EngineSettings:
        """The settings as the model's class changes them (vLLM's mamba cache mode for the
        classes that declare it); by default unchanged."""
        return settings

    def speculative_settings(self, settings: EngineSettings,
                             asked: Speculative) -> EngineSettings:
        """The settings as speculative decoding changes them (an engine whose pool sizing
        reads the drafts, SGLang's headroom tokens); by default unchanged."""
        return settings

    # --- serving features -------------------------------------------------------------------

    # How the engine holds LoRA adapters (`engine/lora.py`; None: not modelled for it)
    lora_rule: ClassVar[LoraRule | None] = None
    # What it reserves for a vision encoder (`engine/mm_budget.py`; None: nothing modelled)
    mm_rule: ClassVar[MmRule | None] = None

    def with_vision_factor(self, settings: EngineSettings, factor: float) -> EngineSettings:
        """`settings` with the engine's default memory fraction scaled by `factor` for a
        vision tower (an engine whose `mm_rule` scales its fraction overrides this)."""
        return settings
    def offload_rules(self) -> OffloadRules | None:
        """How the engine moves weights and KV off the GPU (`engine/offload.py`; None: not
        modelled, and placement refuses offload settings for it)."""
        return None

    def rule_trust(self, basis: str) -> Trust:
        """The label of a figure this engine's accounting decides: `engine rule`, except
        for a release past the newest era read, which another release's rules only
        estimate (`release_warning` says which)."""
        from llm_inventory.engine.trust import Trust, engine_rule  # noqa: F811 (run time)

        if self.release_warning is None:
            return engine_rule(basis)
        return Trust(kind="estimate", basis=f"{basis}; {self.release_warning}")

    def at_version(self, version: str) -> ServingEngine:
        """This era answering for one release inside its range (`--engine NAME@VERSION`);
        by default the era itself. An era whose lines or defaults vary inside its range
        returns a variant whose `version` is the one asked."""
        return self
