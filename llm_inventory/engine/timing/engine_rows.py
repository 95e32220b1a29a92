"""Measurements of vLLM, SGLang and TensorRT-LLM outside NVIDIA's tables, replayed per engine.

An `EngineMeasurement` is one row of the engine measurements (the benchmark data's
`engine-measurements.json`, see its SOURCE.md): a published run of one engine and release,
with the launch command's layout and limits. `replay_engine` predicts the row's figures the
way the run was set up, with the pools sized as that engine and release sizes them (its
accounting era, the memory fraction and batch limits the launch set, else the engine's
defaults) and its step budget:
- `burst`: every request sent at once (a benchmark client without a rate): N users who
  start together and send one request each (`waves.closed_loop`), the server taking them
  in one at a time (`admission_s` each), mean TTFT, TPOT and throughput over the whole run;
- `concurrency_sweep`: a closed loop of C users who start together, every request counted
  (`serving.serve`);
- `offline_max_throughput`: N requests queued in the engine (`serving.offline`);
- `fixed_batch_latency`: a batch submitted together, prefilled then decoded
  (`serving.static_batch`), its latency.
Throughput is compared once per row (output tokens/s where quoted, else requests/s, else
total tokens/s: the three differ by fixed factors of the lengths).
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ConfigDict, Field

from llm_inventory.engine.timing.calibration import Calibration
from llm_inventory.engine.timing.measured import (
    _DTYPES,
    GPU_CLASSES,
    Measurement,
    Replayed,
    Replayer,
    Setup,
)
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

#: Catalog ids of the engine measurements' GPU classes.
ENGINE_GPU_CLASSES = {**GPU_CLASSES, "MI300X": "mi300x", "MI325X": "mi325x",
                      "MI355X": "mi355x", "B300": "b300", "GB300": "gb300"}

#: Regimes as the error report names them.
ENGINE_REGIMES = {
    "burst": "burst", "concurrency_sweep": "concurrency",
    "offline_max_throughput": "offline maximum", "fixed_batch_latency": "fixed batch",
}

#: The engines' names as the report prints them.
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}

#: Throughput figures, in the order a row's one throughput comparison takes them.
THROUGHPUT_KEYS = ("output_tok_s_total", "request_throughput_req_s", "total_tok_s")


class EngineMeasurement(Measurement):
    """The fields of one engine measurement the replay reads (see the module rules)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    engine_key: str
    engine_spec: str  # NAME@VERSION, as the engine registry reads it
    dp: int | None = None
    dp_attention: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    dataset: str = ""
    source: dict[str, Any] = Field(default_factory=dict)

    @property
    def dtype(self) -> str | None:
        """The weights' dtype; None: the checkpoint's own (its quantization config)."""
        w = self.weight_dtype.lower()
        return None if w == "checkpoint" else _DTYPES[w]

    @property
    def kv_dtype(self) -> str | None:
        """The KV cache's dtype as launched; None: the engine's default (the model's)."""
        stated = (self.kv_cache_dtype or "").lower()
        return "fp8" if stated.startswith("fp8") else None

    @property
    def split(self) -> tuple[int, int, int]:
        """(tp, pp, ep). SGLang's DP attention over the TP group is priced as attention
        data-parallel with the experts over every device (the closest layout the placement
        names; its MoE is tensor-parallel instead)."""
        pp = self.pp or 1
        if self.dp_attention:
            return 1, pp, self.gpu_count // pp
        return self.tp or 1, pp, self.ep or 1

    @property
    def era(self) -> str:
        return ENGINE_LABELS.get(self.engine_key, self.engine_key)

    @property
    def edition(self) -> str:
        return self.engine_spec

    @property
    def regime_name(self) -> str:
        return ENGINE_REGIMES[self.regime]

    @property
    def device_id(self) -> str:
        return ENGINE_GPU_CLASSES[self.gpu_class]


