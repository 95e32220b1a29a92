"""Fit each serving engine's constants on its own measurements (dev only; a minute or two).

    python tools/fit_engines.py [--write]    # fit vLLM's and SGLang's constants, store them
    python tools/fit_engines.py --table      # the per-engine error table of docs/time-model.md

Reads tests/data/benchmarks/engine-measurements.json (published runs of vLLM, SGLang and
TensorRT-LLM outside NVIDIA's tables; see that folder's SOURCE.md) and replays every row it
has a model for (`llm_inventory.engine.timing.engine_rows`). The global constants
(`tools/fit_timing.py`, fitted on NVIDIA's TensorRT-LLM/NIM rows) stay as they are; on top
of them each engine with enough rows gets a few constants of its own, each a mechanism: a
scale on every device's compute fraction and one on its bandwidth fraction, its per-step
and per-request overheads, and the fractions of a device the global fit has no rows of
(MI300X) where the engine was measured on it. They are fitted by the same coordinate search
and loss as the global fit (the median of |log(predicted ÷ measured)| per regime and figure,
plus a tenth of its p90), and measured by the same grouped held-out rule (`fold_of`: a row's
group is its model family on its GPU class, the group's fold the SHA-256 of "family/gpu"
modulo 5): each fold is fitted on the engine's rows outside it, from the same neutral start
(`neutral`: scales 1, the global overheads), and its rows are priced with that fold's
constants. An
engine with fewer than MIN_ROWS rows or MIN_GROUPS groups is not fitted: its plans keep the
global constants and say `extrapolated`. With --write the constants, each fold's and the
errors go into llm_inventory/data/timing-calibration.json under `per_engine`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llm_inventory.engine.timing.calibration import (  # noqa: E402
    Calibration,
    EngineConstants,
    release_key,
    within_releases,
)
from llm_inventory.engine.timing.engine_rows import (  # noqa: E402
    ENGINE_LABELS,
    EngineMeasurement,
    EngineReplayer,
    replay_engine,
)
from llm_inventory.engine.timing.measured import Replayed, Setup  # noqa: E402
from tools.fit_timing import (  # noqa: E402
    DATA,
    FOLDS,
    OUT,
    catalog_figures,
    fold_of,
    loss,
    spec_for,
    summarise,
)

ROWS_FILE = DATA / "engine-measurements.json"
#: The engines' eras fitted apart (key, engine, since, below), where the data shows a
#: change: vLLM's V0 engine (before 0.8) and its V1 engine (the default from 0.8); SGLang
#: before and from 0.5; TensorRT-LLM's runs outside NVIDIA's tables (the global fit's own
#: engine: unfitted, they join its unseen rows). And the least data an era's fit needs.
ERAS = (("vllm", "vllm", "0.8", None), ("vllm<0.8", "vllm", None, "0.8"),
        ("sglang", "sglang", "0.5", None), ("sglang<0.5", "sglang", None, "0.5"),
        ("trtllm", "trtllm", None, None))
MIN_ROWS, MIN_GROUPS = 30, 4
SPLIT = ("grouped five-fold over the engine's own rows: a row's group is its model family on "
         "its GPU class, the group's fold the SHA-256 of \"family/gpu\" modulo 5; each fold's "
         "held-out rows are priced with constants fitted on the engine's other rows from the "
         "same neutral start (scales 1, the global overheads)")
# how far it may go: the global fit's bounds for the overheads (none may stand in for a
# slow kernel), a host's work per sequence and step below half a millisecond, a request
# taken in below 20 ms.
BOUNDS = {"compute": (0.05, 4.0), "bandwidth": (0.05, 4.0), "step_overhead_s": (1e-5, 0.05),
          "sequence_overhead_s": (1e-7, 5e-4), "admission_s": (1e-5, 0.02),
          "server_overhead_s": (1e-4, 0.1), "device_compute": (0.02, 1.0),
          "device_bandwidth": (0.05, 0.95)}


#: A sequence's host work per step where a fit starts (the global fit has none).
START_SEQUENCE_S = 1e-5
#: The server's time to take one request in where a fit starts (none in the global fit).
START_ADMISSION_S = 1e-3


def load_rows() -> list[EngineMeasurement]:
    rows = json.loads(ROWS_FILE.read_text("utf-8"))
    return [EngineMeasurement.model_validate(r) for r in rows]


def engine_spec_for(family: str) -> Any:
    """The row's model: a file beside the data, the global fit's family, else the preset
    of that name."""
    from llm_inventory.errors import InputError
    from llm_inventory.spec.loader import load_model

    spec = spec_for(family)
    if spec is not None:
        return spec
    try:
        return load_model(family)
    except InputError:
        return None


def neutral(base: Calibration, engine: str, devices: list[str]) -> EngineConstants:
    """The start of every fit of `engine`: no scale, the global overheads, the devices the
    global fit lacks at the global median fractions."""
    return EngineConstants(
        engine=engine, label=ENGINE_LABELS[engine], compute=1.0, bandwidth=1.0,
        step_overhead_s=base.step_overhead_s, server_overhead_s=base.server_overhead_s,
        sequence_overhead_s=START_SEQUENCE_S, admission_s=START_ADMISSION_S,
        devices={d: base.default.model_copy(update={"basis": "fitted", **catalog_figures(d)})
                 for d in devices if d not in base.devices})


def with_value(ec: EngineConstants, key: str, value: float) -> EngineConstants:
    if "/" not in key:
        return ec.model_copy(update={key: value})
    device, field = key.split("/")
    devices = dict(ec.devices)
    devices[device] = devices[device].model_copy(update={field: value})
    return ec.model_copy(update={"devices": devices})


def value_of(ec: EngineConstants, key: str) -> float:
    if "/" not in key:
        return float(getattr(ec, key))
    device, field = key.split("/")
    return float(getattr(ec.devices[device], field))


class EngineFit:
    """A coordinate search over one engine's rows."""

    def __init__(self, base: Calibration, rows: list[tuple[EngineMeasurement, Setup]]) -> None:
        self.base = base
        self.rows = [(r, s) for r, s in rows if s.profile is not None]

    def replay(self, ec: EngineConstants) -> list[Replayed]:
        cal = self.base.for_engine(ec.engine, ec)
        found: list[Replayed] = []
        for row, setup in self.rows:
            found += replay_engine(row, setup, cal)
        return found

    def run(self, ec: EngineConstants, rounds: int) -> EngineConstants:
        keys = ["compute", "bandwidth", "step_overhead_s", "sequence_overhead_s",
                "server_overhead_s", "admission_s"]
        keys += [f"{d}/{f}" for d in sorted(ec.devices) for f in ("compute", "bandwidth")]
        best = loss(self.replay(ec))
        step = 0.5
        for round_ in range(rounds):
            improved = False
            for key in keys:
                name = key.split("/")[-1]
                low, high = BOUNDS[f"device_{name}" if "/" in key else name]
                for factor in (math.exp(step), math.exp(-step)):
                    value = min(high, max(low, value_of(ec, key) * factor))
                    trial = with_value(ec, key, value)
                    score = loss(self.replay(trial))
                    if score < best - 1e-6:
                        ec, best, improved = trial, score, True
                        break
            print(f"  round {round_ + 1}: loss {best:.4f} (step {step:.3f})", file=sys.stderr)
            if not improved:
                step /= 2
                if step < 0.03:
                    break
        return ec


