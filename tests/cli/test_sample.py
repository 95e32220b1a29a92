"""`inventory sample` through Typer's runner: the worked example, JSON keys, flags, errors."""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import Invoke

# The worked example's distribution (model-topologies chapter, "One distribution through the
# processor chain").
SEED = "A=0.60,B=0.25,C=0.10,D=0.04,E=0.01"
CHAIN = "temperature=0.5,top_k=2,top_p=0.9,repetition_penalty=1.3@A"


def test_seed_table(invoke: Invoke) -> None:
    run = invoke("sample", "--probs", SEED, "--chain", CHAIN)
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    header = next(line for line in run.stdout.splitlines() if "┃ token" in line)
    for label in ("input", "1. temperature=0.5", "2. top_k=2", "3. top_p=0.9",
                  "4. repetition_penalty=1.3@A"):
        assert label in header
    row_a = next(line for line in run.stdout.splitlines() if line.startswith("│ A "))
    assert "0.6000" in row_a and "0.8291" in row_a and "0.8521" in row_a and "0.8091" in row_a
    row_c = next(line for line in run.stdout.splitlines() if line.startswith("│ C "))
    assert row_c.count("removed") == 3
    assert "candidates (most probable first): A, B" in run.stdout


def test_seed_json(invoke: Invoke) -> None:
    data = invoke("sample", "--probs", SEED, "--chain", CHAIN, "--format", "json").json()
    assert data["schema_version"] == 1
    assert [s["processor"]["name"] for s in data["stages"]] == [
        "temperature", "top_k", "top_p", "repetition_penalty",
    ]
    assert data["stages"][0]["processor"]["value"] == 0.5
    assert data["stages"][1]["processor"]["value"] == 2
    assert data["stages"][3]["processor"]["tokens"] == ["A"]
    assert data["stages"][0]["probs"]["A"] == pytest.approx(0.829111, abs=1e-6)
    assert data["stages"][1]["removed"] == ["C", "D", "E"]
    assert data["stages"][1]["probs"]["C"] == 0.0
    assert data["candidates"] == ["A", "B"]
    for stage in data["stages"]:
        assert sum(stage["probs"].values()) == pytest.approx(1.0, abs=1e-9)


def test_json_equals_the_library(invoke: Invoke) -> None:
    from llm_inventory.engine.sampling import parse_chain, parse_pairs, sample

    data = invoke("sample", "--probs", SEED, "--chain", CHAIN, "-f", "json").json()
    assert data == sample(parse_chain(CHAIN), probs=parse_pairs(SEED, "probs")).model_dump(
        mode="json"
    )


def test_yaml_matches_json(invoke: Invoke) -> None:
    import yaml

    as_json = invoke("sample", "--chain", CHAIN, "-f", "json").json()
    as_yaml = yaml.safe_load(invoke("sample", "--chain", CHAIN, "-f", "yaml").stdout)
    assert as_json == as_yaml


def test_default_distribution_is_the_worked_example(invoke: Invoke) -> None:
    data = invoke("sample", "-f", "json").json()
    assert data["input"]["probs"]["A"] == pytest.approx(0.60)
    assert data["stages"] == []
    assert data["candidates"] == ["A", "B", "C", "D", "E"]


@pytest.mark.parametrize(
    ("boundary", "candidates", "verdict"),
    [("inclusive", ["A", "B", "C"], "kept"), ("exclusive", ["A", "B"], "dropped")],
)
def test_top_p_boundary(invoke: Invoke, boundary: str, candidates: list[str], verdict: str) -> None:
    args = ("sample", "--chain", "top_p=0.9", "--top-p-boundary", boundary)
    data = invoke(*args, "-f", "json").json()
    assert data["candidates"] == candidates
    assert data["top_p_boundary"] == boundary
    assert data["stages"][0]["crossing"] == "C"
    table = invoke(*args).stdout
    assert f"C crosses 0.9 (cumulative 0.9500): {verdict} ({boundary})" in table


def test_order_hazard(invoke: Invoke) -> None:
    before = invoke("sample", "--chain", "repetition_penalty=1.3@A,top_p=0.85", "-f", "json")
    after = invoke("sample", "--chain", "top_p=0.85,repetition_penalty=1.3@A", "-f", "json")
    assert before.json()["candidates"] == ["A", "B", "C"]
    assert after.json()["candidates"] == ["A", "B"]


def test_logits_input(invoke: Invoke) -> None:
    data = invoke(
        "sample", "--logits", "A=1.2,B=0.3,C=-0.5", "--chain", "repetition_penalty=1.5@A+C",
        "-f", "json",
    ).json()
    assert data["input"]["logits"] == {"A": 1.2, "B": 0.3, "C": -0.5}
    assert data["stages"][0]["logits"]["A"] == pytest.approx(0.8)  # positive: divided
    assert data["stages"][0]["logits"]["C"] == pytest.approx(-0.75)  # negative: multiplied


def test_greedy(invoke: Invoke) -> None:
    data = invoke("sample", "--chain", "temperature=0", "-f", "json").json()
    assert data["candidates"] == ["A"]
    assert data["stages"][0]["probs"]["A"] == 1.0


def test_sum_off_one_warns_on_stderr(invoke: Invoke) -> None:
    run = invoke("sample", "--probs", "A=0.5,B=0.3", "-f", "json")
    assert run.code == 0
    assert run.stderr.count("\n") == 1 and "warning" in run.stderr and "--probs" in run.stderr
    assert run.json()["input"]["probs"]["A"] == pytest.approx(0.625)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--probs", "A=x"], "--probs"),
        (["--probs", "A=-0.1"], "--probs"),
        (["--probs", "A=nan"], "--probs"),
        (["--probs", "A=0"], "--probs"),
        (["--probs", "A=1.5"], "--probs"),
        (["--probs", "A=0.5,A=0.5"], "--probs"),
        (["--probs", ""], "--probs"),
        (["--probs", "A0.6,B=0.4"], "--probs"),
        (["--logits", "A=inf"], "--logits"),
        (["--logits", "A=1,A=2"], "--logits"),
        (["--probs", SEED, "--logits", "A=1.2,B=0.3"], "--logits"),
        (["--chain", "nucleus=0.9"], "--chain"),
        (["--chain", "top_k=0"], "--chain"),
        (["--chain", "top_k=two"], "--chain"),
        (["--chain", "top_p=1.5"], "--chain"),
        (["--chain", "min_p=-0.1"], "--chain"),
        (["--chain", "temperature=-1"], "--chain"),
        (["--chain", "repetition_penalty=1.3@Z"], "--chain"),
        (["--chain", "repetition_penalty=1.3"], "--chain"),
        (["--chain", "ban@Z"], "--chain"),
        (["--chain", "ban@A+B+C+D+E"], "--chain"),
        (["--chain", "top_k"], "--chain"),
        (["--top-p-boundary", "middle"], "--top-p-boundary"),
        (["--format", "xml"], "--format"),
    ],
)
def test_bad_input_is_one_line_exit_2(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke("sample", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert flag in run.stderr
    assert "Traceback" not in run.stderr


def test_help_example_runs_as_written(invoke: Invoke) -> None:
    run = invoke("sample", "--help")
    assert run.code == 0
    line = next(x for x in run.stdout.splitlines() if "Example: inventory sample" in x)
    example = shlex.split(line.split("Example: ", 1)[1])
    done = invoke(*example[1:])
    assert done.code == 0, done.stderr
    assert "candidates" in done.stdout
