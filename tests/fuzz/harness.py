"""Running `inventory` on hostile input and checking what every run must keep to.

The invariants (issue: hostile and absurd inputs):
- the exit code is 0, 1 or 2 — never 3 (an internal error) nor anything else;
- exit 2 is exactly one line on stderr, starting `inventory: error: `, and nothing on stdout;
- no traceback, and no error line longer than bounds.ERROR_LINE plus its prefix;
- JSON on stdout parses, holds no NaN or Infinity, and no negative size or count;
- each run ends within a time and a memory limit: in process, an interval timer and the
  process's peak resident size; in a subprocess, RLIMIT_CPU and RLIMIT_AS.

Most cases run in process through Typer's CliRunner, for speed; `run_limited` runs a
sample as a real subprocess under resource limits.

The example counts are fixed and small (the fuzz tests take seconds); the draws come from
SEED, which changes from day to day (the UTC date) so CI meets new cases on each day's runs,
and is printed with any failure: INVENTORY_FUZZ_SEED=N reruns exactly those cases.
INVENTORY_FUZZ_EXAMPLES scales every fuzz test up for a long local run.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, seed, settings
from typer.testing import CliRunner

from llm_inventory.bounds import ERROR_LINE
from llm_inventory.cli.app import app

ROOT = Path(__file__).resolve().parents[2]

# Seconds one in-process run may take. Real runs take 5-300 ms; a bounded search at the
# bounds takes seconds; a hang or a blow-up takes minutes.
RUN_SECONDS = float(os.environ.get("INVENTORY_FUZZ_SECONDS", "20"))
# A subprocess run's limits: CPU seconds and address space.
LIMIT_CPU_SECONDS = 30
LIMIT_ADDRESS_BYTES = 2 * 2**30

_DEFAULT_FACTOR = 1.0


def _seed() -> int:
    """INVENTORY_FUZZ_SEED when set (to reproduce a failure), else today's UTC date as
    YYYYMMDD: a new seed each day, the same within one day's runs."""
    given = os.environ.get("INVENTORY_FUZZ_SEED", "").strip()
    if given:
        return int(given)
    return int(time.strftime("%Y%m%d", time.gmtime()))


SEED = _seed()
REPRODUCE = f"fuzz seed {SEED}: rerun with INVENTORY_FUZZ_SEED={SEED}"


def examples(count: int) -> int:
    """`count` examples in CI; INVENTORY_FUZZ_EXAMPLES=N asks for about N per fuzz test."""
    wanted = os.environ.get("INVENTORY_FUZZ_EXAMPLES")
    return max(count, int(wanted)) if wanted else count


def fuzz(count: int) -> Any:
    """The hypothesis profile of every fuzz test: `count` examples drawn from SEED."""
    profile = settings(
        max_examples=examples(count),
        derandomize=False,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
    )

    def apply(test: Any) -> Any:
        return seed(SEED)(profile(test))

    return apply


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str