def rounded(ec: EngineConstants) -> EngineConstants:
    """The constants to 3 significant figures, as they are shipped (and replayed)."""
    def r(x: float) -> float:
        return float(f"{x:.3g}")

    devices = {d: e.model_copy(update={"compute": r(e.compute), "bandwidth": r(e.bandwidth)})
               for d, e in ec.devices.items()}
    return ec.model_copy(update={
        "compute": r(ec.compute), "bandwidth": r(ec.bandwidth),
        "step_overhead_s": r(ec.step_overhead_s), "server_overhead_s": r(ec.server_overhead_s),
        "sequence_overhead_s": r(ec.sequence_overhead_s), "admission_s": r(ec.admission_s),
        "devices": devices})


def finish(ec: EngineConstants, rows: list[tuple[EngineMeasurement, Setup]]) -> EngineConstants:
    """Keep only the devices the rows measured, with their counts."""
    counts: dict[str, int] = {}
    for row, _ in rows:
        counts[row.device_id] = counts.get(row.device_id, 0) + 1
    devices = {d: e.model_copy(update={"rows": counts[d]})
               for d, e in ec.devices.items() if counts.get(d)}
    return ec.model_copy(update={"devices": devices, "measured_devices": sorted(counts),
                                 "rows": len(rows)})


