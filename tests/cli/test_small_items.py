"""Small things a new user trips on: the most deployed 70 B by its own name, a short error
for a name that is no preset, a hint of the preset when a Hub id cannot be read offline,
and a roofline row that does not contradict itself."""

from __future__ import annotations

import re

import pytest

from tests.conftest import Invoke


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"])
def test_llama_33_70b_is_an_alias(invoke: Invoke, name: str) -> None:
    run = invoke("inventory", name, "--format", "json")
    assert run.code == 0, run.stderr
    assert run.json()["model"] == "llama-3.1-70b"  # the same shapes


def test_an_unknown_preset_names_the_closest_not_all(invoke: Invoke) -> None:
    run = invoke("inventory", "llama-70b")
    assert run.code == 2
    assert "did you mean llama-3.1-70b" in run.stderr
    assert "qwen3-vl-8b" not in run.stderr and "flux-dev" not in run.stderr
    assert "`inventory models` lists the" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_an_unreadable_hub_id_offline_hints_the_preset(invoke: Invoke,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: object) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    run = invoke("inventory", "Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert run.code == 2
    assert "HF_HUB_OFFLINE" in run.stderr and "qwen3-30b-a3b" in run.stderr


def test_roofline_side_of_the_ridge_agrees_with_the_bound(invoke: Invoke) -> None:
    out = invoke("inventory", "llama-3.1-8b", "--device", "h100", "--batch", "32").stdout
    rows = re.findall(r"│ (prefill|decode)[^│]*│[^│]*│\s*(above|below)\s*│\s*([a-z ]+?)\s*│",
                      out)
    assert len(rows) == 2
    for _, side, bound in rows:
        if bound == "compute":
            assert side == "above"
        elif bound == "memory bandwidth":
            assert side == "below"
    # the roofline is the bound, at peak: one ridge, no "reached" fractions beside it
    assert "6. Roofline on one h100-sxm (bound)" in out and "reached" not in out

