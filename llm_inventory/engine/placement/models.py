"""What a placement search is asked and what it answers: request and result types."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.lora import LoraFigures, LoraRequest
from llm_inventory.engine.mm_budget import MmFigures, MultimodalRequest
from llm_inventory.engine.offload import Offload
from llm_inventory.engine.placement.tiers import Tiers
from llm_inventory.engine.roofline import Efficiency, Timing
from llm_inventory.engine.serving.base import FlagValue, ReserveEstimate
from llm_inventory.engine.speculative import Speculative, SpeculativeFit
from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.trust import Trust
from llm_inventory.engine.weight_scheme import WeightScheme
from llm_inventory.spec.devices import Device

SortKey = Literal["concurrency", "devices", "kv", "throughput", "cost"]

ORDERS: dict[str, str] = {
    "throughput": "plans that fit first, then near misses by the share of the workload they "
                  "hold; within each, the highest estimated decode throughput of the whole "
                  "deployment (calibrated estimate), then fewest devices",
    "concurrency": "plans that fit first, then near misses; within each, most requests at "
                   "the context held across the deployment, then fewest devices",
    "devices": "plans that fit first, then near misses; within each, fewest devices per "
               "replica, then most requests held",
    "kv": "plans that fit first, then near misses; within each, most KV tokens across the "
          "deployment, then fewest devices",
    "cost": "plans that fit first, then near misses; within each, fewest devices needed to "
            "serve the workload, then most requests held",
}


class PlacementRequest(BaseModel):
    """The devices, the split pins, the engine and the workload a placement search runs for.

    `None` leaves a setting to the engine's default (shown in the result as resolved).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: Device
    count: int = Field(ge=1)
    per_node: int | None = Field(default=None, ge=1)
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    engine: str = "vllm"  # NAME or NAME@VERSION (`engine/serving/`); NAME: its newest era
    engine_flags: dict[str, FlagValue] = Field(default_factory=dict)  # by the engine's names
    # max_model_len; None: 8,000 (the seed's), or the engine's limit for the model if lower
    context: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=1, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    block_size: int | None = Field(default=None, ge=1)
    dtype: str | None = None
    kv_dtype: str | None = None
    even_experts: bool = False
    allow_cross_node_tp: bool = False
    allow_long_context: bool = False  # the engine may serve past the model's positions
    sort: SortKey = "throughput"
    limit: int | None = Field(default=None, ge=0)  # None or 0: every plan
    batch: int | None = Field(default=None, ge=1)  # decode batch for timings (default: fit)
    prompt_tokens: int | None = Field(default=None, ge=1)  # prefill length for timings
    # layers per pipeline stage, as VLLM_PP_LAYER_PARTITION gives them (None: the engine's
    # own even partition); needs `pp` pinned to its length and an engine that takes one
    pp_layer_partition: list[int] | None = Field(default=None, max_length=65_536)
    # memory other processes already hold on device i (bytes); devices not listed hold none
    used_bytes: list[int] = Field(default_factory=list, max_length=65_536)
    efficiency: Efficiency = Efficiency()  # of the roofline bound kept beside the estimate
    calibration: Calibration | None = None  # the time model's constants (None: packaged)
    # speculative decoding: the drafter, its tokens and the acceptance rate (None: off)
    speculative: Speculative | None = None
    # LoRA adapter buffers (`engine/lora.py`); None: LoRA off
    lora: LoraRequest | None = None
    # multimodal limits (`engine/mm_budget.py`); None: the engine's defaults for a VLM
    multimodal: MultimodalRequest | None = None
    # weights and KV kept off the GPU: host memory, disk (engine/offload.py; off by default)
    offload: Offload = Offload()


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
    others_bytes: int = 0  # memory other processes hold on this device (`used_bytes`)
    others_error: str | None = None  # the engine refuses to start beside them, in its words
    # engines that keep each request's state in slots apart from the tokens (SGLang's Mamba
    # pool): the slots (a cap on concurrency), their bytes inside kv_pool_bytes, the flag
    # that sets them, and the count at which slots and tokens hold the most requests
    state_slots: int | None = None
    state_slot_bytes: int | None = None
    state_slots_knob: str | None = None
    state_slots_best: int | None = None
    state_slots_best_concurrency: float | None = None
    # LoRA adapter buffers on this device (beside weight_bytes; `in_budget` False: the
    # engine leaves them out of its KV budget) and the vision encoder's reserve (inside
    # reserve_bytes, as `reserve.encoder_bytes`)
    lora: LoraFigures | None = None
    multimodal: MmFigures | None = None