def held_out_replay(base: Calibration, ec: EngineConstants,
                    harness: EngineReplayer) -> list[Replayed]:
    """Every row of the engine's era priced by the fold that held it out."""
    rows = era_rows(harness, ec.engine, ec.since, ec.below)
    found: list[Replayed] = []
    for fold in ec.folds:
        cal = base.for_engine(ec.engine, fold)
        unseen = set(fold.held_out_groups)
        for row, setup in rows:
            if row.group in unseen:
                found += replay_engine(row, setup, cal)
    return found


def in_sample_replay(base: Calibration, ec: EngineConstants,
                     harness: EngineReplayer) -> list[Replayed]:
    cal = base.for_engine(ec.engine, ec)
    found: list[Replayed] = []
    for row, setup in era_rows(harness, ec.engine, ec.since, ec.below):
        found += replay_engine(row, setup, cal)
    return found


def global_replay(base: Calibration, ec: EngineConstants,
                  harness: EngineReplayer) -> list[Replayed]:
    """The era's rows under the global constants alone (what the tool printed before)."""
    found: list[Replayed] = []
    for row, setup in era_rows(harness, ec.engine, ec.since, ec.below):
        found += replay_engine(row, setup, base)
    return found


def era_rows(harness: EngineReplayer, engine: str, since: str | None,
             below: str | None) -> list[tuple[EngineMeasurement, Setup]]:
    probe = EngineConstants(engine=engine, label="", compute=1, bandwidth=1,
                            step_overhead_s=0, server_overhead_s=0, since=since, below=below)
    return [(r, s) for r, s in harness.rows if r.engine_key == engine
            and within_releases(probe, r.engine_spec.split("@")[1])]


def fit_engine(base: Calibration, key: str, engine: str, since: str | None,
               below: str | None, harness: EngineReplayer,
               rounds: int) -> EngineConstants | None:
    rows = era_rows(harness, engine, since, below)
    groups = sorted({r.group for r, _ in rows})
    if not rows:
        return None
    if len(rows) < MIN_ROWS or len(groups) < MIN_GROUPS:
        print(f"{key}: {len(rows)} rows in {len(groups)} groups, not fitted",
              file=sys.stderr)
        return unfitted(base, engine, since, below, rows, harness)
    devices = sorted({r.device_id for r, _ in rows})
    folds = []
    for k in range(FOLDS):
        train = [(r, s) for r, s in rows if fold_of(r.group) != k]
        held = sorted({r.group for r, _ in rows if fold_of(r.group) == k})
        print(f"{engine} fold {k}: {len(train)} rows fitted, {len(held)} groups held out",
              file=sys.stderr)
        if not held:
            continue
        start = neutral(base, engine, sorted({r.device_id for r, _ in train}))
        ec = rounded(EngineFit(base, train).run(start, rounds))
        folds.append(finish(ec, train).model_copy(update={"held_out_groups": held}))
    print(f"{engine}: every row", file=sys.stderr)
    ec = rounded(EngineFit(base, rows).run(neutral(base, engine, devices), rounds))
    versions = sorted({r.engine_spec.split("@")[1] for r, _ in rows}, key=release_key)
    label = f"{ENGINE_LABELS[engine]} {versions[0]}–{versions[-1]}"
    era = {"since": since, "below": below, "releases": versions, "label": label}
    ec = finish(ec, rows).model_copy(update={"folds": [f.model_copy(update=era) for f in folds],
                                             "split": SPLIT, **era})
    sources = sorted({str(r.source.get("repo")) for r, _ in rows})
    errors = (summarise(in_sample_replay(base, ec, harness), held=False)
              + summarise(held_out_replay(base, ec, harness), held=True))
    return ec.model_copy(update={
        "errors": errors,
        "source": f"tests/data/benchmarks/engine-measurements.json: {ENGINE_LABELS[engine]} "
                  f"rows of {', '.join(sources)}",
        "fitted_on": f"{len(rows)} rows in {len(groups)} groups (model family on GPU class); "
                     "the errors marked held out are each row's under the constants of the "
                     "fold that left its group out"})


