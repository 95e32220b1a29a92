"""The constants of the calibrated time model, and how well they fit the measurements.

The figures are fitted (`tools/fit_timing.py`) on published measurements and shipped as
package data (`llm_inventory/data/timing-calibration.json`) with their provenance and the
error they showed per regime; `llm_inventory.spec.calibration` loads them. Every constant is
a mechanism, not a row: fractions of a device's peak, a per-step and per-layer overhead, the
efficiency of attention and of grouped expert GEMMs, the latency of one collective.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DeviceEfficiency(BaseModel):
    """Achievable fractions of one device's peaks, by regime."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute: float = Field(gt=0, le=1)  # of peak dense FLOP/s in large-batch GEMMs (prefill)
    bandwidth: float = Field(gt=0, le=1)  # of peak memory bandwidth in weight and KV reads
    rows: int = Field(default=0, ge=0)  # measurements of this device the fit used
    basis: str = "fitted"  # "fitted", or where the figures come from when not


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
    max_num_seqs: int = Field(ge=1)  # the measured engine's batch limit in these runs
    max_num_batched_tokens: int = Field(ge=1)  # … and its tokens per step
    errors: list[RegimeError] = Field(default_factory=list)

    def efficiency(self, device_id: str) -> DeviceEfficiency:
        """The device's fitted fractions, else the default (measured devices' median)."""
        return self.devices.get(device_id, self.default)

    def band(self, regime: str | None = None) -> float:
        """The error band to quote: the worst p90 relative error among the fitted figures of
        `regime` (of every regime when None)."""
        chosen = [e for e in self.errors if not e.held_out
                  and (regime is None or e.regime == regime)]
        return max((e.p90 for e in chosen), default=0.5)
