"""`recommend`'s serving pins: replicas that let load queue, a finite run, and the engine's
settings, each in the JSON and in the launch line (which reads back through `launch`)."""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import Invoke

BASE = ["recommend", "llama-3.1-8b", "--device", "h100", "--isl", "1000", "--osl", "200",
        "--format", "json"]


def test_pinned_replicas_let_the_load_queue_instead_of_adding_replicas(invoke: Invoke) -> None:
    free = invoke(*BASE, "--qps", "200").json()["chosen"]
    assert free["replicas"] > 1  # one replica cannot serve 200 requests/s
    pinned = invoke(*BASE, "--qps", "200", "--replicas", "1").json()
    one = pinned["chosen"]
    assert all(p["replicas"] == 1 for p in pinned["plans"])
    assert not any(p["disaggregation"] == "prefill/decode" for p in pinned["plans"])
    assert one["status"] == "misses"
    assert "the replicas cannot keep up with the rate" in one["misses"]
    # what it serves is what it can, not what was asked
    assert one["tokens_per_s_per_replica"] * 1 < 200 * 200


def test_a_finite_run_queues_and_ttft_counts_the_wait(invoke: Invoke) -> None:
    short = invoke(*BASE, "--qps", "200", "--replicas", "1", "--requests", "500").json()
    long = invoke(*BASE, "--qps", "200", "--replicas", "1", "--requests", "2000").json()
    a, b = short["chosen"], long["chosen"]
    assert "the replicas cannot keep up with the rate" not in b["misses"]
    assert any("requests queue" in n for n in b["notes"])
    # four times the backlog: the wait grows with the run
    assert b["ttft"]["p50"] > 3 * a["ttft"]["p50"] > 0
    assert b["ttft"]["p95"] > b["ttft"]["p50"]
    # below capacity a finite run changes nothing
    calm = invoke(*BASE, "--qps", "1", "--requests", "100").json()["chosen"]
    assert calm["ttft"] == invoke(*BASE, "--qps", "1").json()["chosen"]["ttft"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_batch_settings_reach_the_plan_and_the_launch_line(invoke: Invoke,
                                                           engine: str) -> None:
    data = invoke(*BASE, "--qps", "2", "--engine", engine, "--max-num-seqs", "96",
                  "--max-num-batched-tokens", "4096", "--gpu-memory-utilization",
                  "0.8").json()
    chosen = data["chosen"]
    assert chosen["batch"] <= 96 and chosen["batch_limit"] <= 96
    run = invoke("launch", "--device", "h100", "--count", str(chosen["gpus_per_replica"]),
                 "--format", "json", "--", *shlex.split(data["launch"]))
    assert run.code == 0, run.stderr
    read = run.json()
    assert read["command"]["max_num_seqs"] == 96
    assert read["command"]["max_num_batched_tokens"] == 4096
    assert read["startup"] == data["launch_startup"]
    assert read["plan"]["max_concurrency"] == data["launch_max_concurrency"]
    assert read["plan"]["per_device"]["kv_capacity_tokens"] == data["launch_kv_tokens"]


def test_a_lower_memory_fraction_holds_fewer_tokens(invoke: Invoke) -> None:
    full = invoke(*BASE, "--qps", "2").json()
    less = invoke(*BASE, "--qps", "2", "--gpu-memory-utilization", "0.6").json()
    assert "--gpu-memory-utilization 0.6" in less["launch"]
    assert less["launch_kv_tokens"] < full["launch_kv_tokens"]


@pytest.mark.parametrize(("args", "flag"), [
    (["--replicas", "0"], "--replicas"),
    (["--requests", "0"], "--requests"),
    (["--max-num-seqs", "0"], "--max-num-seqs"),
    (["--max-num-batched-tokens", "-1"], "--max-num-batched-tokens"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
])
def test_bad_pins_exit_2_with_one_line(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke(*BASE, "--qps", "2", *args)
    assert run.code == 2, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert flag in run.stderr


def test_prefill_and_decode_pools_can_be_pinned(invoke: Invoke) -> None:
    args = ["recommend", "llama-3.1-70b", "-d", "h100", "--isl", "8000", "--osl", "200",
            "--qps", "3", "--ttft", "1s", "--tpot", "40ms", "-e", "sglang", "--limit", "0",
            "--format", "json"]

    def pd(*pins: str) -> dict[tuple[int, int], dict[str, object]]:
        plans = invoke(*args, *pins).json()["plans"]
        return {(p["tp"], p["pp"]): p for p in plans
                if p["disaggregation"] == "prefill/decode"}

    free, starved, wide = pd(), pd("--prefill-replicas", "1", "--decode-replicas", "1"), \
        pd("--prefill-replicas", "3", "--decode-replicas", "3")
    assert free and set(free) == set(starved) == set(wide)
    for key, plan in wide.items():
        assert (plan["prefill_replicas"], plan["decode_replicas"]) == (3, 3)
        assert starved[key]["prefill_replicas"] == starved[key]["decode_replicas"] == 1
        # more decode replicas: each carries fewer sequences, so each token comes sooner
        assert plan["running_batch"] < starved[key]["running_batch"] + 1e-9
    # one prefill replica cannot keep up with 3 requests/s of 8,000-token prompts here
    missing = [p for p in starved.values()
               if "the prefill replicas cannot keep up with the rate" in p["misses"]]
    assert missing and all(p["status"] == "misses" and p["ttft"]["p50"] is None
                           for p in missing)
    assert all("inf" not in m for p in missing for m in p["misses"])
