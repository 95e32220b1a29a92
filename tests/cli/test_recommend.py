"""`inventory recommend` through the runner: exit codes, bad input, JSON, plots, launch."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import Invoke

SEED = ["recommend", "examples/dense-70b.yaml", "--device", "h100", "--isl", "7000",
        "--osl", "1000", "--qps", "2"]


def test_require_slo_exit_codes(invoke: Invoke) -> None:
    ok = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--require-slo", "--format", "json")
    assert ok.code == 0, ok.stderr
    assert ok.json()["meeting"] > 0
    no = invoke(*SEED, "--tpot", "1ms", "--require-slo", "--format", "json")
    assert no.code == 1
    assert no.json()["meeting"] == 0
    assert no.stderr.startswith("inventory: error: --require-slo: no plan")
    assert len(no.stderr.splitlines()) == 1


@pytest.mark.parametrize(("args", "flag"), [
    (["--isl", "-5"], "--isl"),
    (["--isl", "0"], "--isl"),
    (["--osl", "0"], "--osl"),
    (["--qps", "0"], "--qps"),
    (["--qps", "-1"], "--qps"),
    (["--qps", "nan"], "--qps"),
    (["--ttft", "nan"], "--ttft"),
    (["--ttft", "-2s"], "--ttft"),
    (["--tpot", "0ms"], "--tpot"),
    (["--e2e", "inf"], "--e2e"),
    (["--prefix-share", "1"], "--prefix-share"),
    (["--prefix-share", "nan"], "--prefix-share"),
    (["--osl", "200000"], "--osl"),
    (["--power-price", "-1"], "--power-price"),
    (["--objective", "speed"], "--objective"),
    (["--percentile", "p99"], "--percentile"),
    (["--concurrency", "0"], "--concurrency"),
    (["--provider", "nobody"], "--provider"),
])
def test_bad_workloads_and_targets_exit_2_with_one_line(invoke: Invoke, args: list[str],
                                                        flag: str) -> None:
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--isl", "1000",
                 "--osl", "200", *args)
    assert run.code == 2, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert flag in run.stderr


def test_json_carries_plans_costs_trust_and_the_launch(invoke: Invoke) -> None:
    run = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--format", "json")
    data = run.json()
    chosen = data["chosen"]
    for key in ("replicas", "gpus", "status", "ttft", "tpot", "cost",
                "tokens_per_s_per_gpu", "tokens_per_s_per_user"):
        assert key in chosen
    assert chosen["cost"]["source"].startswith("http") and chosen["cost"]["as_of"]
    assert data["trust"]["latency"]["kind"] == "calibrated"
    assert data["launch"].startswith("vllm serve examples/dense-70b.yaml")


def test_the_launch_command_reads_back_to_the_plan(invoke: Invoke) -> None:
    from llm_inventory.engine import serving
    from llm_inventory.engine.serving.base import ServingEngine

    data = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--format", "json").json()
    chosen = data["chosen"]
    argv = shlex.split(data["launch"])
    engine = serving.get("vllm")
    assert argv[:2] == ["vllm", "serve"]
    if type(engine).parse_launch is not ServingEngine.parse_launch:
        read = engine.parse_launch(argv[2:])
        assert (read.tp, read.pp, read.context) == (chosen["tp"], chosen["pp"], 8000)
        assert read.max_num_seqs == chosen["batch"]
    else:  # until vLLM's reader lands: read the flags as vLLM's argument parser would
        flags = dict(zip(argv[3::2], argv[4::2], strict=False))
        assert int(flags["--tensor-parallel-size"]) == chosen["tp"]
        assert int(flags.get("--pipeline-parallel-size", 1)) == chosen["pp"]
        assert int(flags["--max-model-len"]) == 8000
        assert int(flags["--max-num-seqs"]) == chosen["batch"]
        assert float(flags["--gpu-memory-utilization"]) == 0.92


def test_table_shows_status_marks_the_front_and_the_launch(invoke: Invoke) -> None:
    run = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--limit", "3")
    assert run.code == 0
    out = run.stdout
    assert "meets" in out and "Pareto front" in out and "●" in out
    assert "launch: vllm serve" in out
    assert "calibrated, extrapolated (±" in " ".join(out.split())


def test_use_case_presets_and_histograms(invoke: Invoke, tmp_path: Path) -> None:
    chat = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--use-case", "chat",
                  "--qps", "4", "--format", "json").json()
    assert chat["workload"]["isl"] == 1000 and chat["targets"]["percentile"] == "p95"
    hist = tmp_path / "lengths.csv"
    hist.write_text("isl,osl,weight\n500,100,3\n4000,800,1\n")
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--lengths", str(hist),
                 "--qps", "2", "--format", "json")
    assert run.code == 0, run.stderr
    assert len(run.json()["workload"]["histogram"]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {isl: 500, osl: -1}\n")
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--lengths", str(bad))
    assert run.code == 2 and "osl" in run.stderr


@pytest.mark.parametrize("rows", ["500,100\nnan,100\n", "500,100\n1e3,100\n",
                                  "isl,osl\n-5,100\n"])
def test_a_length_row_that_is_not_a_count_is_bad_input(invoke: Invoke, tmp_path: Path,
                                                       rows: str) -> None:
    """Only the first line may be a header: a later row that is not a count was dropped
    silently, changing the histogram."""
    hist = tmp_path / "lengths.csv"
    hist.write_text(rows)
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--lengths", str(hist),
                 "--qps", "2")
    assert run.code == 2 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert "lengths.csv" in run.stderr


def test_weights_whose_sum_overflows_are_relative(invoke: Invoke, tmp_path: Path) -> None:
    """Two weights of 1e308 sum past float range: once a ValueError (exit 3)."""
    hist = tmp_path / "lengths.csv"
    hist.write_text("isl,osl,weight\n500,100,1e308\n1500,100,1e308\n")
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--lengths", str(hist),
                 "--qps", "2", "--format", "json")
    assert run.code == 0, run.stderr
    assert run.json()["workload"]["histogram"][0]["weight"] == 1e308


@pytest.mark.parametrize(("args", "field"), [
    (["--prices", "{}", "--provider", "ours"], "on_demand"),
    (["--power-price", "1e307"], "--power-price"),
])
def test_a_price_past_float_range_is_bad_input(invoke: Invoke, tmp_path: Path,
                                               args: list[str], field: str) -> None:
    """$1e308 an hour once printed `Infinity` into the JSON as the monthly cost."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  - {device: h100-sxm, provider: ours, on_demand: 1e308,"
                      " as_of: '2026-02-01', source: a test}\n")
    run = invoke(*SEED, *[str(prices) if a == "{}" else a for a in args], "--format", "json")
    assert run.code == 2 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert field in run.stderr


