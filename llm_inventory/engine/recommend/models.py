"""What `recommend` is asked and what it answers: request and result types."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from llm_inventory.engine.capacity import CapacityPoint as CapacityPoint
from llm_inventory.engine.lora import LoraRequest
from llm_inventory.engine.mm_budget import MultimodalRequest
from llm_inventory.engine.offload import Offload
from llm_inventory.engine.placement.tiers import Tiers
from llm_inventory.engine.speculative import Speculative
from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.trust import Trust
from llm_inventory.spec.devices import Device
from llm_inventory.spec.prices import PriceCatalog

Percentile = Literal["p50", "p95"]
Objective = Literal["cost", "latency", "gpus", "throughput"]
Status = Literal["meets", "near miss", "misses"]

OBJECTIVES: dict[str, str] = {
    "cost": "plans that meet the targets first, then near misses; within each, the lowest "
            "$ per hour, then fewest GPUs",
    "latency": "plans that meet the targets first, then near misses; within each, the "
               "shortest end-to-end time at the percentile, then the lowest $ per hour",
    "gpus": "plans that meet the targets first, then near misses; within each, fewest GPUs, "
            "then the lowest $ per hour",
    "throughput": "plans that meet the targets first, then near misses; within each, the "
                  "most output tokens/s per GPU, then the lowest $ per hour",
}
NEAR = 1.2  # a near miss is within 20 % of every target


class LengthBin(BaseModel):
    """One bin of a length histogram: prompt and output tokens, and its weight."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)


class Workload(BaseModel):
    """The traffic: lengths (fixed, or a histogram), and a request rate or a concurrency."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    histogram: list[LengthBin] = Field(default_factory=list)
    qps: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    concurrency: int | None = Field(default=None, ge=1)
    prefix_share: float = Field(default=0.0, ge=0, lt=1, allow_inf_nan=False)


class Targets(BaseModel):
    """Latency targets in seconds (None: no target), held at `percentile`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpot_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    e2e_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    percentile: Percentile = "p50"


class RecommendRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model_ref: str  # the model as the user named it (for the launch command)
    devices: list[Device] = Field(min_length=1)
    count: int | None = Field(default=None, ge=1)  # most GPUs in all
    engines: list[str] = Field(default_factory=lambda: ["vllm"])
    workload: Workload
    targets: Targets = Targets()
    objective: Objective = "cost"
    prices: PriceCatalog | None = None  # None: the packaged catalog
    provider: str | None = None
    spot: bool = False
    power_price: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # $/kWh
    dtype: str | None = None
    kv_dtype: str | None = None
    seed: int = Field(default=0, ge=0)
    samples: int = Field(default=200, ge=1, le=100_000)
    limit: int | None = Field(default=None, ge=0)
    calibration: Calibration | None = None
    # pins: the split's dimensions, the context the engine is launched with (at least the
    # longest request; default the workload's longest ISL + OSL), and no disaggregated plans
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    context: int | None = Field(default=None, ge=1)
    disaggregation: bool = True
    # speculative decoding: the drafter every plan holds (None: off; engine/speculative.py)
    speculative: Speculative | None = None
    # serving features, as placement takes them (`engine/lora.py`, `engine/mm_budget.py`)
    lora: LoraRequest | None = None
    multimodal: MultimodalRequest | None = None
    # KV tiers below the GPU and the prefix each request reloads from them (engine/offload.py;
    # weights moved to host memory are placement's alone: recommend's step times read them
    # from the device)
    offload: Offload = Offload()
    # pins of the serving itself: a fixed number of replicas (load past them queues, it adds
    # none), a finite run of this many requests, and the engine's batch settings
    replicas: int | None = Field(default=None, ge=1)
    requests: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1,
                                                 allow_inf_nan=False)
    # prefill/decode pools pinned: replicas of each (None: sized to the load and targets)
    prefill_replicas: int | None = Field(default=None, ge=1)
    decode_replicas: int | None = Field(default=None, ge=1)


class Cost(BaseModel):
    """What a plan costs to rent (and, with a power price, to power)."""

    provider: str
    offer: str
    price_per_gpu_hour: float
    pricing: Literal["on-demand", "spot"]
    as_of: str
    source: str
    per_hour: float
    per_month: float  # 730 hours
    per_million_output_tokens: float | None


class Latency(BaseModel):
    """One latency figure at p50 and p95, seconds; a server that never catches up has no
    finite figure (infinite here, null in JSON)."""

    p50: float
    p95: float

    @field_validator("p50", "p95", mode="before")
    @classmethod
    def _none_is_never(cls, value: object) -> object:
        return math.inf if value is None else value

    @field_serializer("p50", "p95")
    def _finite_or_null(self, value: float) -> float | None:
        return value if math.isfinite(value) else None


class RecommendedPlan(BaseModel):
    device: str
    engine: str
    engine_version: str
    tp: int
    pp: int
    ep: int
    disaggregation: str | None = None
    label: str  # tp8 pp1 ×3 …
    gpus_per_replica: int
    replicas: int
    prefill_replicas: int | None = None  # prefill/decode pools sized apart
    decode_replicas: int | None = None
    gpus: int
    batch: int  # sequences one replica runs at once at the operating point
    batch_limit: int  # what its KV pool and max_num_seqs allow at the workload's lengths
    ttft: Latency
    tpot: Latency
    e2e: Latency
    status: Status
    misses: list[str]  # which targets or limits it misses, and by how much
    requests_per_s: float  # served by the whole deployment
    running_batch: float = 0.0  # mean sequences decoding at once per (decode) replica
    tokens_per_s_per_replica: float = 0.0  # output tokens of one replica (P/D: of one pool
    # replica, prefill and decode counted alike)
    tokens_per_s_per_gpu: float  # output tokens
    tokens_per_s_per_user: float  # 1 ÷ TPOT at p50
    cost: Cost | None
    energy_per_hour: float | None = None  # with --power-price: GPUs × TDP × price
    handoff_bytes_per_s: float | None = None  # prefill/decode KV hand-off at the rate
    handoff_limit_bytes_per_s: float | None = None  # what the links carry
    saturated: bool = False
    notes: list[str] = Field(default_factory=list)
    tiers: Tiers | None = None  # with a KV tier asked: GPU, host and disk bytes (tiers.py)


class ParetoPoint(BaseModel):
    device: str
    engine: str
    label: str
    batch: int
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    on_front: bool


class RecommendResult(BaseModel):
    schema_version: int = 1
    model: str
    workload: Workload
    targets: Targets
    objective: Objective
    order: str
    estimate: str  # how the times were obtained
    considered: int  # plans evaluated
    meeting: int
    plans: list[RecommendedPlan]
    chosen: RecommendedPlan | None
    launch: str | None  # the chosen plan's engine command
    equivalents: dict[str, str] = Field(default_factory=dict)  # the same plan, other engines
    # `launch` read back as `inventory launch` reads it, on one replica's GPUs: what the
    # engine will print at start-up with those flags (its --max-num-seqs frees memory the
    # plan, sized at the engine's default, kept for sampling and graphs)
    launch_startup: list[str] = Field(default_factory=list)
    launch_kv_tokens: int | None = None
    launch_max_concurrency: float | None = None
    pareto: list[ParetoPoint]
    capacity: list[CapacityPoint]  # the chosen plan's pool against context length
    notes: list[str] = Field(default_factory=list)
    trust: dict[str, Trust] = Field(default_factory=dict)
