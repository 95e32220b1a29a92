"""A placement search's cost grows with its candidates, not with candidates × layers: what
depends on (tp, ep) only, or on one pool, is computed once per search (call counts, not
timings)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from llm_inventory import PlacementRequest, load_model, plan_placement, resolve_device
from llm_inventory.engine.placement import facts as facts_module
from llm_inventory.engine.serving import paged


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
           key: Any = None) -> Counter[Any]:
    """Calls of `owner.name` from now on, counted by `key(*args, **kwargs)`."""
    calls: Counter[Any] = Counter()
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[key(*args, **kwargs) if key else None] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("count", [64, 1024])
def test_the_widest_layer_is_walked_once_per_tp_and_ep(monkeypatch: pytest.MonkeyPatch,
                                                      count: int) -> None:
    widest = _count(monkeypatch, facts_module, "_widest", key=lambda stack, tp, ep: (tp, ep))
    result = plan_placement(load_model("deepseek-v3"),
                            PlacementRequest(device=resolve_device("h200"), count=count))
    assert result.candidates > 50
    assert widest and max(widest.values()) == 1


def test_a_pools_capacity_is_computed_once_per_search(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _count(monkeypatch, paged.BlockPool, "capacity",
                  key=lambda layout, pool: (id(layout), pool))
    searches = _count(monkeypatch, paged, "longest_context")
    # 40,000 tokens do not fit one H100 beside Llama-70B's weights at tp 1-2: stages whose
    # request does not fit search for their longest context.
    result = plan_placement(load_model("llama-3.1-70b"), PlacementRequest(
        device=resolve_device("h100"), count=8, context=40000))
    assert any(p.longest_context for p in result.plans)
    assert seen and max(seen.values()) == 1
    assert sum(searches.values()) <= len(seen)


@pytest.mark.parametrize("count", [256, 4096])
def test_each_stage_shape_is_built_once_per_search(monkeypatch: pytest.MonkeyPatch,
                                                   count: int) -> None:
    built = _count(monkeypatch, facts_module, "StageShape",
                   key=lambda **shape: (shape["tp"], shape["pp"], shape["ep"], shape["stage"]))
    result = plan_placement(load_model("deepseek-v3"),
                            PlacementRequest(device=resolve_device("h200"), count=count))
    assert len(result.plans) > 100
    assert built and max(built.values()) == 1


def test_plans_of_one_shape_and_batch_share_their_times(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_inventory.engine.placement import report

    bounds = _count(monkeypatch, report, "roofline")
    result = plan_placement(load_model("deepseek-v3"),
                            PlacementRequest(device=resolve_device("h200"), count=1024))
    timed = [plan for plan in result.plans if plan.timing is not None]
    assert any(plan.disaggregation for plan in timed)
    # A prefill/decode variant times as its base shape does: one bound per shape and batch.
    distinct = {(p.tp, p.pp, p.ep, p.devices_per_replica, p.timing.batch)
                for p in timed if p.timing is not None}
    assert sum(bounds.values()) <= len(distinct) < len(timed)


def test_alike_stages_share_one_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stages holding the same layers in the same pool are one capacity (and one search
    for the longest context), however many stages and plans hold them."""
    seen = _count(monkeypatch, paged.BlockPool, "capacity",
                  key=lambda layout, pool: (layout, pool))
    searches = _count(monkeypatch, paged, "longest_context")
    result = plan_placement(load_model("llama-3.1-70b"), PlacementRequest(
        device=resolve_device("h100"), count=64, context=2_000_000, allow_long_context=True))
    assert any(p.pp >= 4 and p.longest_context for p in result.plans)
    assert seen and max(seen.values()) == 1
    assert sum(searches.values()) <= len(seen)
