"""Nothing fits: near misses by how far they miss, one line per reason, and what would fit."""

from __future__ import annotations

from tests.conftest import Invoke

ARGS = ("placement", "llama-3.1-405b", "-d", "h100", "-n", "4")


def _short(plan: dict) -> int:  # type: ignore[type-arg]
    d = plan["per_device"]
    return max(0, d["weight_bytes"] + d["reserve_bytes"] + d["workload_bytes"]
               - d["usable_bytes"])


def test_near_misses_rank_by_shortfall(invoke: Invoke) -> None:
    plans = invoke(*ARGS, "--format", "json").json()["plans"]
    assert not any(p["fits"] for p in plans)
    shortfalls = [_short(p) for p in plans]
    assert shortfalls == sorted(shortfalls)
    assert plans[0]["per_device"]["weight_bytes"] < 200 * 2**30  # not the 253 GiB stage


def test_one_line_per_reason_and_no_longest_zero(invoke: Invoke) -> None:
    out = invoke(*ARGS, "--limit", "6").stdout
    assert "the longest that does is 0" not in out
    assert out.count("not fit: the weights leave no room") == 1
    assert "1–6. do not fit" in out
    assert "would fit with: 12 × h100-sxm" in out


def test_would_fit_is_what_placement_then_finds(invoke: Invoke) -> None:
    w = invoke(*ARGS, "--format", "json").json()["would_fit"]
    for key in ("devices", "longest_context", "dtypes", "kv_dtypes", "device"):
        assert key in w
    n = w["devices"]["devices"]
    assert invoke("placement", "llama-3.1-405b", "-d", "h100", "-n", str(n), "--format",
                  "json").json()["fitting"] > 0
    assert invoke("placement", "llama-3.1-405b", "-d", "h100", "-n", str(n - 1),
                  "--format", "json").json()["fitting"] == 0
    for dtype in w["dtypes"]:
        assert invoke(*ARGS, "--dtype", dtype, "--format", "json").json()["fitting"] > 0
    assert "int4" in w["dtypes"] and "fp8" not in w["dtypes"]
    assert w["longest_context"] is None  # the weights leave no room on every plan
    assert invoke("placement", "llama-3.1-405b", "-d", w["device"], "-n", "4", "--format",
                  "json").json()["fitting"] > 0


def test_a_plan_that_fits_has_no_would_fit(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--format",
                  "json").json()
    assert data["would_fit"] is None


def test_a_context_too_long_for_the_workload_names_the_longest_that_fits(
        invoke: Invoke) -> None:
    base = ("placement", "llama-3.1-70b", "-d", "h100", "-n", "2", "--concurrency", "64")
    data = invoke(*base, "--context", "131072", "--format", "json").json()
    assert data["fitting"] == 0
    longest = data["would_fit"]["longest_context"]
    assert 0 < longest < 131072
    assert invoke(*base, "--context", str(longest), "--format", "json").json()["fitting"] > 0
    # within 1/128 of the longest
    assert invoke(*base, "--context", str(longest + longest // 64), "--format",
                  "json").json()["fitting"] == 0
