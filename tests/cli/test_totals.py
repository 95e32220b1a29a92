"""Concurrency per engine and for the whole deployment, side by side wherever it is shown:
a data-parallel plan's total is its per-engine figure times its engines, and sorting by
concurrency sorts by the total the table shows."""

from __future__ import annotations

import re

from tests.conftest import Invoke


def _column(stdout: str, name: str) -> list[str]:
    """The cells of the plans table's column `name`."""
    header = next(line for line in stdout.splitlines() if line.startswith("┃ plan"))
    at = [cell.strip() for cell in header.split("┃")[1:-1]].index(name)
    return [[cell.strip() for cell in line.split("│")[1:-1]][at]
            for line in stdout.splitlines() if re.match(r"│ \d+\. tp", line)]


def test_placement_shows_the_total_it_sorts_by(invoke: Invoke) -> None:
    args = ("placement", "deepseek-v3", "-d", "h200", "-n", "16", "--sort", "concurrency",
            "--limit", "8")
    plans = invoke(*args, "--format", "json").json()["plans"]
    cells = _column(invoke(*args).stdout, "total")
    assert len(cells) == len(plans) == 8
    totals = [p["total_concurrency"] for p in plans if p["fits"]]
    assert totals == sorted(totals, reverse=True)
    shown = []
    for cell, plan in zip(cells, plans, strict=True):
        engines = plan["engines"]
        if engines > 1:
            assert cell.startswith(f"×{engines} "), cell
        shown.append(float(cell.split()[-1].replace(",", "")))
        assert abs(shown[-1] - plan["total_concurrency"]) < 0.06
    assert any(p["engines"] > 1 for p in plans)  # the case the total exists for
    assert shown == sorted(shown, reverse=True)


def test_launch_with_data_parallel_shows_the_times_eight_total(invoke: Invoke) -> None:
    line = ("--", "vllm", "serve", "meta-llama/Llama-3.1-8B", "-dp", "8")
    args = ("launch", "-d", "h100", *line)
    data = invoke("launch", "-d", "h100", "--format", "json", *line).json()
    per, total = data["plan"]["max_concurrency"], data["plan"]["total_concurrency"]
    assert data["plan"]["engines"] == 8 and abs(total - 8 * per) < 0.01
    out = invoke(*args).stdout
    assert f"×8 {total:,.2f}" in out and f"{per:,.2f}" in out


def test_engines_side_by_side_show_the_total(invoke: Invoke) -> None:
    out = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "2", "-e", "vllm,sglang",
                 "--tp", "1").stdout
    assert "total conc." in out
