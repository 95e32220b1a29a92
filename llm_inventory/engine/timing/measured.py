"""Published measurements replayed through the time model: the calibration's yardstick.

A `Measurement` is one row of a published-throughput table (see the benchmark data's README:
`regime`, `figures` whose keys carry unit and statistic, the settings of the run). `replay`
predicts the row's figures from the model, the device and the calibration, the way the run
was set up:
- `batch1`: one prompt alone, its time to first token;
- `fixed_batch_throughput`: static batching at the stated batch, output tokens/s per GPU;
- `online_poisson_rate`, `saturation_burst`: a continuous-batching server at the stated
  request rate (a finite run of `num_requests` past capacity), mean TTFT and ITL and output
  tokens/s;
- `concurrency_sweep`: a closed loop of the stated users who start together, TTFT and ITL;
  genai-perf/AIPerf measures a steady-state window (the first wave is not counted), other
  clients every request of the run;
- `offline_max_throughput`: every request queued, output tokens/s (of the TP group, or per
  GPU: the key says which; the two are never mixed).
The KV pool is sized as the measured engine sized it in these runs (0.95 of the memory left
after the weights, "--kv_cache_free_gpu_mem_fraction 0.95"), by vLLM's accounting with
gpu_memory_utilization 0.95: the two agree within the activation reserve.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

#: Catalog ids of the tables' GPU classes.
GPU_CLASSES = {
    "A100": "a100-80gb", "L40S": "l40s", "H100": "h100-sxm", "H200": "h200",
    "GH200": "gh200", "B200": "b200", "GB200": "gb200", "RTX6000PRO": "rtx-pro-6000",
}
#: Presets of the tables' model families (same architecture); a family with a file in the
#: benchmark data's `models/` uses that file instead (Mistral 7B: see its README).
MODEL_FAMILIES = {
    "llama-3.1-8b": "llama-3.1-8b", "llama-3.1-70b": "llama-3.1-70b",
    "llama-3.3-70b": "llama-3.1-70b", "llama-3.1-405b": "llama-3.1-405b",
    "mixtral-8x7b": "mixtral-8x7b",
    "mixtral-8x22b": "mixtral-8x22b", "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-235b-a22b": "qwen3-235b-a22b", "llama-4-scout-17b-16e": "llama-4-scout",
    "deepseek-r1": "deepseek-r1", "gpt-oss-120b": "gpt-oss-120b",
    "gpt-oss-20b": "gpt-oss-20b",
}
_DTYPES = {"fp8": "fp8", "fp16": "fp16", "bf16": "bf16", "fp4": "nvfp4"}

#: Regimes as the error report names them.
REGIMES = {
    "batch1": "batch 1", "fixed_batch_throughput": "fixed batch",
    "online_poisson_rate": "request rate", "saturation_burst": "request rate",
    "concurrency_sweep": "concurrency", "offline_max_throughput": "offline maximum",
}


class Measurement(BaseModel):
    """The fields of one published row the replay reads."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    engine: str
    harness: str = ""
    engine_version: str
    regime: str
    model_family: str
    gpu_class: str
    weight_dtype: str
    kv_cache_dtype: str | None
    gpu_count: int
    tp: int | None
    pp: int | None
    ep: int | None
    isl: int
    osl: int
    load: dict[str, Any]
    figures: dict[str, float | None]

    @property
    def edition(self) -> str:
        """Which table the row comes from: 0.9, 0.14, 0.17, 1.0, post-1.0 or nim."""
        v = self.engine_version
        if v.startswith("NIM"):
            return "nim"
        if v.startswith("not stated"):
            return "post-1.0"
        return "1.0" if v.startswith("1.0") else v.rsplit(".", 1)[0] if v.count(".") == 2 \
            else v

    @property
    def era(self) -> str:
        """The engine and era that ran the row: TensorRT-LLM's TensorRT engines (0.9–0.17),
        its PyTorch backend (1.0 and after), or the NIM container."""
        edition = self.edition
        if edition == "nim":
            return "NIM 1.8"
        if edition in ("1.0", "post-1.0"):
            return "TensorRT-LLM PyTorch"
        return "TensorRT-LLM TensorRT"

    @property
    def group(self) -> str:
        """The row's group in the held-out split: its model family on its GPU class."""
        return f"{self.model_family}/{self.gpu_class}"

    @property
    def dtype(self) -> str | None:
        return _DTYPES[self.weight_dtype.lower()]

    @property
    def kv_dtype(self) -> str | None:
        """The row's KV dtype; unstated, FP8 beside 8- and 4-bit weights (the quantized
        checkpoints these tables use keep an FP8 cache), else the weights' dtype."""
        stated = (self.kv_cache_dtype or "").lower()
        if stated.startswith("fp8"):
            return "fp8"
        return "fp8" if self.dtype in ("fp8", "nvfp4") else self.dtype

    @property
    def split(self) -> tuple[int, int, int]:
        """(tp, pp, ep); "DEPn" (attention data-parallel, experts over n) is tp 1, ep n."""
        pp = self.pp or 1
        if self.tp is None:
            return 1, pp, self.gpu_count // pp
        return self.tp, pp, self.ep or 1

    @property
    def regime_name(self) -> str:
        return REGIMES[self.regime]