def _measured(p: Any, row: EngineMeasurement, found: dict[str, float]) -> list[Replayed]:
    out = []
    for key in THROUGHPUT_KEYS:  # one throughput comparison per row
        if row.figures.get(key) and key in found:
            out.append(Replayed(id=row.id, regime=row.regime_name, era=row.era,
                                group=row.group, edition=row.edition, device=p.device.id,
                                model=row.model_family, figure="throughput",
                                measured=float(row.figures[key] or 0), predicted=found[key]))
            break
    for key in ("ttft_ms_mean", "tpot_ms_mean", "latency_s_mean"):
        measured = row.figures.get(key)
        if measured and key in found:
            out.append(Replayed(id=row.id, regime=row.regime_name, era=row.era,
                                group=row.group, edition=row.edition, device=p.device.id,
                                model=row.model_family, figure=key, measured=float(measured),
                                predicted=found[key]))
    return out


def replay_engine(row: EngineMeasurement, setup: Setup, cal: Calibration) -> list[Replayed]:
    """The row's figures, predicted (see the module rules); empty when the plan cannot run
    (the weights leave no KV pool, or the device lacks figures)."""
    from llm_inventory.engine.timing.serving import offline, serve, static_batch
    from llm_inventory.engine.timing.waves import closed_loop

    p = setup.profile
    if p is None:
        return []
    chunk = setup.facts.settings.max_num_batched_tokens
    isl, osl = max(1, row.isl), max(1, row.osl)
    found: dict[str, float] = {}
    requests = row.load.get("num_requests")
    n = int(requests) if isinstance(requests, int | float) else None
    if row.regime == "fixed_batch_latency":
        batch = int(row.load["batch_size"])
        found["latency_s_mean"] = batch * osl / static_batch(p, cal, batch, isl, osl)
        return _measured(p, row, found)
    cap = setup.capacity(isl + osl)
    if cap < 1:
        return []
    if row.regime == "offline_max_throughput":
        out = offline(p, cal, isl=isl, osl=osl, cap=cap, chunk=chunk, requests=n)
    elif row.regime == "burst":
        users = max(1, n or 1)
        waves = closed_loop(p, cal, isl=isl, osl=osl, cap=cap, chunk=chunk, users=users,
                            requests=users, admission_s=cal.admission_s)
        # the run lasts from the burst to the last token: the window the simulation
        # measures starts at the first token, one (shortest) prefill later
        span = users / waves.requests_per_s + waves.ttft_s[0] - cal.server_overhead_s
        out = users * osl / span
        found.update(ttft_ms_mean=1000 * waves.mean_ttft_s, tpot_ms_mean=1000 * waves.tpot_s)
    else:
        users_asked = row.load.get("concurrency")
        served = serve(p, cal, isl=isl, osl=osl, cap=cap, chunk=chunk,
                       concurrency=float(users_asked) if users_asked else None, requests=n)
        out = served.output_tokens_per_s
        found.update(ttft_ms_mean=1000 * served.ttft_s, tpot_ms_mean=1000 * served.tpot_s)
    if not math.isfinite(out) or out <= 0:
        return []
    found.update(output_tok_s_total=out, request_throughput_req_s=out / osl,
                 total_tok_s=out * (isl + osl) / osl)
    return _measured(p, row, found)


class EngineReplayer(Replayer[EngineMeasurement]):
    """Engine rows with their sized setups, memoised also per engine release and launch
    limits: each row's pools as its engine and release size them."""

    def device_id(self, row: EngineMeasurement) -> str:
        return row.device_id

    def key(self, row: EngineMeasurement, device_id: str) -> tuple[Any, ...]:
        limits = tuple(sorted((k, v) for k, v in row.settings.items()
                              if isinstance(v, int | float | str)))
        return (*super().key(row, device_id), row.engine_spec, limits)

    def setup(self, spec: ModelSpec, device: Device, row: EngineMeasurement,
              cal: Calibration) -> Setup:
        return Setup(spec, device, row, cal, engine=row.engine_spec, settings=row.settings)

    def replay_row(self, row: EngineMeasurement, setup: Setup,
                   cal: Calibration) -> list[Replayed]:
        return replay_engine(row, setup, cal)


def engine_of(spec: str) -> str:
    """The registry name of an engine spec ("vllm@0.19" → "vllm")."""
    return re.split(r"@", spec, maxsplit=1)[0].lower()
