"""Fit the fixed costs of speculative drafting on published runs (dev only).

    python tools/fit_speculative.py            # fit, print the error on every row
    python tools/fit_speculative.py --write    # and store it in llm_inventory/data/

Reads tests/data/benchmarks/speculative-decoding.json: runs at batch 1 with and without
drafting on the same setup, each with the mean acceptance length it printed. Each row is
replayed through the step model (`engine/timing/step.py`) with the constants of the engine
and release that ran it (`Calibration.for_engine`), on the tool's own scale: the
measured TPOT ratio (drafting ÷ plain) times the acceptance length times the model's plain
round is the round the run took, as the model would have priced it. The model of that round
is the verify round (k + 1 positions, `WorkProfile.verify`) plus the drafting
(`speculative.drafting_seconds`): a fixed cost a round and k steps, each the drafter's
bytes at the device's fitted bandwidth plus a fixed cost. The two fixed costs are the
least-squares line through the `fit` rows; the `held-out` rows are only priced with it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llm_inventory.engine.placement import PlacementRequest  # noqa: E402
from llm_inventory.engine.placement.facts import model_facts  # noqa: E402
from llm_inventory.engine.speculative import (  # noqa: E402
    DraftTiming,
    Speculative,
    drafting_seconds,
)
from llm_inventory.engine.timing.profile import work_profile  # noqa: E402
from llm_inventory.engine.timing.step import Load, round_time  # noqa: E402
from llm_inventory.spec.calibration import default_calibration  # noqa: E402
from llm_inventory.spec.devices import resolve_device  # noqa: E402
from llm_inventory.spec.presets import load_preset  # noqa: E402

DATA = ROOT / "tests" / "data" / "benchmarks" / "speculative-decoding.json"
OUT = ROOT / "llm_inventory" / "data" / "speculative-timing.json"
# MT-Bench turns: prompts of a few hundred tokens, answers of a few hundred; at batch 1 the
# KV read is a sliver of the weights', so the context barely moves the figures
CONTEXT = 512
CHUNK = 8192


@dataclass(frozen=True)
class Row:
    """One published run on the model's scale (seconds)."""

    source: str
    use: str
    method: str
    k: int
    acceptance_length: float
    measured_ratio: float  # TPOT with drafting ÷ TPOT without, as measured
    plain_s: float  # the model's round without drafting
    verify_s: float  # the model's round verifying k drafts
    draft_bytes_s: float  # one drafting step's reads at the fitted bandwidth

    @property
    def measured_round_s(self) -> float:
        return self.measured_ratio * self.acceptance_length * self.plain_s

    def predicted_ratio(self, c: DraftTiming) -> float:
        round_s = self.verify_s + drafting_seconds(self.k, self.draft_bytes_s, 1.0, c)
        return round_s / (self.acceptance_length * self.plain_s)

    def error(self, c: DraftTiming) -> float:
        return abs(self.predicted_ratio(c) / self.measured_ratio - 1)


def rows() -> list[Row]:
    """Every row of the data, replayed."""
    data = json.loads(DATA.read_text())
    out = []
    for r in data["rows"]:
        source = data["sources"][r["source"]]
        device = resolve_device(source["device"])
        # the step times of the engine and release that ran it (its own constants)
        cal = default_calibration().for_engine(source["engine"])
        asked = Speculative(method=r["method"], num_speculative_tokens=r["k"])
        facts = model_facts(load_preset(r["model"]), PlacementRequest(
            device=device, count=1, tp=1, context=CONTEXT, speculative=asked,
            engine=source["engine"], calibration=cal))
        profile = work_profile(facts, 1, 1, 1)
        drafter = facts.drafter(1, 1)
        assert profile is not None and drafter is not None
        load = Load(decode=1, context=CONTEXT)
        bandwidth = profile.bandwidth * cal.device_efficiency(device).bandwidth
        ratio = (r["tpot_ms"] / r["vanilla_tpot_ms"] if "tpot_ms" in r
                 else r["vanilla_output_tok_s"] / r["output_tok_s"])
        out.append(Row(
            source=r["source"], use=r["use"], method=r["method"], k=r["k"],
            acceptance_length=r["acceptance_length"], measured_ratio=ratio,
            plain_s=round_time(profile, cal, load, CHUNK).seconds,
            verify_s=round_time(replace(profile, verify=r["k"]), cal, load, CHUNK).seconds,
            draft_bytes_s=drafter.step_bytes / bandwidth))
    return out


def fit(replayed: list[Row]) -> DraftTiming:
    """The least-squares line (round cost, step cost) through the fit rows' drafting time,
    clamped at zero, and its error on the held-out rows."""
    fitted = [r for r in replayed if r.use == "fit"]
    held = [r for r in replayed if r.use == "held-out"]
    ks = [float(r.k) for r in fitted]
    ys = [r.measured_round_s - r.verify_s - r.k * r.draft_bytes_s for r in fitted]
    mk, my = statistics.fmean(ks), statistics.fmean(ys)
    slope = (sum((k - mk) * (y - my) for k, y in zip(ks, ys, strict=True))
             / sum((k - mk) ** 2 for k in ks))
    step = max(0.0, slope)
    base = max(0.0, my - step * mk)
    sources = sorted({r.source for r in fitted})
    c = DraftTiming(round_overhead_s=base, step_overhead_s=step,
                    source=", ".join(f"{s} {fitted[0].method}" for s in sources) + ", H100",
                    fitted_on=[f"{r.source} {r.method} k={r.k}" for r in fitted],
                    held_out=[f"{r.source} {r.method} k={r.k}" for r in held],
                    held_out_rows=len(held), held_out_median=0.0, held_out_max=0.0)
    errors = [r.error(c) for r in held]
    return c.model_copy(update={"held_out_median": round(statistics.median(errors), 4),
                                "held_out_max": round(max(errors), 4)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the fit in {OUT}")
    args = parser.parse_args()
    replayed = rows()
    c = fit(replayed)
    print(f"round {c.round_overhead_s * 1e3:.3f} ms, step {c.step_overhead_s * 1e3:.3f} ms")
    for r in replayed:
        print(f"{r.use:9} {r.source:11} {r.method:7} k={r.k}  AL {r.acceptance_length:.2f}  "
              f"measured {r.measured_ratio:.3f}  predicted {r.predicted_ratio(c):.3f}  "
              f"error {r.error(c):.1%}")
    print(f"held out: {c.held_out_rows} rows, median {c.held_out_median:.1%}, "
          f"max {c.held_out_max:.1%}")
    if args.write:
        OUT.write_text(json.dumps(c.model_dump(), indent=2) + "\n")


if __name__ == "__main__":
    main()
