"""`inventory placement` through the runner: JSON keys, checks, errors."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke


def test_json_keys_scripts_rely_on(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-70b", "--device", "h100-sxm", "--count", "8",
                 "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    plan = data["plans"][0]
    for key in ("tp", "pp", "ep", "dp", "legal", "reasons", "fits", "max_concurrency",
                "warnings"):
        assert key in plan
    for key in ("weight_bytes", "reserve_bytes", "kv_pool_bytes", "kv_capacity_tokens"):
        assert isinstance(plan["per_device"][key], int)
    assert data["schema_version"] == 1
    assert "estimate" in data["estimate"]


def test_table_marks_the_reserve_as_an_estimate(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "--device", "h100", "--count", "2")
    assert run.code == 0
    assert "reserve is an estimate" in run.stdout
    assert "fits" in run.stdout


def test_require_fit(invoke: Invoke) -> None:
    ok = invoke("placement", "llama-3.1-8b", "--device", "h100-sxm", "--count", "1",
                "--require-fit")
    assert ok.code == 0
    no = invoke("placement", "llama-3.1-405b", "--device", "l4", "--count", "2",
                "--require-fit", "--format", "json")
    assert no.code == 1
    assert no.json()["fitting"] == 0
    assert "--require-fit" in no.stderr


def test_legal_only_hides_illegal(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-70b", "-d", "h100-sxm", "-n", "8", "--legal-only",
                  "-f", "json", "--limit", "0").json()
    assert data["plans"] and all(p["legal"] for p in data["plans"])


def test_device_memory_one_off(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-8b", "--device-memory", "48GiB", "--count", "1",
                  "-f", "json").json()
    assert data["device_memory_bytes"] == 48 * 2**30


def test_quantized_weights_change_the_fit(invoke: Invoke) -> None:
    def weights(*extra: str) -> int:
        data = invoke("placement", "llama-3.1-8b", "-d", "h100-sxm", "-n", "1", "--tp", "1",
                      "--pp", "1", "-f", "json", *extra).json()
        return int(data["plans"][0]["per_device"]["weight_bytes"])

    bf16, fp8, int4 = weights(), weights("--dtype", "fp8"), weights("--dtype", "int4")
    assert int4 < fp8 < bf16


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["llama-3.1-8b", "--device", "h1000"], "device"),
        (["llama-3.1-8b", "--device", "h100", "--count", "0"], "--count"),
        (["llama-3.1-8b", "--device", "h100", "--count", "-3"], "--count"),
        (["llama-3.1-8b"], "--device"),
        (["llama-3.1-8b", "--device", "h100", "--gpu-memory-utilization", "1.5"],
         "--gpu-memory-utilization"),
        (["llama-3.1-8b", "--device", "h100", "--gpu-memory-utilization", "nan"],
         "--gpu-memory-utilization"),
        (["llama-3.1-8b", "--device", "h100", "--tp", "4", "--pp", "4", "--count", "8"],
         "--count"),
        (["llama-3.1-8b", "--device-memory", "lots"], "--device-memory"),
        (["no-such-model", "--device", "h100"], "no-such-model"),
        (["llama-3.1-8b", "--device", "h100", "--kv-dtype", "int4"], "--kv-dtype"),
    ],
)
def test_bad_input(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke("placement", *args)
    assert run.code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert flag in run.stderr


def test_llamacpp_offload_shows_the_host_share(invoke: Invoke) -> None:
    """-ngl leaves layers in host RAM: the table says how much, as JSON's plans[].host."""
    args = ("placement", "qwen3-8b", "--engine", "llamacpp", "--engine-arg",
            "n_gpu_layers=20", "--device", "rtx-4090", "--count", "1")
    host = invoke(*args, "--format", "json").json()["plans"][0]["host"]
    assert host["layers"] == 16 and host["total_bytes"] > host["weight_bytes"] > 0
    table = invoke(*args, "--units", "iec").stdout
    assert "1. host RAM " in table and "16 layers, weights " in table