class Replayed(BaseModel):
    """One figure of a row: measured, predicted, relative error."""

    id: str
    regime: str
    edition: str
    era: str = ""
    group: str = ""
    device: str
    model: str
    figure: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return abs(self.predicted - self.measured) / self.measured


class Setup:
    """The sized plan a row ran on: its facts, profile and KV capacity (memoised by the
    caller per model, device, dtypes and split)."""

    def __init__(self, spec: ModelSpec, device: Device, row: Measurement,
                 cal: Calibration, *, engine: str | None = None,
                 settings: dict[str, Any] | None = None) -> None:
        """`engine` (NAME@VERSION) and `settings` (gpu_memory_utilization, max_num_seqs,
        max_num_batched_tokens as the run set them, the engine's defaults for the rest):
        the pools as that engine sized them. Without them, as vLLM 0.19 sizes them at 0.95
        of memory with the calibration's batch limits: the accounting the constants were
        fitted with (the measured runs are TensorRT-LLM's; no engine's pool is theirs
        exactly)."""
        from llm_inventory.engine.placement.candidates import Shape
        from llm_inventory.engine.placement.facts import model_facts
        from llm_inventory.engine.placement.fit import size
        from llm_inventory.engine.placement.models import PlacementRequest
        from llm_inventory.engine.timing.profile import work_profile

        tp, pp, ep = row.split
        if engine is None:
            limits: dict[str, Any] = {
                "gpu_memory_utilization": 0.95, "max_num_seqs": cal.max_num_seqs,
                "max_num_batched_tokens": cal.max_num_batched_tokens}
        else:
            limits = {k: v for k, v in (settings or {}).items()
                      if k in ("gpu_memory_utilization", "max_num_seqs",
                               "max_num_batched_tokens")}
        self.facts = model_facts(spec, PlacementRequest(
            engine=engine or "vllm@0.19", device=device, count=row.gpu_count, tp=tp, pp=pp,
            ep=ep, context=4096, dtype=row.dtype, kv_dtype=row.kv_dtype, **limits,
            allow_long_context=True, per_node=max(row.gpu_count, device.devices_per_node or 1)))
        self.sized = size(self.facts, Shape(tp=tp, pp=pp, ep=ep), [], [])
        self.profile = work_profile(self.facts, tp, pp, ep)
        self._held: dict[int, float] = {}

    def capacity(self, context: int) -> float:
        """Sequences at `context` the replica's pools hold at once (every attention group)."""
        if context in self._held:
            return self._held[context]
        facts, sized = self.facts, self.sized
        if not all(p > 0 for p in sized.pools):
            return 0.0
        settings = facts.settings.model_copy(update={"max_model_len": context})
        held = math.inf
        for stage, pool in zip(sized.ranges, sized.pools, strict=True):
            layout = facts.engine.pool_layout(facts.kv_layers(sized.shape.tp, stage.start,
                                                              stage.stop), settings)
            if layout.keeps_state:
                held = min(held, layout.measure(pool)[2])
        groups = self.profile.attention_groups if self.profile else 1
        self._held[context] = min(float(facts.settings.max_num_seqs), held) * groups
        return self._held[context]


