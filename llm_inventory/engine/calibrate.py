"""A start-up log read back beside the tool's prediction of the same start-up, and the local
calibration profile learned from it.

`compare_log` predicts the start-up the log describes with `launch`'s own prediction
(engine/launch.py: the engine era for the printed release, the model, the device with the
memory the log printed, the printed parallel layout and settings) and sets each printed
figure beside the predicted one, with the rule that explains their difference.

A profile holds, per engine release × GPU × model × TP width, what the log measured beyond
the tool's estimate for each part of the engine's reserve (non-torch memory, activation peak,
CUDA graphs) and the rest of the pool's difference ("other"). Applied, it changes the
engine's reserve only (so the KV pool, tokens and concurrency that follow from it), never an
exact figure: parameters, weights counted from the checkpoint and KV bytes per token stay as
counted.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.launch import LaunchResult, predict_launch
from llm_inventory.engine.logs import Check, StartupLog
from llm_inventory.engine.serving import ServingEngine, era_ranges, register, unregister
from llm_inventory.engine.serving.base import (
    EngineSettings,
    LaunchCommand,
    ReserveEstimate,
    StageShape,
)
from llm_inventory.engine.trust import Trust
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB

PROFILE_NOTE = ("A calibration profile changes only an engine's reserve (non-torch memory, "
                "activation peak, CUDA graphs, the rest of the pool's difference) and so the "
                "KV pool, tokens and concurrency that follow from it; never an exact figure "
                "(parameters, weights counted from the checkpoint, KV bytes per token).")
TOLERANCE = 0.01  # a prediction within 1 % of the printed figure "holds"

# printed key → the rule that explains a difference on it
RULES: dict[str, str] = {
    "weights": "weights per device are counted from the checkpoint (exact) plus the engine's "
               "load-time padding; a difference is memory the engine's loader held beyond "
               "the tensors",
    "activation": "activation peak: the tool's estimate of the profiling forward (calibrated "
                  "estimate); the log's figure is the measurement",
    "non_torch": "non-torch memory (CUDA context, communication buffers): estimated per TP "
                 "width and GPU family; the log's figure is the measurement",
    "cuda_graph": "CUDA-graph memory: estimated per captured batch size; the log measured it",
    "reserve_total": "weights + activation peak + non-torch memory: the sum of the rows above",
    "peak_torch": "weights + activation peak, as torch's allocator peaked during profiling",
    "kv_pool": "pool = budget − weights − reserve: its difference is the sum of the "
               "differences of the rows above",
    "kv_size": "llama.cpp's cache is cells × layers × K and V widths × type size: a "
               "difference is the context, cell padding or cache type",
    "kv_tokens": "tokens = ⌊pool ÷ block bytes⌋ × block size with KV bytes per token exact: "
                 "follows the pool",
    "kv_blocks": "blocks = ⌊pool ÷ block bytes⌋: follows the pool",
    "max_concurrency": "pool tokens ÷ max_model_len (per layer group for hybrid models): "
                       "follows the tokens",
    "budget": "total device memory × the memory fraction",
    "longest_context": "the longest max_model_len the pool holds: follows the pool",
}
# printed key → how to read the predicted value from a launch prediction
_PREDICTED = ("weights", "weights_profiled", "activation", "non_torch", "cuda_graph",
              "reserve_total", "peak_torch", "kv_pool", "kv_size", "kv_tokens",
              "max_total_num_tokens", "kv_blocks", "max_concurrency", "budget",
              "longest_context")


class Row(BaseModel):
    """One figure the engine printed beside the tool's prediction of it."""

    model_config = ConfigDict(frozen=True)

    key: str
    unit: str  # bytes, tokens, blocks, x
    printed: float
    printed_text: str  # as the engine printed it
    predicted: float | None
    difference: float | None  # printed − predicted
    relative: float | None  # difference ÷ printed
    holds: bool | None  # within TOLERANCE (None: not predicted)
    rule: str
    line: int


