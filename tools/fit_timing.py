"""Fit the time model's constants on the published measurements (dev only).

    python tools/fit_timing.py [--write]

Reads tests/data/benchmarks/published-throughput.json, replays every row it has a model for
(`llm_inventory.engine.timing.measured`), fits the constants by minimising the median of
|log(predicted ÷ measured)| over the fitted rows (coordinate search in log space: few
parameters, each a mechanism), prints the error per regime and, with --write, stores the
constants with their provenance in llm_inventory/data/timing-calibration.json. Rows of the
post-1.0 edition and of NIM are held out: they judge the fit, they do not shape it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llm_inventory.engine.timing.calibration import (  # noqa: E402
    Calibration,
    DeviceEfficiency,
    RegimeError,
)
from llm_inventory.engine.timing.measured import (  # noqa: E402
    Measurement,
    Replayed,
    Replayer,
)

DATA = ROOT / "tests" / "data" / "benchmarks"
OUT = ROOT / "llm_inventory" / "data" / "timing-calibration.json"
HELD_OUT = {"post-1.0", "nim"}
GLOBAL = ("attention", "experts", "smoothness", "step_overhead_s", "layer_overhead_s",
          "collective_latency_s", "link", "server_overhead_s")
# Physical bounds: no memory system streams above ~95 % of its peak, no link above ~90 %.
BOUNDS = {"compute": (0.05, 1.0), "bandwidth": (0.2, 0.95), "attention": (0.05, 4.0),
          "experts": (0.05, 4.0), "smoothness": (1.0, 16.0), "step_overhead_s": (1e-5, 0.05),
          "layer_overhead_s": (1e-7, 1e-3), "collective_latency_s": (1e-7, 1e-3),
          "link": (0.1, 0.9), "server_overhead_s": (1e-4, 0.1)}


def load_rows() -> list[Measurement]:
    rows = json.loads((DATA / "published-throughput.json").read_text("utf-8"))
    return [Measurement.model_validate(r) for r in rows]


def spec_for(family: str) -> Any:
    """The row's model: a file beside the data first, then the preset of the family."""
    from llm_inventory.engine.timing.measured import MODEL_FAMILIES
    from llm_inventory.spec.loader import load_model

    path = DATA / "models" / f"{family}.json"
    if path.exists():
        return load_model(str(path))
    name = MODEL_FAMILIES.get(family)
    return load_model(name) if name is not None else None


def loss(found: list[Replayed]) -> float:
    """Mean of each regime's median |log ratio| (regimes weigh the same, whatever their
    row counts), plus a tenth of the p90 to keep the tails in check."""
    by: dict[str, list[float]] = {}
    for r in found:
        if r.edition in HELD_OUT or r.predicted <= 0 or not math.isfinite(r.predicted):
            continue
        by.setdefault(f"{r.regime}/{r.figure}", []).append(
            abs(math.log(r.predicted / r.measured)))
    total = 0.0
    for values in by.values():
        values.sort()
        total += statistics.median(values) + 0.1 * values[math.ceil(0.9 * len(values)) - 1]
    return total / max(1, len(by))


def with_value(cal: Calibration, key: str, value: float) -> Calibration:
    if key in GLOBAL:
        return cal.model_copy(update={key: value})
    device, field = key.split("/")
    eff = cal.devices.get(device, cal.default)
    devices = dict(cal.devices)
    devices[device] = eff.model_copy(update={field: value})
    return cal.model_copy(update={"devices": devices})


def value_of(cal: Calibration, key: str) -> float:
    if key in GLOBAL:
        return float(getattr(cal, key))
    device, field = key.split("/")
    return float(getattr(cal.devices.get(device, cal.default), field))


def fit(harness: Replayer, cal: Calibration, rounds: int) -> Calibration:
    devices = sorted({s.profile.device.id for _, s in harness.rows if s.profile})
    keys = [f"{d}/{f}" for d in devices for f in ("compute", "bandwidth")] + list(GLOBAL)
    for key in keys:  # start inside the bounds
        low, high = BOUNDS[key.split("/")[-1]]
        cal = with_value(cal, key, min(high, max(low, value_of(cal, key))))
    best = loss(harness.replay(cal))
    step = 0.4
    for round_ in range(rounds):
        improved = False
        for key in keys:
            low, high = BOUNDS[key.split("/")[-1]]
            for factor in (math.exp(step), math.exp(-step)):
                value = min(high, max(low, value_of(cal, key) * factor))
                trial = with_value(cal, key, value)
                score = loss(harness.replay(trial))
                if score < best - 1e-6:
                    cal, best, improved = trial, score, True
                    break
        print(f"round {round_ + 1}: loss {best:.4f} (step {step:.3f})", file=sys.stderr)
        if not improved:
            step /= 2
            if step < 0.01:
                break
    return cal


def errors(found: list[Replayed]) -> list[RegimeError]:
    by: dict[tuple[str, str, bool], list[float]] = {}
    for r in found:
        by.setdefault((r.regime, r.figure, r.edition in HELD_OUT), []).append(r.error)
    out = []
    for (regime, figure, held), values in sorted(by.items()):
        values.sort()
        out.append(RegimeError(regime=regime, figure=figure, rows=len(values),
                               median=round(statistics.median(values), 4),
                               # rounded up: the band quoted from it never sits below
                               # the error it was measured from
                               p90=math.ceil(values[math.ceil(0.9 * len(values)) - 1]
                                             * 1e4 - 1e-9) / 1e4,
                               held_out=held))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    from llm_inventory.spec.calibration import default_calibration

    cal = default_calibration()
    harness = Replayer(load_rows(), spec_for, cal)
    print(f"rows replayed: {len(harness.rows)}; left out (no model): {harness.skipped}",
          file=sys.stderr)
    cal = fit(harness, cal, args.rounds)
    found = harness.replay(cal)
    counts: dict[str, int] = {}
    for row, setup in harness.rows:
        if row.edition not in HELD_OUT and setup.profile is not None:
            counts[setup.profile.device.id] = counts.get(setup.profile.device.id, 0) + 1
    devices = {d: e.model_copy(update={"rows": counts.get(d, 0), "basis": "fitted"})
               for d, e in cal.devices.items()}
    median = DeviceEfficiency(
        compute=statistics.median(e.compute for e in devices.values()),
        bandwidth=statistics.median(e.bandwidth for e in devices.values()), rows=0,
        basis="median of the measured devices")
    cal = cal.model_copy(update={
        "devices": devices, "default": median, "errors": errors(found),
        "as_of": date.today().isoformat(),
        "source": "tests/data/benchmarks/published-throughput.json: NVIDIA TensorRT-LLM "
                  "performance overviews (v0.9.0, v0.14, v0.17, v1.0, post-1.0) and NVIDIA "
                  "NIM's Llama-3.3-70B benchmarks",
        "fitted_on": "every row with a model, editions v0.9.0, v0.14, v0.17 and v1.0; the "
                     "post-1.0 edition and NIM held out",
    })
    for e in cal.errors:
        print(f"{e.regime:16} {e.figure:22} {'held out' if e.held_out else 'fitted':8} "
              f"rows {e.rows:4}  median {e.median:6.1%}  p90 {e.p90:6.1%}")
    if args.write:
        OUT.write_text(json.dumps(cal.model_dump(mode="json"), indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
