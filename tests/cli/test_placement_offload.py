"""`placement` and `launch` with offload and KV tiers, through the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import Invoke


def test_placement_json_has_bytes_per_tier(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "l4", "-n", "1", "--cpu-offload-gb", "4",
                 "--kv-offload", "40GiB", "--reload-tokens", "4k", "--launch", "-f", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    plan = data["plans"][0]
    tiers = plan["tiers"]["per_device"]
    assert tiers["host_weight_bytes"] == 4 * 2**30
    assert tiers["host_kv_bytes"] == 40 * 2**30
    assert plan["tiers"]["reload_tokens"] == 4000
    assert "--cpu-offload-gb 4.0" in plan["launch"][0]
    assert "--kv-offloading-size 40.0" in plan["launch"][0]
    assert set(data["trust"]) >= {"tiers", "tiers_time"}


def test_placement_table_shows_where_bytes_live(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "-e", "sglang",
                 "--hicache-ratio", "2", "--limit", "1")
    assert run.code == 0, run.stderr
    assert "host memory per device: KV" in run.stdout
    assert "where bytes live" in run.stdout and "█ GPU ▓ host ▒ disk" in run.stdout


def test_without_offload_there_are_no_tiers(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "-f", "json")
    assert run.code == 0
    assert all(p["tiers"] is None for p in run.json()["plans"])
    assert "tiers" not in run.json()["trust"]


def test_launch_no_longer_ignores_offload_flags(invoke: Invoke) -> None:
    run = invoke("launch", "-d", "l4", "-f", "json", "--", "vllm", "serve",
                 "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8000",
                 "--cpu-offload-gb", "2",
                 "--kv_offloading_size", "8", "--kv-offloading-backend", "lmcache")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["command"]["ignored"] == []
    assert data["command"]["offload"]["kv_backend"] == "lmcache"
    assert data["plan"]["tiers"]["per_device"]["host_weight_bytes"] == 2 * 2**30


@pytest.mark.parametrize(("args", "field"), [
    (["--kv-offload", "4,disk"], "kv_offload"),
    (["--kv-offload", "-4"], "kv_offload"),
    (["--cpu-offload-gb", "nan"], "cpu_offload_gb"),
    (["--cpu-offload-gb", "1e400"], "cpu_offload_gb"),
    (["--hicache-ratio", "0"], "hicache_ratio"),
    (["--hicache-size", "1.5"], "hicache_size"),
    (["--hicache-ratio", "2"], "hicache"),  # vLLM has no HiCache
    (["-e", "trtllm", "--cpu-offload-gb", "2"], "offload"),
    (["-e", "sglang", "--cpu-offload-gb", "1.5"], "cpu_offload"),
])
def test_bad_offload_input_is_one_line_and_exit_2(invoke: Invoke, args: list[str],
                                                   field: str) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert field.replace("_", "-") in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_launch_refuses_a_bad_offload_value_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llm_inventory", "launch", "-d", "h100", "--", "python", "-m",
         "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
         "--enable-hierarchical-cache", "--hicache-ratio", "-1"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == "" and "--hicache-ratio" in done.stderr
    assert "Traceback" not in done.stderr


def test_recommend_takes_a_kv_tier_and_adds_the_reload_to_the_ttft(invoke: Invoke) -> None:
    args = ["recommend", "llama-3.1-8b", "-d", "h100", "-e", "sglang", "--isl", "2000",
            "--osl", "200", "--qps", "2", "-f", "json"]
    base = invoke(*args)
    tiered = invoke(*args, "--hicache-ratio", "2", "--reload-tokens", "8000")
    assert base.code == tiered.code == 0, tiered.stderr
    a, b = base.json()["chosen"], tiered.json()["chosen"]
    assert a["tiers"] is None and b["tiers"]["per_device"]["host_kv_bytes"] > 0
    reload = b["tiers"]["reload_s"]
    assert reload > 0 and any("reloading 8,000 prefix tokens" in n for n in b["notes"])
    if (a["tp"], a["batch"]) == (b["tp"], b["batch"]):
        assert b["ttft"]["p50"] > a["ttft"]["p50"]


def test_recommend_refuses_weights_moved_to_host() -> None:
    from llm_inventory.engine.offload import GIB, Offload
    from llm_inventory.engine.recommend import RecommendRequest, Workload
    from llm_inventory.engine.recommend.core import recommend
    from llm_inventory.errors import InputError
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.presets import load_preset

    request = RecommendRequest(model_ref="llama-3.1-8b", devices=[resolve_device("h100")],
                               workload=Workload(isl=1000, osl=100, qps=1.0),
                               offload=Offload(weight_bytes=GIB))
    with pytest.raises(InputError) as caught:
        recommend(load_preset("llama-3.1-8b"), request)
    assert caught.value.field == "cpu_offload_gb"


def test_no_kv_offload_is_llamacpp_own(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "rtx-4090", "-n", "1", "-e", "llamacpp",
                 "--context", "32k", "--no-kv-offload", "--launch")
    assert run.code == 0, run.stderr
    assert "-nkvo" in run.stdout and "where bytes live" in run.stdout
    refused = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--no-kv-offload")
    assert refused.code == 2 and "no_kv_offload" in refused.stderr