def test_prices_file_overrides_the_catalog(invoke: Invoke, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  - {device: h100-sxm, provider: ours, on_demand: 1.25,"
                      " as_of: '2026-02-01', source: our contract}\n")
    data = invoke(*SEED, "--prices", str(prices), "--provider", "ours",
                  "--format", "json").json()
    assert data["chosen"]["cost"]["price_per_gpu_hour"] == 1.25
    broken = tmp_path / "broken.yaml"
    broken.write_text("prices:\n  - {device: h100-sxm, provider: x, on_demand: 1}\n")
    run = invoke(*SEED, "--prices", str(broken))
    assert run.code == 2 and "as_of" in run.stderr


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_plot_files(invoke: Invoke, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"chart{suffix}"
    run = invoke(*SEED, "--ttft", "2s", "--plot", str(target), "--format", "json")
    assert run.code == 0, run.stderr
    data = target.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        text = data.decode()
        assert text.lstrip().startswith("<?xml") and "</svg>" in text
        for label in ("pareto front", "KV tokens", "maximum concurrency"):
            assert label in text


def test_plot_series_are_the_results_figures(invoke: Invoke) -> None:
    from llm_inventory.engine.recommend import RecommendResult
    from llm_inventory.render.plot import plot_series

    data = invoke(*SEED, "--ttft", "2s", "--format", "json").json()
    result = RecommendResult.model_validate(data)
    series = plot_series(result)
    front = series["pareto front"]
    assert front and front == sorted(front)
    assert len(front) == sum(1 for p in data["pareto"] if p["on_front"])
    assert [x for x, _ in series["KV tokens"]] == [c["context"] for c in data["capacity"]]


def test_plot_refuses_other_files_before_any_work(invoke: Invoke, tmp_path: Path) -> None:
    run = invoke(*SEED, "--plot", str(tmp_path / "chart.jpg"))
    assert run.code == 2 and "--plot" in run.stderr and run.stdout == ""


def test_json_equals_the_library(invoke: Invoke) -> None:
    from llm_inventory.engine.recommend import RecommendRequest, Targets, Workload, recommend
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model
    from llm_inventory.spec.prices import price_catalog

    data = invoke(*SEED, "--ttft", "2s", "--format", "json").json()
    result = recommend(load_model("examples/dense-70b.yaml"), RecommendRequest(
        model_ref="examples/dense-70b.yaml", devices=[resolve_device("h100")],
        workload=Workload(isl=7000, osl=1000, qps=2.0), targets=Targets(ttft_s=2.0),
        prices=price_catalog()))
    assert data == json.loads(result.model_dump_json())


def test_the_other_engines_commands_keep_their_own_memory_default(invoke: Invoke) -> None:
    """vLLM's 0.92 of the total is not SGLang's fraction of free memory nor TensorRT-LLM's
    of what the weights leave: the equivalents leave the flag to each engine, and each reads
    back through `inventory launch` to the chosen split, context and batch. An engine whose
    command line cannot say the split (llama.cpp has no tensor parallelism) gets none."""
    data = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--format", "json").json()
    chosen, others = data["chosen"], data["equivalents"]
    assert set(others) >= {"sglang", "trtllm"}
    assert ("llamacpp" in others) == (chosen["tp"] == 1)
    assert "--mem-fraction-static" not in others["sglang"]
    assert "free_gpu_memory_fraction" not in others["trtllm"]
    for name, command in others.items():
        run = invoke("launch", "--device", "h100", "--format", "json", "--",
                     *shlex.split(command))
        assert run.code == 0, (name, run.stderr)
        read = run.json()
        assert read["engine"] == name and read["count"] == chosen["gpus_per_replica"]
        assert read["command"]["max_num_seqs"] == chosen["batch"]
        assert (read["plan"]["tp"], read["plan"]["pp"]) == (chosen["tp"], chosen["pp"])
        assert read["context"] == 8000


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_launch_reads_back_to_the_same_prediction(invoke: Invoke, engine: str) -> None:
    """The chosen command through `inventory launch` prints what recommend says it will."""
    data = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--isl", "2000", "--osl",
                  "500", "--qps", "4", "--engine", engine, "--format", "json").json()
    chosen = data["chosen"]
    run = invoke("launch", "--device", "h100", "--count", str(chosen["gpus_per_replica"]),
                 "--format", "json", "--", *shlex.split(data["launch"]))
    assert run.code == 0, run.stderr
    read = run.json()
    assert read["starts"] and read["startup"] == data["launch_startup"]
    assert read["plan"]["per_device"]["kv_capacity_tokens"] == data["launch_kv_tokens"]
    assert read["plan"]["max_concurrency"] == data["launch_max_concurrency"]
    assert read["command"]["max_num_seqs"] == chosen["batch"]
    assert data["trust"]["launch"]["kind"] == "engine rule"
    # the launched engine holds the operating batch at the workload's context
    assert read["plan"]["max_concurrency"] >= chosen["batch"]


def test_llamacpp_holds_the_slots_its_room_takes(invoke: Invoke) -> None:
    """llama.cpp allocates what -c asks, so its bound is the room over one sequence, not the
    one context a default launch allocates."""
    data = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--isl", "2000", "--osl",
                  "500", "--qps", "4", "--engine", "llamacpp", "--format", "json").json()
    assert data["chosen"]["batch_limit"] > 100
    assert data["chosen"]["replicas"] == 1


