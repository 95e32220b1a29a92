"""The constants of the calibrated time model, and how well they fit the measurements.

The figures are fitted (`tools/fit_timing.py`) on published measurements and shipped as
package data (`llm_inventory/data/timing-calibration.json`) with their provenance and the
error they showed per regime; `llm_inventory.spec.calibration` loads them. Every constant is
a mechanism, not a row: fractions of a device's peak, a per-step and per-layer overhead, the
efficiency of attention and of grouped expert GEMMs, the latency of one collective.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.trust import Trust, calibrated

if TYPE_CHECKING:
    from llm_inventory.engine.serving.base import ServingEngine
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


class EngineConstants(BaseModel):
    """One serving engine's constants on top of the global fit, fitted on measurements of
    that engine alone (`tools/fit_engines.py`): a scale on every device's compute and
    bandwidth fractions, its own per-step, per-sequence and per-request overheads and the
    time its server takes to take a request in, and the fractions of devices the global
    fit has no rows of but this engine was measured on. Its errors, and each fold's
    constants, are measured as the global fit's are (grouped five-fold split)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str  # registry name ("vllm")
    label: str  # who and which releases, as labels print it ("vLLM 0.10–0.13")
    # the releases these constants time: since (inclusive), below (exclusive); None: open
    since: str | None = None
    below: str | None = None
    releases: list[str] = Field(default_factory=list)  # the releases measured, oldest first
    compute: float = Field(gt=0, le=4)  # × every device's compute fraction (at most 1)
    bandwidth: float = Field(gt=0, le=4)  # × every device's bandwidth fraction (at most 0.95)
    step_overhead_s: float = Field(ge=0)
    server_overhead_s: float = Field(ge=0)
    sequence_overhead_s: float = Field(default=0.0, ge=0)  # per sequence and step
    admission_s: float = Field(default=0.0, ge=0)  # taking one request in, at the server
    # devices with no global rows, measured with this engine: their own fractions
    devices: dict[str, DeviceEfficiency] = Field(default_factory=dict)
    measured_devices: list[str] = Field(default_factory=list)  # devices this engine ran on
    rows: int = Field(default=0, ge=0)  # rows the constants were fitted on
    source: str = ""
    fitted_on: str = ""
    errors: list[RegimeError] = Field(default_factory=list)
    split: str = ""
    folds: list[EngineConstants] = Field(default_factory=list)
    held_out_groups: list[str] = Field(default_factory=list)
    # False: too few rows to fit constants of its own. The global constants time it (the
    # scales and overheads here are theirs) and `errors` are its rows' under them, every
    # row unseen by that fit: its band is its own runs' error (joined with the global
    # fit's unseen rows when it is that fit's own engine).
    fitted: bool = True


#: The most a device reaches of its peaks, whatever an engine's scale says.
MAX_COMPUTE, MAX_BANDWIDTH = 1.0, 0.95


def release_key(version: str) -> tuple[int, ...]:
    """A release as numbers to compare ("0.5.3.post2" → (0, 5, 3), "1.2.0rc1" → (1, 2, 0))."""
    head = re.match(r"[0-9]+(?:\.[0-9]+)*", version.strip().lstrip("v"))
    return tuple(int(x) for x in head.group(0).split(".")) if head else ()


def _split_spec(engine: str | None) -> tuple[str | None, str | None]:
    if not engine:
        return None, None
    name, _, version = engine.partition("@")
    return name.lower(), (version or None)