def unfitted(base: Calibration, engine: str, since: str | None, below: str | None,
             rows: list[tuple[EngineMeasurement, Setup]],
             harness: EngineReplayer) -> EngineConstants:
    """An era too thin to fit: the global constants time it (scales 1, their overheads),
    and its band is its own rows' error under them, rows that fit never saw."""
    versions = sorted({r.engine_spec.split("@")[1] for r, _ in rows}, key=release_key)
    groups = sorted({r.group for r, _ in rows})
    ec = EngineConstants(
        engine=engine, label=f"{ENGINE_LABELS[engine]} {versions[0]}–{versions[-1]}",
        since=since, below=below, releases=versions, compute=1.0, bandwidth=1.0,
        step_overhead_s=base.step_overhead_s, server_overhead_s=base.server_overhead_s,
        fitted=False, measured_devices=sorted({r.device_id for r, _ in rows}), rows=0,
        split="none: every row is unseen by the global fit, whose constants time it")
    found: list[Replayed] = []
    for row, setup in rows:
        found += replay_engine(row, setup, base)
    sources = sorted({str(r.source.get("repo")) for r, _ in rows})
    return ec.model_copy(update={
        "errors": summarise(found, held=True),
        "source": f"tests/data/benchmarks/engine-measurements.json: {ENGINE_LABELS[engine]} "
                  f"rows of {', '.join(sources)}",
        "fitted_on": f"nothing: {len(rows)} rows in {len(groups)} groups, fewer than the "
                     f"{MIN_ROWS} rows in {MIN_GROUPS} groups a fit needs; the errors are "
                     "every row's under the global constants"})


def table(cal: Calibration) -> str:
    """The per-engine, per-regime error table of docs/time-model.md (held-out rows of the
    engine's own fit, and the same rows under the global constants alone)."""
    lines = ["| engine | regime | figure | rows | held-out median | held-out p90 | "
             "band quoted | within band | global constants' median |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    harness = EngineReplayer(load_rows(), engine_spec_for, cal)
    for _, ec in sorted(cal.per_engine.items(), key=lambda kv: (not kv[1].fitted, kv[0])):
        mine = cal.for_engine(ec.engine, ec)
        before = global_replay(cal, ec, harness)
        unseen = held_out_replay(cal, ec, harness) if ec.fitted else before
        for e in ec.errors:
            if not e.held_out:
                continue
            band = mine.band(e.regime)
            key = (e.regime, e.figure)
            errors = [r.error for r in unseen if (r.regime, r.figure) == key]
            within = sum(x <= band + 1e-9 for x in errors) / len(errors)
            old = [r.error for r in before if (r.regime, r.figure) == key]
            label = ec.label if ec.fitted else f"{ec.label} (not fitted)"
            lines.append(f"| {label} | {e.regime} | {e.figure} | {e.rows} | {e.median:.1%} "
                         f"| {e.p90:.1%} | ±{band:.0%} | {within:.0%} | "
                         f"{statistics.median(old):.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--table", action="store_true",
                        help="print the packaged per-engine error table and stop")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out", type=Path, default=OUT, help="where --write stores them")
    args = parser.parse_args()
    from llm_inventory.spec.calibration import default_calibration

    base = default_calibration()
    if args.table:
        print(table(base))
        return
    base = base.model_copy(update={"per_engine": {}})
    harness = EngineReplayer(load_rows(), engine_spec_for, base)
    print(f"rows replayed: {len(harness.rows)}; left out (no model): {harness.skipped}",
          file=sys.stderr)
    fitted: dict[str, EngineConstants] = {}
    for key, engine, since, below in ERAS:
        ec = fit_engine(base, key, engine, since, below, harness, args.rounds)
        if ec is None:
            continue
        fitted[key] = ec
        print(f"{ec.label}: compute ×{ec.compute}, bandwidth ×{ec.bandwidth}, step "
              f"{ec.step_overhead_s * 1e3:.2f} ms, sequence {ec.sequence_overhead_s * 1e6:.0f} "
              f"µs, admission {ec.admission_s * 1e3:.2f} ms, request "
              f"{ec.server_overhead_s * 1e3:.1f} ms, "
              + ", ".join(f"{d} {e.compute}/{e.bandwidth}" for d, e in ec.devices.items()))
        for e in ec.errors:
            print(f"  {e.regime:12} {e.figure:16} {'held out' if e.held_out else 'fitted':8} "
                  f"rows {e.rows:4}  median {e.median:6.1%}  p90 {e.p90:6.1%}")
    if args.write:
        raw = json.loads(args.out.read_text("utf-8"))
        raw["per_engine"] = {k: v.model_dump(mode="json") for k, v in fitted.items()}
        args.out.write_text(json.dumps(raw, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