def test_the_readmes_line_by_line_account_quotes_todays_figures(invoke: Invoke) -> None:
    """The prose under the README's recommend block restates its figures; the block is
    regenerated, the prose is not, so it is checked against a fresh run."""
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = readme.split("Line by line:", 1)[1].split("### ", 1)[0]
    data = invoke(*SEED, "--ttft", "2s", "--tpot", "50ms", "--percentile", "p95",
                  "--format", "json").json()
    chosen = data["chosen"]
    placed = invoke("placement", "examples/dense-70b.yaml", "--device", "h100", "--count",
                    "8", "--context", "8000", "--tp", str(chosen["tp"]), "--pp", "1",
                    "--format", "json").json()
    tokens = next(p for p in placed["plans"] if p["disaggregation"] is None
                  )["per_device"]["kv_capacity_tokens"]
    limit, batch = chosen["batch_limit"], chosen["batch"]
    assert f"KV pool of {tokens:,} tokens per replica" in prose
    assert f"holds {limit}\n  requests" in prose or f"holds {limit} requests" in prose
    assert f"`batch° {batch}/{limit}`" in prose
    assert f"{limit} × 7,000 ÷ 1,000 = {limit * 7000 // 1000:,} prompt tokens" in prose
    assert f"{chosen['replicas']} replicas, {chosen['gpus']} GPUs" in prose
    assert f"prints {data['launch_kv_tokens']:,} tokens" in prose
    assert f"{int(data['launch_max_concurrency'])} requests" in prose


def test_several_engines_name_each_row(invoke: Invoke) -> None:
    run = invoke("recommend", "llama-3.1-8b", "--device", "h100", "--isl", "2000", "--osl",
                 "300", "--qps", "5", "--engine", "vllm", "--engine", "sglang", "--limit", "0")
    assert run.code == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if " tp1 pp1 ×1 " in line]
    assert any(" vllm tp1" in r for r in rows) and any(" sglang tp1" in r for r in rows)


def test_engines_and_devices_take_commas_as_placement_does(invoke: Invoke) -> None:
    args = ["recommend", "llama-3.1-8b", "--isl", "1000", "--osl", "200", "--qps", "2",
            "--format", "json", "--limit", "0"]
    commas = invoke(*args, "--device", "h100,l40s", "--engine", "vllm,sglang").json()
    repeated = invoke(*args, "--device", "h100", "--device", "l40s", "--engine", "vllm",
                      "--engine", "sglang").json()
    assert commas["plans"] == repeated["plans"]
    assert {(p["device"], p["engine"]) for p in commas["plans"]} == {
        ("h100-sxm", "vllm"), ("h100-sxm", "sglang"), ("l40s", "vllm"), ("l40s", "sglang")}


def test_no_plan_at_all_says_where_to_look(invoke: Invoke) -> None:
    args = ["recommend", "llama-3.1-70b", "--device", "l4", "--count", "1", "--isl", "1000",
            "--osl", "200", "--qps", "1"]
    run = invoke(*args)
    assert run.code == 0 and "0 plans considered" in run.stdout
    assert "`inventory placement` shows why" in run.stdout
    assert invoke(*args, "--require-slo").code == 1