class HostFit(BaseModel):
    """What an engine that offloads part of the model keeps in host RAM, in bytes."""

    layers: int
    weight_bytes: int
    kv_bytes: int
    compute_bytes: int
    total_bytes: int


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
    why: str | None = None  # why a legal plan does not fit
    fits_context: bool | None
    longest_context: int | None
    max_concurrency: float | None  # per engine, as the engine prints it
    engines: int  # engine instances: replicas × attention-DP ranks inside an EP group
    total_concurrency: float | None  # every engine together
    devices_needed: int | None = None  # devices this shape needs to serve the workload
    per_device: DeviceFit | None
    stages: list[StageFit]
    experts_per_rank: list[int] | None = None
    kv_handover_bytes: int | None = None
    timing: Timing | None = None  # calibrated estimate for one replica (roofline inside)
    startup: list[str] = Field(default_factory=list)  # the engine's lines, binding worker
    startup_error: str | None = None  # the error the engine stops with at start-up, if any
    host: HostFit | None = None  # engines that keep layers in host RAM (llama.cpp)
    tiers: Tiers | None = None  # with offload asked: GPU, host and disk bytes (tiers.py)
    # with --launch: the lines that start one replica, in the engine's own flags (a P/D
    # plan: both pools and the router); empty when asked for none or the engine cannot say it
    launch: list[str] = Field(default_factory=list)
    speculative: SpeculativeFit | None = None  # what the drafter adds (None: off)


class WidthSummary(BaseModel):
    """One tensor-parallel width at pp 1, without disaggregation: the seed's way of asking."""

    tp: int
    legal: bool
    fits: bool
    weight_bytes: int  # per device
    state_bytes_per_sequence: int  # one request at `context`, per device
    max_concurrency: float | None
    why: str | None  # the first reason it is illegal, or why it does not fit


class RefusedSplit(BaseModel):
    """A reason some splits are illegal, once, with the splits it rules out."""

    reason: str
    splits: list[str]


class SmallestFit(BaseModel):
    """The fewest devices that serve the workload, and the shape that does it."""

    devices: int
    tp: int
    pp: int
    ep: int
    replicas: int


class WouldFit(BaseModel):
    """When nothing fits: what would, each change alone (placement asked again)."""

    devices: SmallestFit | None  # the fewest devices of this type (None: not within searched)
    devices_searched: int  # the most devices of this type tried
    longest_context: int | None  # on these devices, the longest one request fits (None: none)
    dtypes: list[str]  # weight dtypes an engine quantizes to at load that fit these devices
    kv_dtypes: list[str]  # KV cache dtypes that fit these devices
    device: str | None  # the catalog device with the least memory that fits this count
    device_memory_bytes: int | None
    searched: bool = True  # False: past the counts these searches are run for (64 devices)


class PlacementResult(BaseModel):
    schema_version: int = 1
    model: str
    device: str
    device_memory_bytes: int
    count: int
    per_node: int
    engine: str
    engine_version: str
    context: int
    context_limit: int | None  # the longest context the engine accepts for the model
    concurrency: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    weight_dtype: str  # the dtype of unquantized tensors; see `weights` for the scheme
    weights: WeightScheme
    kv_dtype: str
    estimate: str  # what is estimated, and how
    sort: SortKey
    order: str  # what "best first" means for this sort
    candidates: int
    legal: int
    fitting: int
    shown: int
    model_weight_bytes: int  # one whole replica's weights
    usable_bytes: int  # per device
    notes: list[str]  # facts about the request itself (a context past the model's)
    smallest: SmallestFit | None
    widths: list[WidthSummary]
    refused: list[RefusedSplit]
    plans: list[Plan]
    # False when the model is a generic estimate of an unmodelled architecture; `estimated`
    # then says what is estimated (and what a checkpoint's headers keep exact).
    exact: bool = True
    estimated: str | None = None
    trust: dict[str, Trust] = Field(default_factory=dict)  # how each field group was obtained
    would_fit: WouldFit | None = None  # when nothing fits and the caller asked what would
