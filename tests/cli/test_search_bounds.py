"""Every search has a work bound: engines × devices within bounds.SEARCHES, engine lists
de-duplicated and within bounds.ENGINES; past a bound, exit 2 naming it, before any work."""

from __future__ import annotations

import time

import pytest

from llm_inventory.bounds import ENGINES, SEARCHES, search_lists
from llm_inventory.errors import InputError
from tests.conftest import Invoke


def test_search_lists_drops_repeats_and_bounds_the_rest() -> None:
    assert search_lists(["vllm", "sglang", "vllm"], ["h100", "a100"]) == ["vllm", "sglang"]
    with pytest.raises(InputError, match="at most 32 engines"):
        search_lists([f"vllm@0.{i}" for i in range(ENGINES.limit + 1)])
    with pytest.raises(InputError, match="searches; a request is limited to 64"):
        search_lists([f"e{i}" for i in range(9)], [f"d{i}" for i in range(8)])
    assert SEARCHES.limit == 64


def test_a_thousand_entry_engine_list_is_one_search(invoke: Invoke) -> None:
    """1,000 repeats of one engine took half a minute (a search per entry)."""
    start = time.monotonic()
    run = invoke("placement", "llama-3.1-8b", "--device", "h100", "--engine",
                 ",".join(["vllm"] * 1000), "--format", "json")
    assert run.code == 0, run.stderr
    assert time.monotonic() - start < 20


@pytest.mark.parametrize("argv", [
    ["placement", "llama-3.1-8b", "--device", "h100", "--engine",
     ",".join(f"vllm@0.{i}" for i in range(10, 50))],
    ["compare", "llama-3.1-8b", "--device", "h100", "--engine",
     ",".join(f"vllm@0.{i}" for i in range(10, 50))],
    ["recommend", "llama-3.1-8b", "--isl", "1000", "--osl", "100", "--qps", "1",
     "--engine", "vllm,sglang,trtllm,llamacpp,ik_llama,vllm@0.10,sglang@0.4.6",
     *[a for d in ("h100", "a100-80gb", "h200", "l40s", "b200", "gb200", "mi300x", "l4",
                   "a10g", "rtx-4090") for a in ("--device", d)]],
])
def test_past_the_bound_is_bad_input_naming_it(invoke: Invoke, argv: list[str]) -> None:
    start = time.monotonic()
    run = invoke(*argv)
    assert run.code == 2, run.stderr
    assert "--engine: " in run.stderr and ("at most 32 engines" in run.stderr
                                           or "limited to 64" in run.stderr)
    assert time.monotonic() - start < 10  # refused before any search


def test_compare_sets_at_most_64_models_side_by_side(invoke: Invoke) -> None:
    start = time.monotonic()
    run = invoke("compare", *["llama-3.1-8b", "qwen3-8b"] * 50)
    assert run.code == 2, run.stderr
    assert run.stderr.startswith("inventory: error: models: must be at most 64 models")
    assert time.monotonic() - start < 10
