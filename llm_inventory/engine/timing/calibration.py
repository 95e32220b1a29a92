"""The constants of the calibrated time model, and how well they fit the measurements.

The figures are fitted (`tools/fit_timing.py`) on published measurements and shipped as
package data (`llm_inventory/data/timing-calibration.json`) with their provenance and the
error they showed per regime; `llm_inventory.spec.calibration` loads them. Every constant is
a mechanism, not a row: fractions of a device's peak, a per-step and per-layer overhead, the
efficiency of attention and of grouped expert GEMMs, the latency of one collective.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.trust import Trust, calibrated

if TYPE_CHECKING:
    from llm_inventory.spec.devices import Device


class DeviceEfficiency(BaseModel):
    """Achievable fractions of one device's peaks, by regime."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute: float = Field(gt=0, le=1)  # of peak dense FLOP/s in large-batch GEMMs (prefill)
    bandwidth: float = Field(gt=0, le=1)  # of peak memory bandwidth in weight and KV reads
    rows: int = Field(default=0, ge=0)  # measurements of this device the fit used
    basis: str = "fitted"  # "fitted", or where the figures come from when not
    # the measured device's catalog figures, to find the nearest one for a device with no
    # measurement (written by the fit from the device catalog)
    vendor: str | None = None
    generation: str | None = None  # compute capability major ("9"), None for other vendors
    bandwidth_bytes_per_s: float | None = Field(default=None, gt=0)
    bf16_flops: float | None = Field(default=None, gt=0)


def generation(device: Device) -> str | None:
    """A device's generation as engines pick kernels by: its compute capability's major."""
    cc = device.compute_capability
    return str(cc).split(".")[0] if cc is not None else None


def nearest_measured(device: Device, measured: dict[str, DeviceEfficiency]) -> str | None:
    """The measured device `device` borrows its efficiencies from: among those of its own
    vendor and generation (else of its vendor, else every one), the nearest by memory
    bandwidth and BF16 FLOP/s (distance of their logarithms). None when `device` lacks
    either figure or no measured device carries them."""
    bw, flops = device.memory_bandwidth_bytes_per_s, device.bf16_flops
    if not bw or not flops:
        return None
    known = {k: e for k, e in measured.items() if e.bandwidth_bytes_per_s and e.bf16_flops}
    gen = generation(device)
    pools = ([k for k, e in known.items() if e.vendor == device.vendor
              and e.generation is not None and e.generation == gen],
             [k for k, e in known.items() if e.vendor == device.vendor], list(known))
    pool = next((p for p in pools if p), [])

    def distance(k: str) -> float:
        e = known[k]
        return math.hypot(math.log(bw / (e.bandwidth_bytes_per_s or bw)),
                          math.log(flops / (e.bf16_flops or flops)))

    return min(sorted(pool), key=distance) if pool else None


