"""The sampling processor chain: the worked example's numbers, the order hazard, and the
invariants every chain keeps (sums to 1, removed stays removed, never empty)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.sampling import (
    Boundary,
    SampleResult,
    parse_chain,
    parse_pairs,
    sample,
    sampler_state,
)
from llm_inventory.errors import InputError

# The worked example: "A 0.60, B 0.25, C 0.10, D 0.04, E 0.01" (model-topologies chapter,
# "One distribution through the processor chain").
SEED = "A=0.60,B=0.25,C=0.10,D=0.04,E=0.01"
P = {"A": 0.60, "B": 0.25, "C": 0.10, "D": 0.04, "E": 0.01}


def run(chain: str, probs: str = SEED, boundary: Boundary = Boundary.INCLUSIVE) -> SampleResult:
    return sample(parse_chain(chain), probs=parse_pairs(probs, "probs"), top_p_boundary=boundary)


def last(result: SampleResult) -> dict[str, float]:
    return result.stages[-1].probs


# --- the worked example ---------------------------------------------------------------------


def test_temperature_half_sharpens() -> None:
    # Dividing log p by 0.5 squares p: A = 0.36 / (0.36 + 0.0625 + 0.01 + 0.0016 + 0.0001).
    probs = last(run("temperature=0.5"))
    assert probs["A"] == pytest.approx(0.36 / 0.4342, rel=1e-12)
    assert probs["A"] == pytest.approx(0.829111, abs=1e-6)  # "A rises well above 0.60"
    assert probs["B"] == pytest.approx(0.143943, abs=1e-6)
    assert probs["E"] == pytest.approx(0.000230, abs=1e-6)  # "the tail flattens toward zero"
    assert probs["E"] < P["E"]


def test_temperature_two_flattens() -> None:
    # Dividing by 2 takes square roots: A = √0.6 / Σ√p.
    probs = last(run("temperature=2.0"))
    roots = sum(math.sqrt(p) for p in P.values())
    assert probs["A"] == pytest.approx(math.sqrt(0.6) / roots, rel=1e-12)
    assert probs["A"] == pytest.approx(0.409661, abs=1e-6)  # "A falls"
    assert probs["E"] == pytest.approx(0.052887, abs=1e-6)  # "the tail gains mass"
    assert probs["E"] > P["E"]


def test_temperature_zero_is_greedy() -> None:
    result = run("temperature=0")
    assert result.candidates == ["A"]
    assert last(result)["A"] == 1.0
    assert result.stages[0].removed == ["B", "C", "D", "E"]


def test_top_k_two_keeps_a_and_b() -> None:
    result = run("top_k=2")
    assert result.candidates == ["A", "B"]
    assert result.stages[0].removed == ["C", "D", "E"]
    assert last(result)["A"] == pytest.approx(0.60 / 0.85, rel=1e-12)  # 0.705882
    assert last(result)["B"] == pytest.approx(0.25 / 0.85, rel=1e-12)  # 0.294118


def test_top_p_point_nine_inclusive_keeps_c() -> None:
    # A + B = 0.85 < 0.90 ≤ A + B + C = 0.95: C crosses the threshold.
    result = run("top_p=0.9")
    assert result.candidates == ["A", "B", "C"]
    assert result.stages[0].crossing == "C"
    assert last(result)["C"] == pytest.approx(0.10 / 0.95, rel=1e-12)
    assert result.stages[0].processor.boundary is Boundary.INCLUSIVE


def test_top_p_point_nine_exclusive_drops_c() -> None:
    result = run("top_p=0.9", boundary=Boundary.EXCLUSIVE)
    assert result.candidates == ["A", "B"]
    assert result.stages[0].crossing == "C"
    assert result.stages[0].dropped == ["C", "D", "E"]
    assert result.stages[0].note is not None and "dropped" in result.stages[0].note


@pytest.mark.parametrize("boundary", list(Boundary))
def test_a_prefix_reaching_p_exactly_has_no_crossing_token(boundary: Boundary) -> None:
    # 0.60 + 0.25 is 0.85 as written, whatever binary rounding makes of it.
    result = run("top_p=0.85", boundary=boundary)
    assert result.candidates == ["A", "B"]
    assert result.stages[0].crossing is None


def test_the_documented_four_stage_chain() -> None:
    result = run("temperature=0.5,top_k=2,top_p=0.9,repetition_penalty=1.3@A")
    assert [s.processor.name for s in result.stages] == [
        "temperature", "top_k", "top_p", "repetition_penalty",
    ]
    assert result.candidates == ["A", "B"]
    # After T=0.5 and top-k: A = 0.36 / 0.4225, B = 0.0625 / 0.4225.
    assert result.stages[1].probs["A"] == pytest.approx(0.36 / 0.4225, rel=1e-12)
    # The penalty multiplies A's (negative) logit 2·ln 0.6 by 1.3.
    a, b = 0.6 ** (2 * 1.3), 0.25**2
    assert last(result)["A"] == pytest.approx(a / (a + b), rel=1e-12)  # 0.809142


# --- order is part of behaviour -------------------------------------------------------------


def test_penalty_before_top_p_lets_c_in() -> None:
    # ln 0.6 < 0, so the penalty multiplies it: A's weight becomes 0.6^1.3 = 0.514788.
    a = 0.6**1.3
    result = run("repetition_penalty=1.3@A,top_p=0.85")
    penalised = result.stages[0].probs
    assert penalised["A"] == pytest.approx(a / (a + 0.4), rel=1e-12)
    assert penalised["A"] == pytest.approx(0.562722, abs=1e-6)
    assert penalised["B"] == pytest.approx(0.273299, abs=1e-6)
    assert penalised["A"] + penalised["B"] == pytest.approx(0.836021, abs=1e-6)  # < 0.85
    assert result.candidates == ["A", "B", "C"]
    assert result.stages[1].crossing == "C"  # A + B + C = 0.945340


def test_penalty_after_top_p_cannot() -> None:
    result = run("top_p=0.85,repetition_penalty=1.3@A")
    assert result.candidates == ["A", "B"]
    assert result.stages[1].removed == ["C", "D", "E"]
    a = 0.6**1.3
    assert last(result)["A"] == pytest.approx(a / (a + 0.25), rel=1e-12)  # 0.673096


def test_penalty_before_top_k_can_change_the_survivor() -> None:
    # The chapter's sentence: penalising A before the top-k cut can push B into the set.
    # A penalty of 3 takes A's weight to 0.6³ = 0.216, below B's 0.25.
    before = run("repetition_penalty=3@A,top_k=1")
    assert before.stages[0].probs["A"] == pytest.approx(0.216 / 0.616, rel=1e-12)  # 0.350649
    assert before.candidates == ["B"]
    assert run("top_k=1,repetition_penalty=3@A").candidates == ["A"]


def test_penalty_rule_divides_positive_logits_and_multiplies_negative() -> None:
    result = sample(parse_chain("repetition_penalty=2@A+B+C"),
                    logits=[("A", 1.0), ("B", -1.0), ("C", 0.0)])
    assert result.stages[0].logits == {"A": 0.5, "B": -2.0, "C": 0.0}


def test_penalty_below_one_rewards() -> None:
    assert last(run("repetition_penalty=0.5@B"))["B"] > P["B"]


def test_ban_removes_and_min_p_scales_with_the_top() -> None:
    assert run("ban@A").candidates == ["B", "C", "D", "E"]
    # min_p 0.1 × 0.60 = 0.06: D (0.04) and E (0.01) fall below.
    assert run("min_p=0.1").candidates == ["A", "B", "C"]
    assert run("min_p=1").candidates == ["A"]


def test_removed_tokens_have_null_logits_and_zero_probability() -> None:
    stage = run("top_k=2").stages[0]
    assert stage.logits["C"] is None and stage.probs["C"] == 0.0


def test_renormalised_input_warns() -> None:
    result = run("", probs="A=0.5,B=0.3")
    assert result.warnings and "0.8" in result.warnings[0]
    assert result.input.probs["A"] == pytest.approx(0.625, rel=1e-12)
    assert run("").warnings == []


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "A", "A=", "A=x", "A=nan", "A=inf", "A=0.5,A=0.5", "=0.5", "A=0.5,,B=0.5", ","],
)
def test_bad_pairs(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_pairs(text, "probs")
    assert caught.value.field == "probs"


@pytest.mark.parametrize("text", ["A=-0.1", "A=0", "A=1.5"])
def test_bad_probabilities(text: str) -> None:
    with pytest.raises(InputError):
        sample([], probs=parse_pairs(text, "probs"))


@pytest.mark.parametrize(
    "text",
    [
        "foo=1", "top_k=0", "top_k=2.5", "top_k=x", "top_p=1.5", "top_p=0", "min_p=1.5",
        "temperature=-1", "temperature=nan", "repetition_penalty=0@A", "repetition_penalty=1.3",
        "ban", "ban=1@A", "top_k=2@A", "top_k", "top_k=1,,top_p=0.9", "repetition_penalty=2@A+A",
    ],
)
def test_bad_chains(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_chain(text)
    assert caught.value.field == "chain"


@pytest.mark.parametrize("chain", ["repetition_penalty=1.3@Z", "ban@A+Z", "ban@A+B+C+D+E"])
def test_chain_must_name_known_tokens_and_leave_a_candidate(chain: str) -> None:
    with pytest.raises(InputError) as caught:
        run(chain)
    assert caught.value.field == "chain"


def test_overflow_is_input_error() -> None:
    with pytest.raises(InputError):
        sample(parse_chain("temperature=0.001"), logits=[("A", 1e308), ("B", 0.0)])


def test_probs_and_logits_together() -> None:
    with pytest.raises(InputError):
        sample([], probs=[("A", 1.0)], logits=[("A", 1.0)])


def test_chain_spellings() -> None:
    assert parse_chain("top-k=2")[0].name == "top_k"
    assert parse_chain(" TOP_P = 0.9 ")[0].value == 0.9
    assert parse_chain("repetition_penalty=1.3@A+B")[0].tokens == ["A", "B"]
    assert parse_chain("") == []


# --- invariants -----------------------------------------------------------------------------

weights = st.lists(st.floats(min_value=1e-3, max_value=1.0), min_size=1, max_size=8)


def _probs(ws: list[float]) -> list[tuple[str, float]]:
    total = math.fsum(ws)
    return [(f"t{i}", w / total) for i, w in enumerate(ws)]


@settings(max_examples=150, deadline=None)
@given(ws=weights, t=st.floats(min_value=0.05, max_value=20.0))
def test_temperature_never_reorders(ws: list[float], t: float) -> None:
    pairs = _probs(ws)
    out = sample(parse_chain(f"temperature={t!r}"), probs=pairs).stages[0].probs
    for a, pa in pairs:
        for b, pb in pairs:
            if pa > pb:
                assert out[a] >= out[b]
    top = max(p for _, p in pairs)
    if t < 1:
        assert max(out.values()) >= top - 1e-12
    elif t > 1:
        assert max(out.values()) <= top + 1e-12


@settings(max_examples=100, deadline=None)
@given(ws=weights, k=st.integers(min_value=1, max_value=10))
def test_top_k_keeps_min_k_n(ws: list[float], k: int) -> None:
    result = sample(parse_chain(f"top_k={k}"), probs=_probs(ws))
    assert len(result.candidates) == min(k, len(ws))


processor = st.one_of(
    st.floats(min_value=0.0, max_value=5.0).map(lambda t: f"temperature={t!r}"),
    st.integers(min_value=1, max_value=10).map(lambda k: f"top_k={k}"),
    st.floats(min_value=0.01, max_value=1.0).map(lambda p: f"top_p={p!r}"),
    st.floats(min_value=0.0, max_value=1.0).map(lambda p: f"min_p={p!r}"),
    st.tuples(st.floats(min_value=0.1, max_value=5.0), st.integers(0, 7)).map(
        lambda x: f"repetition_penalty={x[0]!r}@t{x[1]}"
    ),
    st.integers(0, 7).map(lambda i: f"ban@t{i}"),
)


@settings(max_examples=200, deadline=None)
@given(ws=weights, chain=st.lists(processor, max_size=6), boundary=st.sampled_from(Boundary))
def test_every_chain_keeps_its_invariants(
    ws: list[float], chain: list[str], boundary: Boundary
) -> None:
    pairs = _probs(ws)
    names = {t for t, _ in pairs}
    usable = [c for c in chain if "@" not in c or c.split("@")[1] in names]
    try:
        result = sample(parse_chain(",".join(usable)), probs=pairs, top_p_boundary=boundary)
    except InputError as exc:
        assert "removes every remaining candidate" in exc.message
        return
    removed: set[str] = set()
    for stage in result.stages:
        assert math.fsum(stage.probs.values()) == pytest.approx(1.0, abs=1e-9)
        assert removed <= set(stage.removed)  # removed tokens stay removed
        removed = set(stage.removed)
        assert all(stage.probs[t] == 0.0 and stage.logits[t] is None for t in removed)
        assert set(stage.dropped) <= removed
    assert result.candidates  # never empty
    assert set(result.candidates) == names - removed


# --- persistent sampler state ---------------------------------------------------------------


def test_sampler_state_items() -> None:
    items = sampler_state()
    names = " ".join(item.name for item in items)
    for word in ("seed", "penalty", "grammar", "stop"):
        assert word in names
    assert all(item.description and item.needed_when for item in items)
    assert sampler_state() == items  # pure: the same list every call


def test_engine_module_is_pure() -> None:
    code = "import llm_inventory.engine.sampling, sys; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert not {m for m in out if m.split(".")[0] in {"typer", "rich", "click", "yaml"}}


def test_exclusive_never_drops_the_top_token() -> None:
    # A alone (0.60) already crosses 0.5: exclusive would drop it, but the set may not be empty.
    result = run("top_p=0.5", boundary=Boundary.EXCLUSIVE)
    assert result.candidates == ["A"]
    assert result.stages[0].crossing == "A"
    assert result.stages[0].note is not None and "always stays" in result.stages[0].note
