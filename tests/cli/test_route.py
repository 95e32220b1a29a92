"""`inventory route` through Typer's runner: the chapter's batch, JSON keys, EP, errors."""

from __future__ import annotations

import pytest

from llm_inventory.engine.routing import RoutingRequest, simulate_routing
from tests.conftest import Invoke

CHAPTER = ("route", "--experts", "8", "--top-k", "2", "--tokens", "16")
CHAPTER_SEED = "40603"  # routes the chapter's batch as 7, 5, 5, 4, 4, 3, 2, 2


def test_chapter_json(invoke: Invoke) -> None:
    run = invoke(*CHAPTER, "--seed", CHAPTER_SEED, "--steps", "50", "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["schema_version"] == 1
    assert data["step"]["loads"] == [7, 5, 5, 4, 4, 3, 2, 2]
    assert sum(data["step"]["loads"]) == 32
    assert data["step"]["busiest"] == 7
    assert data["step"]["busiest_expert"] == 0
    assert data["step"]["straggler"] == 1.75
    assert all(len(set(chosen)) == 2 for chosen in data["step"]["choices"])
    assert data["step"]["devices"] is None
    assert data["straggler"]["p50"] <= data["straggler"]["p99"] <= data["straggler"]["max"]
    # 8 × (1 − 0.75^16)
    assert data["distinct_experts"]["expected"] == pytest.approx(7.919819, abs=1e-6)
    assert data["distinct_experts"]["simulated"] == pytest.approx(7.92, rel=0.02)
    assert data["decode_expert_bytes"] is None
    assert run.stderr == ""


def test_json_equals_the_library_result(invoke: Invoke) -> None:
    data = invoke(*CHAPTER, "--steps", "20", "--ep", "4", "-f", "json").json()
    request = RoutingRequest(experts=8, top_k=2, tokens=16, steps=20, ep=4)
    assert data == simulate_routing(request).model_dump(mode="json")


def test_defaults_are_the_chapter_batch(invoke: Invoke) -> None:
    bare = invoke("route", "--steps", "20", "-f", "json").json()
    spelled = invoke(*CHAPTER, "--steps", "20", "-f", "json").json()
    assert bare == spelled


def test_yaml_matches_json(invoke: Invoke) -> None:
    import yaml

    as_json = invoke("route", "--steps", "20", "--ep", "2", "-f", "json").json()
    as_yaml = yaml.safe_load(invoke("route", "--steps", "20", "--ep", "2", "-f", "yaml").stdout)
    assert as_json == as_yaml


def test_table(invoke: Invoke) -> None:
    run = invoke(*CHAPTER, "--seed", CHAPTER_SEED, "--ep", "4", "--steps", "50")
    assert run.code == 0, run.stderr
    assert "busiest: expert 0 with 7 · mean 4 · straggler 1.75×" in run.stdout
    lines = run.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "┃ dispatch ┃" in line)
    assert " send ┃" in lines[at + 1] and " recv ┃" in lines[at + 1]
    assert "vLLM" in run.stdout
    assert "Over 50 steps" in run.stdout


def test_ep_devices(invoke: Invoke) -> None:
    data = invoke(*CHAPTER, "--experts", "10", "--ep", "4", "--steps", "10", "-f", "json").json()
    devices = data["step"]["devices"]
    assert [d["experts"] for d in devices] == [3, 3, 2, 2]
    assert sum(d["load"] for d in devices) == 32
    one = invoke(*CHAPTER, "--ep", "1", "--steps", "10", "-f", "json").json()
    assert one["step"]["devices"][0]["dispatch_send_bytes"] == 0
    assert one["step"]["dispatch_bytes"] == 0


