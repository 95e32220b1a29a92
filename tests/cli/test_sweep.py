"""`inventory sweep`: every cell is the placement at its point, and the grid costs little
more than one placement."""

from __future__ import annotations

import csv
import io
import resource
import subprocess
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.placement import PlacementRequest, plan_placement, result_of, search
from llm_inventory.engine.sweep import MAX_CELLS, sweep
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset
from tests.cli.test_subprocess import ENV, INVENTORY
from tests.conftest import Invoke


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b"]),
       device=st.sampled_from(["l4", "h100-sxm"]), count=st.sampled_from([1, 2, 4]),
       contexts=st.lists(st.sampled_from([2048, 8192, 32768, 131072]), min_size=1,
                         max_size=3, unique=True),
       users=st.lists(st.integers(1, 300), min_size=1, max_size=3, unique=True),
       kv=st.sampled_from([None, "fp8"]), engine=st.sampled_from(["vllm", "sglang"]))
def test_every_cell_is_the_placement_at_its_point(model: str, device: str, count: int,
                                                  contexts: list[int], users: list[int],
                                                  kv: str | None, engine: str) -> None:
    spec = load_preset(model)
    base = PlacementRequest(device=resolve_device(device), count=count, limit=0,
                            allow_long_context=True)
    result = sweep(spec, base, contexts=contexts, concurrencies=users, kv_dtypes=[kv],
                   dtypes=[None], engines=[engine])
    assert len(result.cells) == len(contexts) * len(users)
    for cell in result.cells:
        alone = plan_placement(spec, base.model_copy(update={
            "context": cell.context, "concurrency": cell.concurrency, "kv_dtype": kv,
            "engine": engine}))
        best = alone.plans[0]
        assert (cell.fits, cell.why, cell.tp, cell.pp, cell.ep, cell.dp) == (
            best.fits, best.why, best.tp, best.pp, best.ep, best.dp)
        assert cell.total_concurrency == best.total_concurrency
        assert cell.kv_tokens == (best.per_device.kv_capacity_tokens
                                  if best.per_device else None)
        assert cell.ttft_s == (best.timing.ttft_s if best.timing else None)


def test_a_search_judged_at_another_concurrency_is_that_placement() -> None:
    spec = load_preset("llama-3.1-70b")
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=8, context=32768,
                               limit=0)
    found = search(spec, request)
    for users in (1, 8, 64, 256):
        assert result_of(spec, found, users).model_dump() == plan_placement(
            spec, request.model_copy(update={"concurrency": users})).model_dump()


def _cpu(*args: str) -> float:
    assert INVENTORY
    best = float("inf")
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([INVENTORY, *args, "-f", "json"], capture_output=True,
                              env=ENV, timeout=120)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert done.returncode == 0, done.stderr
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def test_a_4x4x2_sweep_costs_under_two_placements() -> None:
    """llama-3.1-70b on 8 × H100 over 4 contexts × 4 concurrencies × 2 KV dtypes, against
    one placement (CPU time, best of three, which other work on the machine does not
    inflate)."""
    one = _cpu("placement", "llama-3.1-70b", "-d", "h100", "-n", "8")
    grid = _cpu("sweep", "llama-3.1-70b", "-d", "h100", "-n", "8", "--context",
                "8K,32K,128K,1M", "--concurrency", "1,8,64,256", "--kv-dtype", "bf16,fp8")
    assert grid < 2 * one, (grid, one)


def test_json_cells_carry_their_inputs(invoke: Invoke) -> None:
    run = invoke("sweep", "llama-3.1-8b", "-d", "l4", "-n", "2", "--context", "8k,32K",
                 "--concurrency", "1,16", "-f", "json")
    assert run.code == 0, run.stderr
    result: dict[str, Any] = run.json()
    assert result["schema_version"] == 1 and len(result["cells"]) == 4
    points = [(c["context"], c["concurrency"]) for c in result["cells"]]
    assert points == [(8000, 1), (8000, 16), (32768, 1), (32768, 16)]
    for cell in result["cells"]:
        assert {"kv_dtype", "dtype", "engine", "fits", "plan", "kv_tokens", "ttft_s",
                "tpot_s", "tokens_per_s", "price_per_million_tokens", "launch",
                "trust"} <= set(cell)
        if cell["fits"]:
            assert cell["launch"] and cell["launch"][0].startswith("vllm serve")


def test_csv_has_a_row_per_cell_and_the_jsons_keys(invoke: Invoke) -> None:
    run = invoke("sweep", "llama-3.1-8b", "-d", "h100", "--context", "8K,32K",
                 "--concurrency", "1,8", "-f", "csv")
    assert run.code == 0, run.stderr
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert len(rows) == 4
    as_json = invoke("sweep", "llama-3.1-8b", "-d", "h100", "--context", "8K,32K",
                     "--concurrency", "1,8", "-f", "json").json()
    assert list(rows[0]) == list(as_json["cells"][0])
    assert rows[1]["concurrency"] == "8" and rows[1]["plan"] == as_json["cells"][1]["plan"]


def test_the_grid_reads_at_80_columns() -> None:
    assert INVENTORY
    done = subprocess.run([INVENTORY, "sweep", "llama-3.1-70b", "-d", "h100", "-n", "8",
                           "--context", "8K,32K,128K", "--concurrency", "1,8,64,256,1024",
                           "--kv-dtype", "bf16,fp8", "--details"], capture_output=True,
                          text=True, env={**ENV, "COLUMNS": "80"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "…" not in done.stdout and "✓" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--context", "8K,8K"], "listed twice"),
    (["--context", "8K,,32K"], "separated by commas"),
    (["--context", "8q"], "--context"),
    (["--concurrency", "0"], "whole numbers from 1"),
    (["--concurrency", "1,x"], "whole numbers from 1"),
    (["--kv-dtype", "bf16,nope"], "--kv-dtype: unknown dtype 'nope'"),
    (["--context", ",".join(f"{n}K" for n in range(1, 65)), "--concurrency",
      ",".join(str(n) for n in range(1, 65)), "--kv-dtype", "bf16,fp8"],
     f"a sweep holds at most {MAX_CELLS:,}"),
    (["--context", ",".join(f"{n}K" for n in range(1, 34)), "--kv-dtype", "bf16,fp8"],
     "66 searches asked"),
])
def test_bad_lists_are_one_line(invoke: Invoke, args: list[str], message: str) -> None:
    run = invoke("sweep", "llama-3.1-8b", "-d", "h100", *args)
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.splitlines()) == 1