class ProfileEntry(BaseModel):
    """What one log measured beyond the tool's estimate, for one part of the reserve."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str
    release: str  # the era's release the prediction used
    gpu: str
    model: str
    tp: int
    part: str  # non_torch, activation, cuda_graph, other
    delta_bytes: int = 0  # added to the reserve's part
    # the part's estimate multiplied by this first (the activation peak: it grows with the
    # tokens profiled, so the measured ÷ estimated ratio carries to other settings)
    scale: float = 1.0
    source: str  # the log's file name
    date: str  # ISO date it was learned

    def key(self) -> tuple[str, str, str, str, int, str]:
        return (self.engine, self.release, self.gpu, self.model, self.tp, self.part)


class Profile(BaseModel):
    """A local calibration profile: one entry per engine release × GPU × model × TP × part."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    note: str = PROFILE_NOTE
    entries: list[ProfileEntry] = Field(default_factory=list)

    def merged(self, new: Sequence[ProfileEntry]) -> Profile:
        """This profile with `new` entries replacing any of the same key."""
        keys = {e.key() for e in new}
        kept = [e for e in self.entries if e.key() not in keys]
        return Profile(entries=kept + list(new))

    def matching(self, engine: str, release: str, gpus: Sequence[str], model: str,
                 tp: int | None = None) -> list[ProfileEntry]:
        """The entries for this engine release, device (any of its names) and model, and
        TP width when given."""
        return [e for e in self.entries
                if (e.engine, e.model) == (engine, model) and same_release(e.release, release)
                and e.gpu in gpus and (tp is None or e.tp == tp)]


class CalibrationReport(BaseModel):
    """A start-up log read back and set beside the tool's prediction of it."""

    schema_version: int = 1
    source: str
    log: StartupLog
    engine_label: str
    release: str  # the era release the prediction used
    device: str
    model: str | None
    checks: list[Check]  # the log's own figures recomputed from each other
    rows: list[Row]  # printed beside predicted
    newer_than_modelled: bool = False
    held: list[str] = Field(default_factory=list)  # rows within 1 % (for a newer release)
    learned: list[ProfileEntry] = Field(default_factory=list)
    startup: list[str] = Field(default_factory=list)  # the predicted lines, engine's words
    startup_error: str | None = None
    printed_error: str | None = None  # the error the log shows the engine stopped with
    stop_agrees: bool | None = None  # both stopped or both started (None: not predicted)
    notes: list[str] = Field(default_factory=list)
    trust: dict[str, Trust] = Field(default_factory=dict)


class CalibrationRun(BaseModel):
    """Every log read in one `calibrate` run, and where what they taught was kept."""

    schema_version: int = 1
    reports: list[CalibrationReport]
    profile: str | None  # the profile file written (None: nothing kept)
    exported: str | None = None
    note: str = ""
    entries: int = 0  # entries in the profile after this run


