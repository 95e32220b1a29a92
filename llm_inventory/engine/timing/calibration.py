"""The constants of the calibrated time model, and how well they fit the measurements.

The figures are fitted (`tools/fit_timing.py`) on published measurements and shipped as
package data (`llm_inventory/data/timing-calibration.json`) with their provenance and the
error they showed per regime; `llm_inventory.spec.calibration` loads them. Every constant is
a mechanism, not a row: fractions of a device's peak, a per-step and per-layer overhead, the
efficiency of attention and of grouped expert GEMMs, the latency of one collective.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.trust import Trust, calibrated


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

    def extrapolated(self, regime: str, device_id: str | None) -> list[str]:
        """Why a band for `regime` on `device_id` lies outside what the unseen rows cover."""
        why = []
        if not any(e.held_out and e.regime == regime for e in self.errors):
            why.append(f"no unseen row of the {regime} regime: the band is the worst of the "
                       "other regimes'")
        if device_id is not None and device_id not in self.devices:
            why.append(f"no measurement on {device_id}: the measured devices' median "
                       "efficiencies")
        return why


def timing_trust(cal: Calibration, regime: str, device_id: str | None, basis: str) -> Trust:
    """The trust label of the calibrated times in `regime` on `device_id`: the p90 error on
    rows the fit did not see, wider and `extrapolated` outside them."""
    why = cal.extrapolated(regime, device_id)
    band = cal.band(regime)
    if why:
        if device_id is not None and device_id not in cal.devices:
            band = min(1.0, band * 2)
        basis += "; extrapolated (" + "; ".join(why) + ")"
    return calibrated(band, basis, records=cal.unseen_rows(regime),
                      coverage=f"{cal.engine}: {', '.join(sorted(cal.devices))}",
                      extrapolated=bool(why))