def replay(row: Measurement, setup: Setup, cal: Calibration) -> list[Replayed]:
    """The row's figures, predicted (see the module rules); empty when the plan cannot run
    (the weights leave no KV pool, or the device lacks figures)."""
    from llm_inventory.engine.timing.serving import offline, prefill_alone, serve, static_batch

    p = setup.profile
    if p is None:
        return []
    chunk = cal.max_num_batched_tokens
    found: dict[str, float] = {}
    load = row.load
    requests = load.get("num_requests")
    if row.regime == "batch1" and row.edition != "nim":
        found["ttft_ms"] = 1000 * prefill_alone(p, cal, row.isl, 1 << 40)
    elif row.regime == "fixed_batch_throughput":
        found["output_tok_s_per_gpu"] = static_batch(p, cal, int(load["batch_size"]),
                                                     row.isl, row.osl) / row.gpu_count
    else:
        cap = setup.capacity(row.isl + row.osl)
        if cap < 1:
            return []
        rate = load.get("request_rate_qps")
        if row.regime in ("offline_max_throughput", "saturation_burst"):
            tokens = offline(p, cal, isl=row.isl, osl=row.osl, cap=cap, chunk=chunk,
                             requests=requests if isinstance(requests, int) else None)
            found["output_tok_s_total"] = tokens
            found["output_tok_s_per_gpu"] = tokens / row.gpu_count
        else:
            users = load.get("concurrency")
            steady = "perf" in row.harness.lower()  # genai-perf, AIPerf: a stable window
            served = serve(p, cal, isl=row.isl, osl=row.osl, cap=cap, chunk=chunk,
                           rate=float(rate) if isinstance(rate, int | float) else None,
                           concurrency=float(users) if users else None,
                           requests=requests if isinstance(requests, int) else None,
                           warmup=int(users) if users and steady else 0)
            found.update(ttft_ms_mean=1000 * served.ttft_s, itl_ms_mean=1000 * served.tpot_s,
                         ttft_ms=1000 * served.ttft_s, itl_ms=1000 * served.tpot_s,
                         output_tok_s_total=served.output_tokens_per_s)
    out = []
    for key, measured in row.figures.items():
        if key in found and measured:
            out.append(Replayed(id=row.id, regime=row.regime_name, era=row.era, group=row.group,
                                edition=row.edition,
                                device=p.device.id, model=row.model_family, figure=key,
                                measured=float(measured), predicted=found[key]))
    return out


#: The kind of row a replayer sizes (`Measurement` or a subclass of it).
M = TypeVar("M", bound="Measurement")


class Replayer(Generic[M]):
    """Rows with their sized setups, memoised per model, device, dtypes and split (`key`),
    so the fit can replay them under many calibrations. `spec_for(family)` gives a row's
    model (None: no description; the row is counted in `skipped`)."""

    def __init__(self, rows: list[M], spec_for: Callable[[str], ModelSpec | None],
                 cal: Calibration) -> None:
        from llm_inventory.spec.devices import resolve_device

        self.rows: list[tuple[M, Setup]] = []
        self.skipped: dict[str, int] = {}
        specs: dict[str, ModelSpec | None] = {}
        setups: dict[tuple[Any, ...], Setup] = {}
        for row in rows:
            if row.model_family not in specs:
                specs[row.model_family] = spec_for(row.model_family)
            spec = specs[row.model_family]
            if spec is None:
                self.skipped[row.model_family] = self.skipped.get(row.model_family, 0) + 1
                continue
            device = resolve_device(self.device_id(row))
            key = self.key(row, device.id)
            if key not in setups:
                setups[key] = self.setup(spec, device, row, cal)
            self.rows.append((row, setups[key]))

    def device_id(self, row: M) -> str:
        return GPU_CLASSES[row.gpu_class]

    def key(self, row: M, device_id: str) -> tuple[Any, ...]:
        """What sizes a row's setup: rows alike in it share one."""
        return (row.model_family, device_id, row.dtype, row.kv_dtype, row.split,
                row.gpu_count)

    def setup(self, spec: ModelSpec, device: Device, row: M, cal: Calibration) -> Setup:
        return Setup(spec, device, row, cal)

    def replay_row(self, row: M, setup: Setup, cal: Calibration) -> list[Replayed]:
        return replay(row, setup, cal)

    def replay(self, cal: Calibration) -> list[Replayed]:
        found: list[Replayed] = []
        for row, setup in self.rows:
            found += self.replay_row(row, setup, cal)
        return found