class RegimeError(BaseModel):
    """How far the model lands from the measurements of one regime (relative, |model − measured|
    ÷ measured)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    regime: str
    figure: str  # what was compared (output tokens/s, TTFT, ITL …)
    rows: int
    median: float
    p90: float
    held_out: bool = False  # rows the fit did not see
    engine: str = ""  # whose rows: the engine and era that ran them ("" for every one)


class Calibration(BaseModel):
    """Fitted constants of the time model (see `engine/timing/`), with their provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = 1
    engine: str  # whose measurements the constants are fitted on
    source: str
    fitted_on: str  # which rows, which editions
    as_of: str
    devices: dict[str, DeviceEfficiency]  # by catalog id
    default: DeviceEfficiency  # for a device with no measurements
    attention: float = Field(gt=0, le=4)  # attention FLOPs run at this × the GEMM rate
    experts: float = Field(gt=0, le=4)  # routed-expert GEMMs run at this × the GEMM rate
    smoothness: float = Field(ge=1, le=16)  # (compute^n + memory^n)^(1/n) joins the bounds
    step_overhead_s: float = Field(ge=0)  # per engine step: scheduling, sampling, launch
    layer_overhead_s: float = Field(ge=0)  # per layer of a step: kernel launches
    collective_latency_s: float = Field(ge=0)  # one all-reduce or all-to-all, fixed part
    link: float = Field(gt=0, le=1)  # of a link's bandwidth a collective reaches
    server_overhead_s: float = Field(default=0.0, ge=0)  # per request behind an HTTP server
    # a step that carries only decodes replays a captured CUDA graph: per layer it pays this
    # instead of `layer_overhead_s`, per collective this instead of `collective_latency_s`
    # (None: decode steps launch like any other)
    graph_layer_overhead_s: float | None = Field(default=None, ge=0)
    graph_collective_latency_s: float | None = Field(default=None, ge=0)
    max_num_seqs: int = Field(ge=1)  # the measured engine's batch limit in these runs
    max_num_batched_tokens: int = Field(ge=1)  # … and its tokens per step
    errors: list[RegimeError] = Field(default_factory=list)
    # the engines (registry names) whose measurements the constants are fitted on
    engines: list[str] = Field(default_factory=lambda: ["trtllm"])
    # how the rows were split to measure the error on rows a fit did not see
    split: str = ""
    # the constants of each fold of that split, fitted without its held-out groups
    folds: list[Calibration] = Field(default_factory=list)
    held_out_groups: list[str] = Field(default_factory=list)  # of a fold: the groups it left out

    def efficiency(self, device_id: str) -> DeviceEfficiency:
        """The device's fitted fractions, else the default (measured devices' median)."""
        return self.devices.get(device_id, self.default)

    def borrowed_from(self, device: Device) -> str | None:
        """The measured device whose fractions `device` takes when it has none of its own
        (`nearest_measured`); None when it is measured or nothing is near."""
        if device.id in self.devices:
            return None
        return nearest_measured(device, self.devices)

    def device_efficiency(self, device: Device) -> DeviceEfficiency:
        """The device's fitted fractions; with no measurement, the nearest measured device's
        of its generation (`borrowed_from`), else the measured devices' median."""
        if device.id in self.devices:
            return self.devices[device.id]
        near = self.borrowed_from(device)
        return self.devices[near] if near is not None else self.default

    def measures(self, engine: str | None) -> bool:
        """Whether the constants were fitted on measurements of `engine` (a registry name
        such as "vllm", or a spec such as "vllm@0.19"); None: no engine asked."""
        return engine is None or engine.split("@")[0].lower() in self.engines

    def held_out(self, regime: str | None = None) -> list[RegimeError]:
        """The figures of `regime` measured on rows the fit did not see (every regime's
        when None, or when `regime` has none)."""
        unseen = [e for e in self.errors if e.held_out]
        mine = [e for e in unseen if regime is None or e.regime == regime]
        return mine or unseen

    def band(self, regime: str | None = None) -> float:
        """The error band to quote: the worst p90 relative error among the figures measured
        on rows the fit did not see, of `regime` where it has such rows, else of every
        regime (`extrapolated` then says so). 90 % of the unseen rows stay within it."""
        return max((e.p90 for e in self.held_out(regime)), default=1.0)

    def unseen_rows(self, regime: str | None = None) -> int:
        """How many unseen rows the band of `regime` was measured on (the most of any of
        its figures)."""
        return max((e.rows for e in self.held_out(regime)), default=0)

    def extrapolated(self, regime: str, device: Device | str | None,
                     engine: str | None = None) -> list[str]:
        """Why a band for `regime` on `device` (served by `engine`) lies outside what the
        unseen rows cover."""
        why = []
        if not any(e.held_out and e.regime == regime for e in self.errors):
            why.append(f"no unseen row of the {regime} regime: the band is the worst of the "
                       "other regimes'")
        device_id = device if isinstance(device, str) or device is None else device.id
        if device_id is not None and device_id not in self.devices:
            near = None if isinstance(device, str) or device is None \
                else self.borrowed_from(device)
            why.append(f"no measurement on {device_id}: " + (
                f"{near}'s efficiencies, the nearest measured device by bandwidth and "
                "FLOP/s" if near is not None else "the measured devices' median efficiencies"))
        if not self.measures(engine):
            why.append(f"no measurement of {engine}: {self.engine}'s constants")
        return why


def timing_trust(cal: Calibration, regime: str, device: Device | str | None, basis: str,
                 engine: str | None = None) -> Trust:
    """The trust label of the calibrated times in `regime` on `device` served by `engine`:
    the p90 error on rows the fit did not see, wider and `extrapolated` outside them (twice
    the band on a device with no measurement of its own)."""
    why = cal.extrapolated(regime, device, engine)
    band = cal.band(regime)
    device_id = device if isinstance(device, str) or device is None else device.id
    if why:
        if device_id is not None and device_id not in cal.devices:
            band = min(1.0, band * 2)
        basis += "; extrapolated (" + "; ".join(why) + ")"
    return calibrated(band, basis, records=cal.unseen_rows(regime),
                      coverage=f"{cal.engine}: {', '.join(sorted(cal.devices))}",
                      extrapolated=bool(why))