class RunTimeout(BaseException):
    """A run took longer than RUN_SECONDS (a BaseException, so the tool cannot catch it)."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise RunTimeout(f"run took over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_RUNNER = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})


def run(args: Sequence[str]) -> Outcome:
    """`inventory ARGS…` in process, within RUN_SECONDS; checked by `check`."""
    argv = [str(a) for a in args]
    start = time.perf_counter()
    try:
        with _time_limit(RUN_SECONDS):
            result = _RUNNER.invoke(app, argv, catch_exceptions=False)
    except RunTimeout as exc:
        raise AssertionError(f"{REPRODUCE}\n{_show(argv)}: {exc}") from exc
    outcome = Outcome(argv, result.exit_code, result.stdout, result.stderr)
    _log(outcome, time.perf_counter() - start)
    check(outcome)
    # The process's peak resident size only grows: the first run to push it past the limit
    # is the one that fails.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    assert peak <= LIMIT_ADDRESS_BYTES, f"{REPRODUCE}\n{_show(argv)}: peak memory {peak:,} B"
    return outcome


def _log(outcome: Outcome, seconds: float) -> None:
    """With INVENTORY_FUZZ_LOG=FILE, one line per run: seconds, exit code, the length of
    the longest stderr line, the command line and the start of stderr."""
    path = os.environ.get("INVENTORY_FUZZ_LOG")
    if path:
        longest = max(map(len, outcome.stderr.splitlines()), default=0)
        shown = " ".join(outcome.stderr.split())[:300]
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as log:
            log.write(f"{seconds:.3f}\t{outcome.code}\t{longest}\t{_show(outcome.args)}\t"
                      f"{shown}\n")


def _limits() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_CPU, (LIMIT_CPU_SECONDS, LIMIT_CPU_SECONDS + 5))
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_ADDRESS_BYTES, LIMIT_ADDRESS_BYTES))


def run_limited(args: Sequence[str]) -> Outcome:
    """`inventory ARGS…` as a real process under RLIMIT_CPU and RLIMIT_AS; checked."""
    argv = [str(a) for a in args]
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}
    env.pop("INVENTORY_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-m", "llm_inventory", *argv], capture_output=True, text=True,
        env=env, preexec_fn=_limits, timeout=3 * LIMIT_CPU_SECONDS, errors="replace",
    )
    _log(Outcome(argv, done.returncode, "", done.stderr), 0.0)
    if done.returncode < 0:
        raise AssertionError(f"{REPRODUCE}\nkilled by signal {-done.returncode} (a resource "
                             "limit?): "
                             f"{_show(argv)}\n{done.stderr[-2000:]}")
    outcome = Outcome(argv, done.returncode, done.stdout, done.stderr)
    check(outcome)
    return outcome


def _show(args: Sequence[str]) -> str:
    shown = [a if len(a) <= 80 else f"{a[:60]}…({len(a):,} chars)" for a in args]
    return "inventory " + " ".join(shown)


_SIZE_KEY = re.compile(r"(bytes|tokens|elements|parameters|count|capacity)$")


def _bad_numbers(data: Any, path: str = "") -> Iterator[str]:
    stack = [(data, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}") for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            key = where.rsplit(".", 1)[-1].split("[")[0]
            if _SIZE_KEY.search(key) and value < 0:
                yield f"{where} = {value}"


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"JSON output holds {name}")


def check(outcome: Outcome) -> None:
    """Assert the invariants every run keeps (module docstring)."""
    shown = _show(outcome.args)
    where = f"{REPRODUCE}\n{shown}\nexit {outcome.code}\nstderr: {outcome.stderr[-1500:]}"
    assert outcome.code in (0, 1, 2), where
    assert "Traceback" not in outcome.stderr, where
    assert "inventory: error: unexpected " not in outcome.stderr, where  # exit 3's line
    limit = ERROR_LINE + 200
    for line in outcome.stderr.splitlines():
        assert len(line) <= limit, f"{where}\n(an error line of {len(line):,} characters)"
    if outcome.code == 2 and not outcome.args:  # no arguments: the help, on stderr
        assert outcome.stdout == "", where
        return
    if outcome.code == 2:
        assert outcome.stdout == "", f"{where}\nstdout: {outcome.stdout[:500]}"
        assert outcome.stderr.count("\n") == 1, where
        assert outcome.stderr.startswith("inventory: error: "), where
        return
    if _format(outcome.args) == "json" and outcome.stdout.strip():
        data = json.loads(outcome.stdout, parse_constant=_reject_constant)
        bad = list(_bad_numbers(data))
        assert not bad, f"{where}\nnegative sizes in JSON: {bad[:5]}"


def _format(args: list[str]) -> str:
    """The output format the command line asks for (the last --format wins, as in Click)."""
    fmt = "json" if "schema" in args[:1] else "table"
    for i, arg in enumerate(args):
        if arg in ("--format", "-f") and i + 1 < len(args):
            fmt = args[i + 1].lower()
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1].lower()
    return fmt
