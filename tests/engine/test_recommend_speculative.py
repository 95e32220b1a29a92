"""`recommend` times speculative decoding at the acceptance rate the user gives: a round
verifies k drafts per sequence after k drafting steps and yields (1 − a^(k+1)) ÷ (1 − a)
tokens; without a rate the times leave it out and say so."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.recommend import RecommendRequest, recommend
from llm_inventory.engine.recommend.models import RecommendResult, Targets, Workload
from llm_inventory.engine.speculative import Speculative, accepted_length
from llm_inventory.engine.timing.profile import work_profile
from llm_inventory.engine.timing.step import Load, round_time
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset


def _run(speculative: Speculative | None, *, model: str = "llama-3.1-8b",
         concurrency: int | None = 8, qps: float | None = None) -> RecommendResult:
    request = RecommendRequest(
        model_ref=model, devices=[resolve_device("h100")], count=1,
        workload=Workload(isl=1000, osl=200, concurrency=concurrency, qps=qps),
        targets=Targets(), speculative=speculative)
    return recommend(load_preset(model), request)


def _ngram(k: int = 4, acceptance: float | None = None) -> Speculative:
    return Speculative(method="ngram", num_speculative_tokens=k, acceptance=acceptance)


def _times(result: RecommendResult) -> tuple[float, float, float]:
    chosen = result.chosen
    assert chosen is not None
    return chosen.ttft.p50, chosen.tpot.p50, chosen.e2e.p50


def test_without_a_rate_the_times_leave_speculation_out_and_say_so() -> None:
    off = _run(None)
    asked = _run(_ngram())
    assert _times(asked) == _times(off)
    assert any("give --acceptance" in note for note in asked.notes)
    assert "speculative_time" not in asked.trust and "speculative_time" not in off.trust


def test_accepted_drafts_cut_the_time_per_token_and_the_label_says_whose_rate() -> None:
    off = _run(None)
    fast = _run(_ngram(4, 0.7))
    _, tpot_off, e2e_off = _times(off)
    _, tpot, e2e = _times(fast)
    # at batch 8 a round of 5 positions costs little more than one of 1: most of the
    # 2.77 tokens a round yields is gained
    assert tpot_off / accepted_length(0.7, 4) < tpot < tpot_off / 2
    assert e2e < e2e_off
    label = fast.trust["speculative_time"]
    assert label.kind == "estimate" and "0.7" in label.basis
    assert any("2.77 tokens a round" in note for note in fast.notes)


def test_rejected_drafts_cost_time() -> None:
    """At acceptance 0 a round yields its own token only, and still verifies k drafts."""
    assert _times(_run(_ngram(4, 0.0)))[1] > _times(_run(None))[1]


def test_the_rate_path_and_the_disaggregated_pools_take_the_yield_too() -> None:
    off = _run(None, concurrency=None, qps=2.0)
    fast = _run(_ngram(3, 0.8), concurrency=None, qps=2.0)
    assert _times(fast)[1] < _times(off)[1]

    def decode_pools(speculative: Speculative | None) -> dict[str, float]:
        request = RecommendRequest(
            model_ref="llama-3.1-8b", devices=[resolve_device("h100")], count=8,
            workload=Workload(isl=1000, osl=200, qps=2.0), targets=Targets(),
            speculative=speculative, disaggregation=True, limit=0)
        result = recommend(load_preset("llama-3.1-8b"), request)
        return {p.label: p.tpot.p50 for p in result.plans
                if p.disaggregation == "prefill/decode"}

    plain, drafted = decode_pools(None), decode_pools(_ngram(3, 0.8))
    shared = plain.keys() & drafted.keys()
    assert shared and all(drafted[key] < plain[key] for key in shared)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8), st.integers(1, 512), st.sampled_from([512, 2048, 8192]))
def test_a_verifying_round_costs_between_one_round_and_k_plus_one(
        k: int, batch: int, context: int) -> None:
    """The round's positions grow k + 1 times, its weights and KV are read once: it costs at
    least a plain round and at most k + 1 of them (before the drafting it waits for)."""
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.engine.placement.facts import model_facts

    spec = load_preset("llama-3.1-8b")
    facts = model_facts(spec, PlacementRequest(device=resolve_device("h100"), count=1,
                                               context=context))
    plain = work_profile(facts, 1, 1, 1)
    assert plain is not None
    cal = default_calibration()
    chunk = 1 << 20
    one = round_time(plain, cal, Load(decode=batch, context=context), chunk).seconds
    verifying = round_time(replace(plain, verify=k), cal, Load(decode=batch, context=context),
                           chunk).seconds
    assert one <= verifying <= (k + 1) * one
    drafting = round_time(replace(plain, verify=k, draft_s=0.01), cal,
                          Load(decode=batch, context=context), chunk).seconds
    assert drafting == pytest.approx(verifying + 0.01)
    assert round_time(replace(plain, draft_s=0.01), cal, Load(decode=0, context=1, prefill=64,
                                                               prompt=64, prompts=1),
                      chunk).seconds == round_time(plain, cal, Load(
                          decode=0, context=1, prefill=64, prompt=64, prompts=1),
                          chunk).seconds  # a prefill-only round drafts nothing