def test_expert_bytes(invoke: Invoke) -> None:
    """Mixtral-8x7B: 3 × 4096 × 14336 × 2 B = 336 MiB an expert, 32 MoE layers."""
    data = invoke(*CHAPTER, "--expert-bytes", "336MiB", "--moe-layers", "32", "--steps", "20",
                  "-f", "json").json()
    weights = data["expert_weights"]
    assert weights["expert_bytes"] == 352_321_536
    assert weights["active_bytes"] == 22_548_578_304
    assert weights["resident_bytes"] == 90_194_313_216
    assert data["decode_expert_bytes"] == weights["read_bytes"]
    assert weights["read_fraction_of_resident"] > 0.98


def test_large_batch_reads_the_resident_size(invoke: Invoke) -> None:
    data = invoke("route", "--experts", "64", "--top-k", "2", "--tokens", "1K", "--steps", "5",
                  "--expert-bytes", "1MiB", "-f", "json").json()
    assert data["tokens"] == 1024
    assert data["decode_expert_bytes"] == data["expert_weights"]["resident_bytes"]


def test_skew_option(invoke: Invoke) -> None:
    data = invoke("route", "--skew", "1.2", "--steps", "20", "-f", "json").json()
    assert data["popularity"] == "zipf s=1.2"
    assert data["skew"] == 1.2


def test_moe_layers_without_expert_bytes_warns(invoke: Invoke) -> None:
    run = invoke("route", "--moe-layers", "32", "--steps", "5", "-f", "json")
    assert run.code == 0
    assert run.json()["decode_expert_bytes"] is None
    assert "--moe-layers" in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--top-k", "9"], "--top-k"),
        (["--top-k", "0"], "--top-k"),
        (["--experts", "0"], "--experts"),
        (["--experts", "-8"], "--experts"),
        (["--tokens", "0"], "--tokens"),
        (["--tokens", "-5"], "--tokens"),
        (["--tokens", "many"], "--tokens"),
        (["--skew", "nan"], "--skew"),
        (["--skew", "inf"], "--skew"),
        (["--skew", "-1"], "--skew"),
        (["--skew", "11"], "--skew"),
        (["--skew", "steep"], "--skew"),
        (["--ep", "9"], "--ep"),
        (["--ep", "0"], "--ep"),
        (["--steps", "0"], "--steps"),
        (["--steps", "10000000"], "--steps"),
        (["--tokens", "1M", "--top-k", "8", "--steps", "100"], "--steps"),
        (["--seed", "-1"], "--seed"),
        (["--hidden", "0"], "--hidden"),
        (["--activation-dtype", "fp9"], "--activation-dtype"),
        (["--dtype", "fp8"], "--activation-dtype fp8"),
        (["--expert-bytes", "lots"], "--expert-bytes"),
        (["--expert-bytes", "-5"], "--expert-bytes"),
        (["--expert-bytes", "0"], "--expert-bytes"),
        (["--expert-bytes", "NaN GiB"], "--expert-bytes"),
        (["--expert-bytes", "1.5"], "--expert-bytes"),
        (["--moe-layers", "0"], "--moe-layers"),
        (["--format", "xml"], "--format"),
    ],
)
def test_bad_input_is_one_line_exit_2(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke("route", *args)
    assert run.code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert flag in run.stderr
    assert "Traceback" not in run.stderr


def test_help_has_an_example(invoke: Invoke) -> None:
    run = invoke("route", "--help")
    assert run.code == 0
    assert "Example: inventory route" in run.stdout


def test_help_example_runs(invoke: Invoke) -> None:
    run = invoke("route", "--help")
    example = next(line for line in run.stdout.splitlines() if "Example: inventory" in line)
    args = example.split("Example: inventory", 1)[1].split()
    assert invoke(*args).code == 0


def test_json_run_does_not_load_rich() -> None:
    import subprocess
    import sys

    code = (
        "import contextlib, io, sys\n"
        "from llm_inventory.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['route', '--steps', '5', '--ep', '2', '--format', 'json']) == 0\n"
        "print('\\n'.join(sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "rich" not in loaded and "yaml" not in loaded