def within_releases(ec: EngineConstants, version: str | None) -> bool:
    """Whether `version` (None: the newest) lies in the releases `ec` times."""
    if version is None:
        return ec.below is None
    key = release_key(version)
    return ((ec.since is None or key >= release_key(ec.since))
            and (ec.below is None or key < release_key(ec.below)))


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
    # per sequence a step carries: the host's scheduling, sampling, detokenizing, streaming
    sequence_overhead_s: float = Field(default=0.0, ge=0)
    # the HTTP server takes requests in one at a time, this long each (a burst of N reaches
    # the engine over N × admission_s; 0: at once, as the global fit has it)
    admission_s: float = Field(default=0.0, ge=0)
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
    # per serving engine and era (keyed "vllm", "vllm<0.8", ...): constants fitted on that
    # engine's own rows of those releases
    per_engine: dict[str, EngineConstants] = Field(default_factory=dict)
    # of an engine's calibration (`for_engine`): the devices and releases it was measured on
    engine_devices: list[str] | None = None
    engine_releases: list[str] | None = None
    # of an engine's calibration whose constants were not fitted (`EngineConstants.fitted`):
    # whose constants time it (the band is still its own runs')
    constants_of: str | None = None

    @property
    def fitted_by(self) -> str:
        """Whose measurements the constants were fitted on (an engine too thin to fit its
        own borrows them, `constants_of`)."""
        return self.constants_of or self.engine

    def engine_constants(self, engine: str | None) -> EngineConstants | None:
        """The constants of `engine` (NAME or NAME@VERSION; no version: its newest era)
        whose releases hold its version; None where none were fitted."""
        name, version = _split_spec(engine)
        mine = [ec for ec in self.per_engine.values() if ec.engine == name]
        return next((ec for ec in mine if within_releases(ec, version)), None)

    def for_engine(self, engine: str | None, constants: EngineConstants | None = None
                   ) -> Calibration:
        """The constants that time `engine` (NAME or NAME@VERSION): the global fit with
        that engine's and era's own scales, overheads, devices and errors where they were
        fitted (`engine_constants`, or `constants` given), else these unchanged."""
        ec = constants or self.engine_constants(engine)
        if ec is None:
            return self
        if not ec.fitted and ec.engine in self.engines:
            # the global fit's own engine: its runs outside that fit's data join its unseen
            # rows, and so its bands
            return self.model_copy(update={"errors": [*self.errors, *ec.errors],
                                           "per_engine": {}})
        if not ec.fitted:  # these constants, held to the band of the engine's own runs
            return self.model_copy(update={
                "engine": ec.label, "engines": [ec.engine], "constants_of": self.engine,
                "errors": list(ec.errors), "split": ec.split, "folds": [],
                "held_out_groups": [], "per_engine": {},
                "engine_devices": list(ec.measured_devices),
                "engine_releases": list(ec.releases),
                "source": ec.source or self.source, "fitted_on": ec.fitted_on or self.fitted_on})

        def scaled(e: DeviceEfficiency) -> DeviceEfficiency:
            return e.model_copy(update={
                "compute": min(MAX_COMPUTE, e.compute * ec.compute),
                "bandwidth": min(MAX_BANDWIDTH, e.bandwidth * ec.bandwidth)})

        devices = {d: scaled(e) for d, e in self.devices.items()}
        devices.update(ec.devices)
        return self.model_copy(update={
            "devices": devices, "default": scaled(self.default),
            "step_overhead_s": ec.step_overhead_s, "server_overhead_s": ec.server_overhead_s,
            "sequence_overhead_s": ec.sequence_overhead_s, "admission_s": ec.admission_s,
            "engine": ec.label, "engines": [ec.engine], "errors": list(ec.errors),
            "split": ec.split, "folds": [], "held_out_groups": [], "per_engine": {},
            "engine_devices": list(ec.measured_devices), "engine_releases": list(ec.releases),
            "source": ec.source or self.source, "fitted_on": ec.fitted_on or self.fitted_on})

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

    def unmeasured_release(self, engine: str | None) -> str | None:
        """`engine`'s release when these are one engine's constants (`for_engine`) and it
        lies outside the releases they were measured on, else None."""
        name, version = _split_spec(engine)
        if not self.engine_releases or version is None or name not in self.engines:
            return None
        key = release_key(version)
        n = len(key)  # "0.11" holds every 0.11.x
        low, high = (release_key(self.engine_releases[0])[:n],
                     release_key(self.engine_releases[-1])[:n])
        return None if low <= key <= high else version

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
        else:
            if self.constants_of is not None:
                why.append(f"too few runs of {self.engine} to fit constants of its own: "
                           f"{self.constants_of}'s, the band their error on those runs")
            release = self.unmeasured_release(engine)
            if release is not None:
                why.append(f"no measurement of {engine}: " + (
                    f"the band of {self.engine}'s runs" if self.constants_of is not None
                    else f"{self.engine}'s constants") + ", the measured releases of its era")
            if (self.engine_devices is not None and device_id is not None
                    and device_id in self.devices and device_id not in self.engine_devices):
                why.append(f"no measurement of {self.engine} on {device_id}: " + (
                    f"its fractions measured with {self.constants_of}"
                    if self.constants_of is not None else
                    f"its fractions measured with TensorRT-LLM, scaled as {self.engine}'s"))
        return why


def engine_release(asked: str, engine: ServingEngine) -> str:
    """The engine and release a plan runs, NAME@VERSION: as asked when it names one, else
    the release the engine answers for by default."""
    return asked if "@" in asked else f"{engine.name}@{engine.version}"


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
            band *= 2  # no cap: a band already past 100 % stays twice as wide, not narrower
        basis += "; extrapolated (" + "; ".join(why) + ")"
    return calibrated(band, basis, records=cal.unseen_rows(regime),
                      coverage=f"{cal.engine}: {', '.join(sorted(cal.devices))}"
                      if cal.engine_devices is None else
                      f"{cal.engine}: {', '.join(sorted(cal.engine_devices))}",
                      extrapolated=bool(why))
