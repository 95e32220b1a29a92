"""Partly occupied GPUs: memory other processes hold, met as each engine meets it.

vLLM (V1) budgets total × gpu_memory_utilization and refuses to start when less is free;
V0 sizes the same pool and runs out of memory allocating it; SGLang and TensorRT-LLM budget a
fraction of the memory they find free, so their pools shrink; llama.cpp allocates what it
needs from what is left. The busiest device a plan uses binds.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.placement.fit import busiest
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.presets import load_preset
from tests.conftest import Invoke

GIB = 2**30


def _first(invoke: Invoke, *args: str) -> dict[str, Any]:
    run = invoke("placement", *args, "-f", "json")
    assert run.code == 0, run.stderr
    plan: dict[str, Any] = run.json()["plans"][0]
    return plan


# Real start-ups that stopped so: the line each printed, the device's total (one consistent
# with the total the line prints, which vLLM rounds to 0.01 GiB), the memory left free,
# the utilisation asked and the era.
REFUSALS = [
    # ovg-project/kvcached#29 (vLLM 0.9.2 V1 worker, A100 SXM4 80GB, default 0.9)
    ("a100-80gb", None, 59.32, "0.9", "vllm@0.19",
     "ValueError: Free memory on device (59.32/79.15 GiB) on startup is less than desired "
     "GPU memory utilization (0.9, 71.24 GiB). Decrease GPU memory utilization or reduce GPU "
     "memory used by other processes."),
    # pytorch/pytorch#175666 (vLLM of February 2026, a 22 GiB card, 0.9 asked)
    (None, 22.0475, 19.77, "0.9", "vllm",
     "ValueError: Free memory on device cuda:0 (19.77/22.05 GiB) on startup is less than "
     "desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or "
     "reduce GPU memory used by other processes."),
    # An RTX 3090 (23.56 GiB) at vLLM's default 0.92, half its memory held elsewhere
    (None, 23.5575, 12.18, "0.92", "vllm",
     "ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than "
     "desired GPU memory utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or "
     "reduce GPU memory used by other processes."),
]


@pytest.mark.parametrize(("device", "total", "free", "utilization", "engine", "line"),
                         REFUSALS)
def test_vllm_refuses_as_its_logs_show(invoke: Invoke, device: str | None,
                                       total: float | None, free: float, utilization: str,
                                       engine: str, line: str) -> None:
    where = ["-d", device] if device else ["--device-memory", str(round(total * GIB))]
    plan = _first(invoke, "qwen3-8b", *where, "-n", "1", "-e", engine,
                  "--gpu-memory-utilization", utilization,
                  "--free", str(round(free * GIB)))
    assert plan["startup_error"] == line
    assert plan["fits"] is False
    assert plan["why"] == f"the engine stops at start-up: {line}"


def test_vllm_keeps_its_pool_when_the_budget_is_free(invoke: Invoke) -> None:
    alone = _first(invoke, "llama-3.1-8b", "-d", "h100-sxm", "-n", "1")
    shared = _first(invoke, "llama-3.1-8b", "-d", "h100-sxm", "-n", "1", "--used", "5GiB")
    assert shared["per_device"]["kv_pool_bytes"] == alone["per_device"]["kv_pool_bytes"]
    assert shared["per_device"]["others_bytes"] == 5 * GIB
    assert shared["startup_error"] is None and shared["fits"]


def test_vllm_v0_runs_out_of_memory_instead(invoke: Invoke) -> None:
    plan = _first(invoke, "llama-3.1-8b", "-d", "h100-sxm", "-n", "1", "-e", "vllm@0.8",
                  "--used", "20GiB")
    assert plan["startup_error"].startswith("torch.OutOfMemoryError: CUDA out of memory")


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_fraction_of_free_engines_lose_their_fraction(invoke: Invoke, engine: str) -> None:
    args = ("llama-3.1-8b", "-d", "h100-sxm", "-n", "1", "-e", engine)
    alone = _first(invoke, *args)
    run = invoke("placement", *args, "--used", "4GiB", "-f", "json")
    result = run.json()
    shared = result["plans"][0]
    fraction = result["gpu_memory_utilization"]
    lost = alone["per_device"]["kv_pool_bytes"] - shared["per_device"]["kv_pool_bytes"]
    page = max(1, shared["per_device"]["kv_bytes_per_token"]) * result["block_size"]
    # the pool loses fraction × 4 GiB, less what rounding to whole pages takes
    assert abs(lost - fraction * 4 * GIB) <= page
    assert shared["startup_error"] is None


def test_llamacpp_allocates_from_what_is_left(invoke: Invoke) -> None:
    args = ("llama-3.1-8b", "-d", "rtx-4090", "-n", "1", "-e", "llamacpp", "--context", "8k")
    assert _first(invoke, *args, "--used", "2GiB")["fits"] is True
    assert _first(invoke, *args, "--used", "9GiB")["fits"] is False


def test_the_busiest_device_a_plan_uses_binds() -> None:
    assert busiest([], 8, 4) == 0
    assert busiest([0, 0, 30 * GIB, 0], 4, 2) == 0  # two plans' worth of free devices
    assert busiest([0, 0, 30 * GIB, 0], 4, 4) == 30 * GIB
    assert busiest([5, 1], 4, 3) == 1  # unlisted devices hold nothing


def test_a_plan_over_fewer_devices_avoids_the_busy_one(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100-sxm", "-n", "4", "--used",
                 "0,0,0,60GiB", "-f", "json")
    plans = {(p["tp"], p["pp"], p["disaggregation"]): p for p in run.json()["plans"]}
    one = plans[(1, 1, None)]  # four replicas would start one on the busy device: three do
    assert (one["dp"], one["devices_used"], one["idle_devices"]) == (3, 3, 1)
    assert one["per_device"]["others_bytes"] == 0 and one["fits"]
    assert any("1 replica fewer" in w for w in one["warnings"])
    four = plans[(4, 1, None)]  # one replica over all four: the busy device binds
    assert four["startup_error"] and not four["fits"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b"]),
       engine=st.sampled_from(["vllm", "vllm@0.19", "vllm@0.8", "sglang", "trtllm",
                               "llamacpp"]),
       count=st.sampled_from([1, 2, 4]))
def test_no_other_process_changes_nothing(model: str, engine: str, count: int) -> None:
    spec = load_preset(model)
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=count, engine=engine,
                               limit=0)
    alone = plan_placement(spec, request)
    idle = plan_placement(spec, request.model_copy(update={"used_bytes": [0] * count}))
    assert alone.model_dump() == idle.model_dump()


@pytest.mark.parametrize(("args", "message"), [
    (["--used", "1GiB", "--free", "2GiB"], "--used: give --used or --free, not both"),
    (["--used", "1GiB,2GiB"], "2 devices listed; --count is 1"),
    (["--used", "90GiB"], "is more than the device's"),
    (["--used", "1GiB,,2GiB"], "expected sizes separated by commas"),
    (["--free", "lots"], "--free:"),
])
def test_bad_occupancy_is_one_line(invoke: Invoke, args: list[str], message: str) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100-sxm", "-n", "1", *args)
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.splitlines()) == 1


def test_a_custom_device_meets_others_too() -> None:
    device = custom_device(24 * GIB)
    request = PlacementRequest(device=device, count=1, used_bytes=[20 * GIB], limit=0)
    result = plan_placement(load_preset("qwen3-8b"), request)
    assert all(p.startup_error for p in result.plans)