def _tuple(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.lstrip("vb").split("."):
        digits = "".join(ch for ch in part if ch.isdigit()) if part else ""
        if not digits:
            break
        parts.append(int(digits))
        if not part.isdigit():
            break
    return tuple(parts)


def same_release(a: str, b: str) -> bool:
    """0.19 and 0.19.0 are one release; 0.19 and 0.19.1 are not."""
    def norm(text: str) -> tuple[int, ...]:
        parts = list(_tuple(text))
        while parts and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    return norm(a) == norm(b) and bool(_tuple(a))


def newest_release(engine: str) -> str | None:
    """The newest release the registry models for `engine` (its newest era's own)."""
    for era, _low, high in era_ranges():
        if era.name == engine and high is None:
            return era.version
    return None


def command_of(log: StartupLog) -> LaunchCommand:
    """The launch the log describes, as `launch` reads an engine's command line."""
    if log.model is None:
        raise InputError("model", "the log does not name its model; pass --model")
    return LaunchCommand(
        engine=log.engine, version=log.version, model=log.model, tp=log.tp or 1,
        pp=log.pp or 1, dp=1, context=log.context, dtype=_dtype_of(log), kv_dtype=log.kv_dtype,
        max_num_batched_tokens=log.max_num_batched_tokens, block_size=log.block_size,
        memory_fraction=log.memory_fraction)


def _dtype_of(log: StartupLog) -> str | None:
    """The launch's --dtype: the printed one, or fp8 when the engine quantized the weights
    to fp8 at load (vLLM's --quantization fp8 on an unquantized checkpoint)."""
    return "fp8" if log.quantization == "fp8" else log.dtype


def _predicted(result: LaunchResult, key: str) -> float | None:
    fit = result.plan.per_device
    if fit is None:
        return None
    reserve = fit.reserve
    values: dict[str, float | None] = {
        "weights": fit.weight_bytes, "weights_profiled": fit.weight_bytes,
        "activation": reserve.activation_bytes, "non_torch": reserve.non_torch_bytes,
        "cuda_graph": reserve.cuda_graph_bytes or None,
        "reserve_total": fit.weight_bytes + reserve.non_torch_bytes
        + reserve.activation_bytes,
        "peak_torch": fit.weight_bytes + reserve.activation_bytes,
        "kv_pool": fit.kv_pool_bytes, "kv_size": fit.kv_pool_bytes,
        "kv_tokens": fit.kv_capacity_tokens, "max_total_num_tokens": fit.kv_capacity_tokens,
        "kv_blocks": fit.kv_blocks, "max_concurrency": result.plan.max_concurrency,
        "budget": fit.usable_bytes, "longest_context": result.longest_context,
    }
    value = values.get(key)
    return float(value) if value is not None else None


def rows_of(log: StartupLog, result: LaunchResult | None) -> list[Row]:
    rows = []
    for figure in log.figures:
        if figure.key not in _PREDICTED:
            continue
        printed = float(figure.base)
        predicted = _predicted(result, figure.key) if result is not None else None
        unit = {"x": "x", "tokens": "tokens", "blocks": "blocks",
                "cells": "cells"}.get(figure.unit, "bytes")
        difference = printed - predicted if predicted is not None else None
        relative = difference / printed if difference is not None and printed else None
        holds = (abs(difference) <= max(TOLERANCE * abs(printed), figure.resolution)
                 if difference is not None else None)
        rule = RULES.get(figure.key.replace("_profiled", ""), "")
        if figure.key == "kv_pool" and difference is not None and result is not None:
            rule = _pool_attribution(log, result, difference) or rule
        if figure.key == "kv_pool" and (log.pp or 1) > 1:
            rule = ("with pipeline stages the log prints stage 0's pool; the prediction is "
                    "the binding stage's (the one with the fewest blocks)")
        if figure.key == "cuda_graph" and predicted is None:
            rule = ("CUDA-graph memory is captured after this release sizes the pool and is "
                    "not subtracted from it: not predicted")
        rows.append(Row(key=figure.key, unit=unit, printed=printed,
                        printed_text=f"{figure.printed} {figure.unit}", predicted=predicted,
                        difference=difference, relative=relative, holds=holds, rule=rule,
                        line=figure.line))
    return rows


def _pool_attribution(log: StartupLog, result: LaunchResult, difference: float) -> str:
    """The pool's difference laid out by the parts the log printed (GiB): each part the
    engine measured above the estimate takes as much from the pool."""
    fit = result.plan.per_device
    if fit is None:
        return ""
    parts: list[tuple[str, float]] = []
    weights = log.figure("weights_profiled") or log.figure("weights")
    if weights is not None:
        parts.append(("weights", float(weights.base) - fit.weight_bytes))
    for part, estimate in (("non_torch", fit.reserve.non_torch_bytes),
                           ("activation", fit.reserve.activation_bytes)):
        measured = _measured(log, part)
        if measured is not None:
            parts.append((part.replace("_", "-"), measured - estimate))
    if not parts:
        return ""
    explained = -sum(delta for _, delta in parts)
    laid = ", ".join(f"{name} {-delta / GIB:+.2f}" for name, delta in parts)
    return (f"pool = budget − weights − reserve; its {difference / GIB:+.2f} GiB: {laid}, "
            f"rest {(difference - explained) / GIB:+.2f} (budget, rounding, parts not printed)")


def _measured(log: StartupLog, part: str) -> int | None:
    """A reserve part as the log measured it (V0's older line gives the activation peak as
    torch's peak less the weights)."""
    figure = log.figure(part)
    if figure is not None:
        return int(figure.base)
    peak, weights = log.figure("peak_torch"), log.figure("weights") or log.figure(
        "weights_profiled")
    if part == "activation" and peak is not None and weights is not None:
        return int(peak.base) - int(weights.base)
    return None


def learn(log: StartupLog, result: LaunchResult, source: str, date: str,
          gpu: str) -> list[ProfileEntry]:
    """What the log measured beyond the tool's estimate, per part of the reserve, so that
    the same launch predicted with the profile gives the printed pool."""
    fit = result.plan.per_device
    if fit is None or log.engine in ("llamacpp", "ik_llama"):
        return []  # llama.cpp allocates the context asked for: its reserve sizes no pool
    pool = log.figure("kv_pool")
    tokens = log.figure("kv_tokens") or log.figure("max_total_num_tokens")
    if pool is not None:
        printed_pool = int(pool.base)
    elif tokens is not None and fit.kv_bytes_per_token:  # SGLang prints tokens, not a pool
        printed_pool = int(tokens.base) * fit.kv_bytes_per_token
    else:
        return []
    entries: list[ProfileEntry] = []
    parts = {"non_torch": fit.reserve.non_torch_bytes,
             "activation": fit.reserve.activation_bytes}
    if fit.reserve.cuda_graph_bytes:  # only where the engine subtracts graphs up front
        parts["cuda_graph"] = fit.reserve.cuda_graph_bytes
    explained = 0
    base = {"engine": result.engine, "release": result.engine_version, "gpu": gpu,
            "model": result.model, "tp": result.command.tp, "source": source, "date": date}
    for part, predicted in parts.items():
        measured = _measured(log, part)
        if measured is None:
            continue
        delta = measured - predicted
        explained += delta
        if part == "activation" and predicted > 0:
            entry = {"part": part, "scale": measured / predicted}
        else:
            entry = {"part": part, "delta_bytes": delta}
        entries.append(ProfileEntry.model_validate({**base, **entry}))
    other = (fit.kv_pool_bytes - printed_pool) - explained
    entries.append(ProfileEntry.model_validate({**base, "part": "other", "delta_bytes": other}))
    return entries


def _adjusted(found: ReserveEstimate, entries: Sequence[ProfileEntry]) -> ReserveEstimate:
    deltas: dict[str, int] = {}
    scales: dict[str, float] = {}
    for entry in entries:
        deltas[entry.part] = deltas.get(entry.part, 0) + entry.delta_bytes
        scales[entry.part] = scales.get(entry.part, 1.0) * entry.scale
    non_torch = max(0, found.non_torch_bytes + deltas.get("non_torch", 0))
    activation = max(0, round(found.activation_bytes * scales.get("activation", 1.0))
                     + deltas.get("activation", 0))
    graphs = max(0, found.cuda_graph_bytes + deltas.get("cuda_graph", 0)) \
        if found.cuda_graph_bytes else 0
    rest = found.reserve_bytes - found.non_torch_bytes - found.activation_bytes \
        - found.cuda_graph_bytes
    return found.model_copy(update={
        "non_torch_bytes": non_torch, "activation_bytes": activation,
        "cuda_graph_bytes": graphs,
        "reserve_bytes": max(0, non_torch + activation + graphs + rest
                             + deltas.get("other", 0))})


def calibrated_engine(engine: ServingEngine, entries: Sequence[ProfileEntry]) -> ServingEngine:
    """`engine` with its reserve moved by the profile's entries on the TP widths they were
    learned at (its other rules kept; other widths as estimated)."""
    by_tp: dict[int, list[ProfileEntry]] = {}
    for entry in entries:
        by_tp.setdefault(entry.tp, []).append(entry)
    base = type(engine)

    def reserve(self: ServingEngine, shape: StageShape, settings: EngineSettings
                ) -> ReserveEstimate:
        found: ReserveEstimate = base.reserve(self, shape, settings)
        own = by_tp.get(shape.tp)
        return _adjusted(found, own) if own else found

    variant = type(f"{base.__name__}Calibrated", (base,), {"reserve": reserve})
    clone = copy.copy(engine)
    clone.__class__ = variant
    return clone


@contextmanager
def applied(engine: ServingEngine, entries: Sequence[ProfileEntry]) -> Iterator[ServingEngine]:
    """`engine` calibrated and answering for its name while the block runs (placement looks
    engines up by name); the registry is restored after."""
    if not entries:
        yield engine
        return
    calibrated = calibrated_engine(engine, entries)
    register(calibrated)
    try:
        yield calibrated
    finally:
        unregister(calibrated)


def calibrated_trust(entries: Sequence[ProfileEntry]) -> Trust:
    sources = sorted({f"{e.source}, {e.date}" for e in entries})
    widths = ", ".join(str(tp) for tp in sorted({e.tp for e in entries}))
    return Trust(kind="calibrated on your log",
                 basis=f"calibrated on your log ({'; '.join(sources)}) at tp {widths}: the "
                       "engine's reserve only, never an exact figure")


def _printed_bytes_per_token(log: StartupLog) -> float | None:
    """What one token cost in the log's own pool (printed pool ÷ printed tokens)."""
    pool, tokens = log.figure("kv_pool"), log.figure("kv_tokens")
    if pool is None or tokens is None or not tokens.base:
        return None
    return float(pool.base) / float(tokens.base)


def compare_log(log: StartupLog, source: str, spec: ModelSpec | None, device: Device,
                engine: ServingEngine, date: str, gpu: str,
                entries: Sequence[ProfileEntry] = (), release_given: bool = False
                ) -> CalibrationReport:
    """The log's printed figures beside the prediction of the same start-up."""
    notes: list[str] = []
    result: LaunchResult | None = None
    startup: list[str] = []
    error: str | None = None
    if spec is not None:
        command = command_of(log) if log.model else command_of(
            log.model_copy(update={"model": spec.name}))
        if spec.quantization is not None and log.quantization == "fp8":
            command = command.model_copy(update={"dtype": log.dtype})  # the checkpoint's own
        with applied(engine, entries) as used:
            result = predict_launch(spec, command, used, device)
        startup, error = result.startup, result.startup_error
    else:
        notes.append("no prediction: the model is not resolvable offline; pass --model "
                     "(a config.json, folder or preset)")
    rows = rows_of(log, result)
    newest = newest_release(log.engine)
    newer = bool(log.version and newest and _tuple(log.version) > _tuple(newest))
    held = [r.key for r in rows if r.holds]
    if newer:
        notes.append(f"{log.version} is newer than the newest release modelled ({newest}): "
                     f"its rules were applied; held within 1 %: {', '.join(held) or 'none'}")
    if not log.version and not release_given:
        notes.append(f"the log does not print the engine's release: {engine.label}'s rules "
                     "were applied (give --engine-version)")
    per_token = _printed_bytes_per_token(log)
    fit = result.plan.per_device if result is not None else None
    unlike = bool(per_token and fit is not None and fit.kv_bytes_per_token and abs(
        per_token / fit.kv_bytes_per_token - 1) > 0.02)
    if unlike and fit is not None:
        notes.append(f"the log's pool holds {per_token:,.0f} B per token where the model's "
                     f"KV at the assumed cache type is {fit.kv_bytes_per_token:,} B: the "
                     "engine ran another KV cache type or layout (fp8 halves it); nothing "
                     "learned from this log")
    if log.truncated:
        notes.append("the log stops before the engine reported its KV pool (truncated)")
    learned = learn(log, result, source, date, gpu) \
        if result is not None and not entries and not unlike else []
    trust: dict[str, Trust] = dict(result.trust) if result is not None else {}
    if entries:
        trust["reserve"] = calibrated_trust(entries)
    return CalibrationReport(
        source=source, log=log, engine_label=engine.label, release=engine.version,
        device=device.name, model=spec.name if spec is not None else log.model,
        checks=log.checks, rows=rows, newer_than_modelled=newer, held=held if newer else [],
        learned=learned, startup=startup, startup_error=error, printed_error=log.error,
        stop_agrees=None if result is None else (log.error is None) == (error is None),
        notes=notes, trust=trust)

