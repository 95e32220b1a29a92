"""Time the speed goals of `inventory` as whole processes: `python benchmarks/run.py`.

Each case runs as its own process, the cases interleaved round by round (in a new order
each round, so that no case always follows the heaviest) and a noisy moment touches all of
them alike. Every figure is printed with its median, its spread
(fastest and slowest run) and its ratio to `python -c "import typer"` timed in the same
rounds by the same interpreter: these machines are noisy, so the ratios are what count.
Peak memory is the child's maximum resident set (`wait4`), the median over the runs.
Bytecode is cached as an installed wheel has it (PYTHONDONTWRITEBYTECODE is dropped for the
children, and an untimed round runs first), so source compilation is not what is timed.

    python benchmarks/run.py             # 7 rounds
    python benchmarks/run.py --runs 15   # steadier medians
    python benchmarks/run.py --only kv   # cases whose name contains "kv"
    git worktree add /tmp/before 4c68e8f && python benchmarks/run.py --before /tmp/before
                                         # each case also as that commit has it, same rounds

The exit status is 0 whether or not a goal is met: this is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parent.parent
PYDANTIC_FLOOR = ("import typer\nfrom pydantic import BaseModel\n"
                  "class M(BaseModel):\n    x: int = 0\n")


@dataclass
class Case:
    name: str
    argv: list[str]
    ratio_goal: float | None = None  # wall time ≤ this × `import typer`
    seconds_goal: float | None = None
    mib_goal: float | None = None
    walls: list[float] = field(default_factory=list)
    peaks: list[float] = field(default_factory=list)
    source: str | None = None  # a source tree put first on the import path (--before)


def _inventory() -> list[str]:
    """The console script beside this interpreter, as a user runs it; else `-m`."""
    script = Path(sys.executable).parent / "inventory"
    return [str(script)] if script.exists() else [sys.executable, "-m", "llm_inventory"]


def _cases() -> list[Case]:
    inv = _inventory()
    deepseek = [*inv, "placement", "deepseek-v3", "--device", "h200", "--format", "json"]
    return [
        Case("import typer", [sys.executable, "-c", "import typer"]),
        # The floor of every command whose engine returns pydantic models: the first model
        # class built loads most of pydantic's internals.
        Case("import typer, pydantic, one model", [sys.executable, "-c", PYDANTIC_FLOOR]),
        Case("kv json", [*inv, "kv", "--layers", "80", "--tokens", "8000", "--format", "json"],
             ratio_goal=1.0),
        Case("kv table", [*inv, "kv", "--layers", "80", "--tokens", "8000"], ratio_goal=1.3),
        Case("placement llama-3.1-70b h100 ×8 json",
             [*inv, "placement", "llama-3.1-70b", "--device", "h100", "--count", "8",
              "--format", "json"], ratio_goal=2.0),
        Case("placement deepseek-v3 h200 ×1024 json", [*deepseek, "--count", "1024"],
             seconds_goal=1.0, mib_goal=150),
        Case("placement deepseek-v3 h200 ×16384 json", [*deepseek, "--count", "16384"],
             seconds_goal=2.0),
    ]


def _run(case: Case) -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if case.source is not None:
        env["PYTHONPATH"] = case.source
    start = time.perf_counter()
    child = subprocess.Popen(case.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"{case.name}: exit {child.returncode}: {stderr.strip()}")
    case.walls.append(wall)
    case.peaks.append(usage.ru_maxrss * 1024 / MIB)  # ru_maxrss is in KiB on Linux


def _verdict(case: Case, typer_median: float) -> str:
    median = statistics.median(case.walls)
    checks: list[str] = []
    if case.ratio_goal is not None:
        ok = median <= case.ratio_goal * typer_median
        checks.append(f"≤ {case.ratio_goal:g}× typer {'met' if ok else 'MISSED'}")
    if case.seconds_goal is not None:
        ok = median <= case.seconds_goal
        checks.append(f"≤ {case.seconds_goal:g} s {'met' if ok else 'MISSED'}")
    if case.mib_goal is not None:
        ok = statistics.median(case.peaks) <= case.mib_goal
        checks.append(f"≤ {case.mib_goal:g} MiB {'met' if ok else 'MISSED'}")
    return "; ".join(checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--before", metavar="DIR",
                        help="also run each case with the package of DIR (a checkout of an "
                             "earlier commit) imported instead, in the same rounds")
    args = parser.parse_args()
    cases = [c for c in _cases() if c.name.startswith("import ") or args.only in c.name]
    floors = [c for c in cases[1:] if c.name.startswith("import ")]  # no inventory in them
    if args.before:
        source = str(Path(args.before).resolve())
        if not (Path(source) / "llm_inventory" / "__init__.py").exists():
            raise SystemExit(f"--before: {source} holds no llm_inventory package")
        commands = [c for c in cases[1:] if c not in floors]
        for case in commands:  # both trees imported the same way (not through an editable
            case.source = str(ROOT)  # install's finder, which comes last)
        cases = [cases[0], *floors, *(
            pair for c in commands
            for pair in (c, Case(f"{c.name} (before)", c.argv, source=source)))]
    order = random.Random(12)
    for round_ in range(args.warmup + args.runs):
        for case in order.sample(cases, len(cases)):
            _run(case)
            if round_ < args.warmup:
                case.walls.clear()
                case.peaks.clear()
    typer_median = statistics.median(cases[0].walls)
    sys.stdout.write(f"python {sys.version.split()[0]}, typer {version('typer')}, "
                     f"{args.runs} runs each, {os.cpu_count()} CPUs\n\n")
    header = f"{'case':48} {'median':>8} {'spread':>15} {'× typer':>8} {'peak MiB':>9}  goal\n"
    sys.stdout.write(header)
    for case in cases:
        median = statistics.median(case.walls)
        spread = f"{min(case.walls):.3f}–{max(case.walls):.3f}"
        sys.stdout.write(
            f"{case.name:48} {median:8.3f} {spread:>15} {median / typer_median:8.2f} "
            f"{statistics.median(case.peaks):9.0f}  {_verdict(case, typer_median)}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
