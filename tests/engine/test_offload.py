"""Offload and KV tiers: each engine's rule against real start-ups, off changing nothing,
the launch lines reading back, and bad input refused."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.launch import LaunchResult, match_program, predict_launch
from llm_inventory.engine.launch_lines import with_launch_lines
from llm_inventory.engine.offload import GIB, Offload, parse_kv_offload
from llm_inventory.engine.placement import PlacementRequest, PlacementResult, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.presets import load_preset


def _plan(model: str, device: str, count: int, engine: str, offload: Offload,
          **extra: object) -> PlacementResult:
    pins: dict[str, object] = {"tp": count, **extra}
    request = PlacementRequest(device=resolve_device(device), count=count, engine=engine,
                               offload=offload, limit=0, **pins)
    return plan_placement(load_preset(model), request)


# --- real start-ups (each only checks a rule read from the engine's source; none chose one) -

def test_vllm_cpu_offload_gb_replays_the_gh200_start_up() -> None:
    """vllm-project/vllm PR #6496 (vLLM 0.5.2, GH200 96 GB): `--cpu-offload-gb 70
    --gpu-memory-utilization 0.95` on Meta-Llama-3-70B-Instruct printed "Loading model
    weights took 61.2922 GB" (GiB). maybe_offload_to_cpu moves whole parameters until the
    moved bytes reach 70 GiB, so the GPU keeps the model less 70 GiB less at most one
    parameter: the largest of a layer is gate_up_proj, 2 × 28,672 × 8,192 × 2 B."""
    found = _plan("llama-3.1-70b", "gh200", 1, "vllm@0.5.2", Offload(weight_bytes=70 * GIB),
                  gpu_memory_utilization=0.95)
    plan = found.plans[0]
    assert plan.per_device is not None and plan.tiers is not None
    predicted = plan.per_device.weight_bytes
    printed = round(61.2922 * GIB)
    largest = 2 * 28_672 * 8_192 * 2
    assert 0 <= predicted - printed <= largest
    assert plan.tiers.per_device.host_weight_bytes == 70 * GIB
    assert predicted + 70 * GIB == _plan("llama-3.1-70b", "gh200", 1, "vllm@0.5.2", Offload(),
                                         gpu_memory_utilization=0.95).plans[0].per_device.weight_bytes


def test_sglang_hicache_size_replays_its_host_pool_line() -> None:
    """sgl-project/sglang issue #14282 (SGLang 0.5.3, Llama-3.1-8B-Instruct, 4 × RTX 3060,
    `--tp 4 --enable-hierarchical-cache --hicache-size 40`): every worker printed
    "Allocating 40.00 GB host memory for hierarchical KV cache." — GB of 10^9 bytes, per
    worker, not split over TP. The 3060 is not in the catalog: its 12 GiB is given."""
    spec = load_preset("llama-3.1-8b")
    argv = shlex.split("python -m sglang.launch_server --model-path "
                       "meta-llama/Llama-3.1-8B-Instruct --tp 4 --enable-hierarchical-cache "
                       "--hicache-size 40 --context-length 8000")
    engine, rest = match_program(argv)
    command = engine.parse_launch(rest)
    assert command.offload == Offload(hicache_bytes=40 * 10**9)
    assert not any("hicache" in word for word in command.ignored)
    result = predict_launch(spec, command, get("sglang@0.5.3"), custom_device(12 * GIB, None),
                            count=4)
    assert "Allocating 40.00 GB host memory for hierarchical KV cache." in result.startup
    tiers = result.plan.tiers
    assert tiers is not None and tiers.devices_per_node == 4
    assert tiers.host_bytes_per_node == 4 * tiers.per_device.host_kv_bytes


# --- the rules themselves ---------------------------------------------------------------

def test_hicache_ratio_sizes_the_host_pool_from_the_device_pool() -> None:
    """HostKVCache.__init__: int(device tokens × ratio), then whole pages plus one."""
    plan = _plan("llama-3.1-8b", "h100", 1, "sglang", Offload(hicache_ratio=2.5)).plans[0]
    assert plan.per_device is not None and plan.tiers is not None
    tokens = plan.per_device.kv_capacity_tokens
    page = 1  # SGLang's default page size
    assert plan.tiers.per_device.host_kv_tokens == (int(tokens * 2.5) // page + 1) * page
    assert plan.tiers.per_device.host_kv_bytes == (
        plan.tiers.per_device.host_kv_tokens * plan.per_device.kv_bytes_per_token)


def test_vllm_kv_offloading_is_one_host_region_split_over_the_workers() -> None:
    """CPUOffloadingSpec: blocks = bytes ÷ (page × world size); the region is the size."""
    found = _plan("llama-3.1-8b", "h100", 2, "vllm", Offload(kv_host_bytes=64 * GIB))
    tiers = found.plans[0].tiers
    assert tiers is not None
    d = tiers.per_device
    assert d.host_kv_bytes == 32 * GIB
    page = 16 * 2 * 32 * 4 * 128 * 2  # 16 tokens × K,V × 32 layers × 4 heads/rank × 128 × bf16
    assert d.host_kv_tokens == 64 * GIB // (page * 2) * 16
    assert tiers.host_bytes_per_node == 2 * 32 * GIB
    node = _plan("llama-3.1-8b", "h100", 8, "vllm", Offload(kv_host_bytes=64 * GIB), tp=2)
    busy = next(p for p in node.plans if p.tp == 2 and p.dp == 4 and not p.disaggregation)
    assert busy.tiers is not None and busy.tiers.host_bytes_per_node == 8 * 32 * GIB


def test_weights_moved_grow_the_vllm_pool_by_as_much() -> None:
    off = _plan("llama-3.1-8b", "l4", 1, "vllm", Offload(), batch=1).plans[0]
    on = _plan("llama-3.1-8b", "l4", 1, "vllm", Offload(weight_bytes=4 * GIB),
               batch=1).plans[0]
    assert off.per_device is not None and on.per_device is not None
    assert off.per_device.weight_bytes - on.per_device.weight_bytes == 4 * GIB
    assert on.per_device.kv_pool_bytes - off.per_device.kv_pool_bytes == 4 * GIB
    # the moved weights cross the L4's PCIe Gen4 link (32 GB/s) every forward instead of
    # being read from the device's own memory
    assert on.timing is not None and off.timing is not None and on.tiers is not None
    assert on.tiers.weight_stream_s == pytest.approx(4 * GIB / 32e9)
    assert off.timing.tpot_s < on.timing.tpot_s <= off.timing.tpot_s + 4 * GIB / 32e9


def test_more_than_the_layers_hold_moves_only_the_layers() -> None:
    plan = _plan("llama-3.1-8b", "h100", 1, "vllm", Offload(weight_bytes=100 * GIB)).plans[0]
    assert plan.per_device is not None and plan.tiers is not None
    # embeddings and the LM head stay: 2 × 128,256 × 4,096 × 2 B, the final norm, and the
    # rotary cos/sin cache vLLM keeps beside them (131,072 positions × 128 × 2 B)
    assert plan.per_device.weight_bytes == (2 * 128_256 * 4_096 * 2 + 4_096 * 2
                                            + 131_072 * 128 * 2)


def test_reload_time_is_tokens_over_the_host_link() -> None:
    off = _plan("llama-3.1-8b", "h100", 1, "sglang", Offload(hicache_ratio=2)).plans[0]
    on = _plan("llama-3.1-8b", "h100", 1, "sglang",
               Offload(hicache_ratio=2, reload_tokens=32_000)).plans[0]
    assert on.tiers is not None and on.timing is not None and off.timing is not None
    per_token = 2 * 32 * 8 * 128 * 2
    assert on.tiers.reload_s == pytest.approx(32_000 * per_token / 64e9)
    assert on.timing.ttft_s == pytest.approx(off.timing.ttft_s + on.tiers.reload_s)
    assert on.timing.tpot_s == off.timing.tpot_s


def test_host_memory_is_checked_when_known_and_said_when_not() -> None:
    plan = _plan("llama-3.1-8b", "h100", 8, "sglang", Offload(hicache_bytes=300 * 10**9),
                 tp=1, pp=1).plans[0]
    assert plan.tiers is not None and plan.tiers.host_memory_bytes == 2 * 10**12
    assert plan.tiers.host_fits is False  # 8 workers × 300 GB > the DGX H100's 2 TB
    assert not plan.fits and plan.why is not None and "host memory (1.82 TiB)" in plan.why
    roomy = _plan("llama-3.1-8b", "h100", 8, "sglang", Offload(
        hicache_bytes=300 * 10**9, host_memory_bytes=4 * 10**12), tp=1, pp=1).plans[0]
    assert roomy.fits and roomy.tiers is not None and roomy.tiers.host_fits
    l4 = _plan("llama-3.1-8b", "l4", 1, "sglang", Offload(hicache_ratio=2)).plans[0]
    assert l4.tiers is not None and l4.tiers.host_fits is None
    assert any("not checked" in n for n in l4.tiers.notes)


# --- off changes nothing ----------------------------------------------------------------

MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v2-lite"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), engine=st.sampled_from(["vllm", "sglang", "trtllm",
                                                              "llamacpp", "vllm@0.10"]),
       count=st.sampled_from([1, 2, 4]),
       memory=st.one_of(st.none(), st.integers(1, 1 << 40)),
       link=st.one_of(st.none(), st.integers(1, 1 << 40)))
def test_offload_off_leaves_every_figure_unchanged(model: str, engine: str, count: int,
                                                  memory: int | None,
                                                  link: int | None) -> None:
    """Nothing asked (host facts alone ask nothing): the result is the same, field for field."""
    spec = load_preset(model)
    base = PlacementRequest(device=resolve_device("h100"), count=count, engine=engine,
                            limit=0)
    idle = base.model_copy(update={"offload": Offload(host_memory_bytes=memory,
                                                      host_link_bytes_per_s=link)})
    assert plan_placement(spec, idle).model_dump() == plan_placement(spec, base).model_dump()


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_kv_tier_alone_leaves_the_gpu_figures_unchanged(engine: str) -> None:
    tier = Offload(kv_host_bytes=64 * GIB) if engine == "vllm" else Offload(hicache_ratio=3)
    off = _plan("qwen3-30b-a3b", "h100", 2, engine, Offload())
    on = _plan("qwen3-30b-a3b", "h100", 2, engine, tier)
    for a, b in zip(off.plans, on.plans, strict=True):
        assert a.per_device == b.per_device and a.stages == b.stages
        assert a.max_concurrency == b.max_concurrency and a.timing == b.timing
        assert b.startup[:len(a.startup)] == a.startup


# --- the launch lines read back ---------------------------------------------------------

@pytest.mark.parametrize(("engine", "offload"), [
    ("vllm", Offload(weight_bytes=3 * GIB + GIB // 2, kv_host_bytes=40 * GIB)),
    ("vllm", Offload(kv_host_bytes=16 * GIB, kv_backend="lmcache")),
    ("sglang", Offload(weight_bytes=2 * GIB, hicache_ratio=1.5)),
    ("sglang", Offload(hicache_bytes=100 * 10**9)),
])
def test_launch_lines_read_back_to_the_same_tiers(engine: str, offload: Offload) -> None:
    spec, dev = load_preset("llama-3.1-8b"), resolve_device("l40s")
    request = PlacementRequest(device=dev, count=2, engine=engine, offload=offload, limit=6)
    result = with_launch_lines(plan_placement(spec, request), request, "llama-3.1-8b")
    checked = 0
    for plan in result.plans:
        if not plan.fits or plan.disaggregation:
            continue
        (line,) = plan.launch
        era, rest = match_program(shlex.split(line))
        command = era.parse_launch(rest)
        assert command.offload == offload, line
        read = predict_launch(spec, command, get(f"{engine}@{result.engine_version}"), dev)
        assert read.plan.per_device == plan.per_device, line
        assert read.plan.tiers is not None and plan.tiers is not None
        assert read.plan.tiers.per_device == plan.tiers.per_device, line
        checked += 1
    assert checked


# --- refused ----------------------------------------------------------------------------

@pytest.mark.parametrize(("engine", "offload", "field"), [
    ("trtllm", Offload(weight_bytes=GIB), "offload"),
    ("llamacpp", Offload(kv_host_bytes=GIB), "offload"),
    ("vllm", Offload(hicache_ratio=2), "hicache"),
    ("vllm", Offload(kv_disk_bytes=GIB, kv_host_bytes=GIB), "kv_disk"),
    ("sglang", Offload(kv_host_bytes=GIB), "kv_offload"),
    ("sglang", Offload(weight_bytes=GIB // 2), "cpu_offload"),
    ("vllm@0.10", Offload(kv_host_bytes=GIB), "kv_offload"),  # --kv-offloading-size: 0.11.1
    ("vllm@0.4.3", Offload(weight_bytes=GIB), "cpu_offload"),  # --cpu-offload-gb: 0.5.3
])
def test_offload_an_engine_cannot_do_is_refused(engine: str, offload: Offload,
                                                field: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan("llama-3.1-8b", "h100", 1, engine, offload)
    assert caught.value.field == field


def test_kv_offload_text() -> None:
    assert parse_kv_offload("40") == (40 * GIB, "native")
    assert parse_kv_offload("64GiB,lmcache") == (64 * GIB, "lmcache")
    with pytest.raises(InputError):
        parse_kv_offload("4,disk")


# --- LMCache through vLLM's connector -----------------------------------------------------

LMCACHE = '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'


def _launch(words: str, device: str = "h100") -> LaunchResult:
    from llm_inventory.engine.offload import environment

    argv = shlex.split(words)
    era, rest = match_program(argv)
    command = era.parse_launch(rest)
    rules = era.offload_rules()
    assert rules is not None
    command = command.model_copy(update={"offload": rules.with_environment(
        command.offload, environment(argv), command.tp * command.pp)})
    return predict_launch(load_preset("qwen3-8b"), command, era, resolve_device(device))


def test_lmcache_tiers_come_from_the_line_environment() -> None:
    result = _launch("LMCACHE_MAX_LOCAL_CPU_SIZE=40 LMCACHE_LOCAL_DISK=file:///cache "
                     "LMCACHE_MAX_LOCAL_DISK_SIZE=100 vllm serve Qwen/Qwen3-8B -tp 2 "
                     f"--max-model-len 8000 --kv-transfer-config '{LMCACHE}'")
    tiers = result.plan.tiers
    assert tiers is not None
    assert tiers.per_device.host_kv_bytes == 40 * GIB  # per worker, GiB (× 1024**3)
    assert tiers.per_device.disk_kv_bytes == 100 * GIB
    assert not tiers.kv_host_exact
    default = _launch(f"vllm serve Qwen/Qwen3-8B --max-model-len 8000 --kv-transfer-config "
                      f"'{LMCACHE}'")
    assert default.plan.tiers.per_device.host_kv_bytes == 5 * GIB


def test_the_lmcache_connector_leaves_the_gpu_pool_as_it_was() -> None:
    """tests/data/engine-logs-heldout H03 (vllm-project/vllm #21348): a 4 × H100 start-up of
    Qwen3-235B-A22B-FP8 with LMCacheConnectorV1 printed the GPU pool a plain start-up
    prints; its replay (test_heldout_replay) now runs with the connector understood."""
    on = _launch(f"vllm serve Qwen/Qwen3-8B --max-model-len 8000 --kv-transfer-config "
                 f"'{LMCACHE}'")
    off = _launch("vllm serve Qwen/Qwen3-8B --max-model-len 8000")
    assert on.plan.per_device == off.plan.per_device
    assert on.command.ignored == []


# --- llama.cpp -nkvo ----------------------------------------------------------------------

def _llamacpp(flags: dict[str, str | int | float | bool], context: int = 32_768) -> PlacementResult:
    request = PlacementRequest(device=resolve_device("rtx-4090"), count=1,
                               engine="llamacpp", context=context, limit=0,
                               engine_flags=flags)
    return plan_placement(load_preset("llama-3.1-8b"), request)


def test_nkvo_moves_every_cache_to_host_memory() -> None:
    """src/llama-kv-cache.cpp: `offload ? dev_layer(il) : cpu` for every layer's K and V
    (ggml-org/llama.cpp #14043 prints `dev = CPU` for each cached layer under -nkvo)."""
    on_gpu = _llamacpp({}).plans[0]
    on_host = _llamacpp({"no_kv_offload": True}).plans[0]
    assert on_gpu.per_device is not None and on_host.per_device is not None
    assert on_host.per_device.kv_pool_bytes == 0
    assert on_host.per_device.weight_bytes == on_gpu.per_device.weight_bytes
    assert on_host.host is not None and on_gpu.host is not None
    assert on_host.host.kv_bytes == on_gpu.per_device.kv_pool_bytes + on_gpu.host.kv_bytes
    assert on_host.host.layers == on_gpu.host.layers  # the weights stay where -ngl put them
    cpu = [line for line in on_host.startup if "KV buffer size" in line]
    assert cpu == ["llama_kv_cache:        CPU KV buffer size =  4096.00 MiB"]


def test_nkvo_holds_a_context_the_gpu_could_not() -> None:
    long = 1_048_576  # 128 GiB of f16 KV: no 24 GiB card holds it, host memory may
    assert not _llamacpp({}, long).plans[0].fits
    plan = _llamacpp({"no_kv_offload": True}, long).plans[0]
    assert plan.fits and plan.startup_error is None
    assert plan.host is not None and plan.host.kv_bytes == long * 32 * 2 * 1024 * 2


def test_nkvo_reads_back_from_its_launch_line() -> None:
    spec, dev = load_preset("llama-3.1-8b"), resolve_device("rtx-4090")
    request = PlacementRequest(device=dev, count=1, engine="llamacpp", context=32_768,
                               engine_flags={"no_kv_offload": True}, limit=0)
    result = with_launch_lines(plan_placement(spec, request), request, "llama-3.1-8b")
    plan = result.plans[0]
    (line,) = plan.launch
    assert "-nkvo" in shlex.split(line)
    era, rest = match_program(shlex.split(line))
    command = era.parse_launch(rest)
    assert command.flags.get("no_kv_offload") is True and "-nkvo" not in command.ignored
    read = predict_launch(spec, command, get(f"llamacpp@{result.engine_version}"), dev)
    assert read.plan.per_device == plan.per_device and read.plan.host == plan.host
