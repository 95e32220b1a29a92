"""`inventory launch`, `inventory engines` and placement across engines, through the runner."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.launch import match_program
from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvLayer,
    LaunchCommand,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
)
from llm_inventory.engine.serving.vllm_launch import parse_vllm
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from tests.conftest import Invoke
from tests.engine.serving.test_interface import Cells


class Fake(ServingEngine):
    """A second engine, known to nothing but the registry: `fake-serve MODEL -c N`."""

    name = "fakeserve"
    versions = "any"
    version = "1"
    label = "Fake 1"
    summary = "every byte the weights leave is KV"
    rules = (("pool = total − weights", "this test"),)
    programs = (("fake-serve",), ("python", "-m", "fake.serve"))

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        return EngineSettings(max_model_len=asked.context, max_num_batched_tokens=asked.context,
                              max_num_seqs=1, block_size=1, memory_fraction=1.0,
                              kv_dtype=asked.kv_dtype)

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        return ReserveEstimate(non_torch_bytes=0, forward_peak_bytes=0, sampler_peak_bytes=0,
                               activation_bytes=0, reserve_bytes=0)

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        return device.memory_bytes - weight_bytes

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        return Cells(sum(layer.bytes_per_token for layer in layers), settings.max_model_len)

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        if len(argv) != 3 or argv[1] != "-c":
            raise InputError("launch", "fake-serve MODEL -c TOKENS")
        return LaunchCommand(engine=self.name, model=argv[0], context=int(argv[2]),
                             understood=["-c " + argv[2]])

    def startup_lines(self, capacity: object, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        return [f"fake pool {pool_bytes} bytes"]


@pytest.fixture
def fake() -> Iterator[ServingEngine]:
    engine = serving.register(Fake())
    try:
        yield engine
    finally:
        serving.unregister(engine)


def test_vllm_command_lines_are_read() -> None:
    cmd = parse_vllm(["Qwen/Qwen3-8B", "-tp", "2", "--max_model_len=32K",
                      "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "fp8_e4m3",
                      "--trust-remote-code", "--port", "8000", "--enable-expert-parallel"])
    assert (cmd.model, cmd.tp, cmd.context, cmd.memory_fraction, cmd.kv_dtype, cmd.ep) == (
        "Qwen/Qwen3-8B", 2, 32768, 0.85, "fp8", 2)
    assert cmd.ignored == ["--trust-remote-code", "--port 8000"]
    assert "--max-model-len 32K" in cmd.understood
    assert parse_vllm(["--model", "x", "--quantization", "fp8"]).dtype == "fp8"
    for bad in (["x", "--max-model-len"], [], ["x", "-tp", "two"], ["x", "y"],
                ["x", "--gpu-memory-utilization", "1.5"]):
        with pytest.raises(InputError):
            parse_vllm(bad)


def test_the_engine_is_picked_by_program_prefix(fake: ServingEngine) -> None:
    engine, rest = match_program(["/usr/local/bin/vllm", "serve", "m", "-tp", "2"])
    assert engine.name == "vllm" and rest == ["m", "-tp", "2"]
    engine, rest = match_program(["python3.12", "-m", "vllm.entrypoints.openai.api_server",
                                  "--model", "m"])
    assert engine.name == "vllm" and rest == ["--model", "m"]
    engine, rest = match_program(["python", "-m", "fake.serve", "m", "-c", "9"])
    assert engine is fake and rest == ["m", "-c", "9"]
    with pytest.raises(InputError, match="starts no engine"):
        match_program(["tgi-launcher", "m"])


def test_launch_with_a_registered_engine(invoke: Invoke, fake: ServingEngine) -> None:
    run = invoke("launch", "--device", "h100", "--format", "json", "--", "fake-serve",
                 "llama-3.1-8b", "-c", "4096")
    assert run.code == 0, run.stderr
    data = run.json()
    assert (data["engine"], data["engine_version"], data["context"]) == ("fakeserve", "1", 4096)
    assert data["startup"][0].startswith("fake pool ")
    listed = invoke("engines", "--format", "json")
    assert "fakeserve" in [e["engine"] for e in listed.json()["engines"]]


def _placement(invoke: Invoke, *args: str) -> dict[str, object]:
    run = invoke("placement", *args, "--format", "json", "--limit", "0")
    assert run.code == 0, run.stderr
    data = run.json()
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.19", "vllm@0.10"])
def test_launch_and_placement_agree(invoke: Invoke, engine: str) -> None:
    version = engine.partition("@")[2]
    run = invoke("launch", "--device", "h100", "--format", "json",
                 *(["--engine-version", version] if version else []), "--",
                 "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "2",
                 "--max-model-len", "32768", "--gpu-memory-utilization", "0.9")
    assert run.code == 0, run.stderr
    launched = run.json()
    placed = _placement(invoke, "llama-3.1-8b", "--device", "h100", "--count", "2",
                        "--tp", "2", "--context", "32768", "--gpu-memory-utilization", "0.9",
                        "--engine", engine)
    plan = next(p for p in placed["plans"]  # type: ignore[attr-defined]
                if p["tp"] == 2 and p["pp"] == 1 and p["disaggregation"] is None)
    assert launched["engine_version"] == placed["engine_version"]
    for key in ("kv_pool_bytes", "kv_capacity_tokens", "weight_bytes", "reserve_bytes"):
        assert launched["plan"]["per_device"][key] == plan["per_device"][key]
    assert launched["startup"] == plan["startup"]
    assert any(line.startswith(("GPU KV cache size", "# cuda blocks"))
               for line in launched["startup"])


def test_launch_predicts_the_stop_and_the_longest_context(invoke: Invoke) -> None:
    run = invoke("launch", "--device", "l4", "--", "vllm", "serve", "llama-3.1-8b",
                 "--max-model-len", "128K", "--port", "8000")
    assert run.code == 1, run.stderr  # the engine will not start: exit 1, for CI
    assert "will stop with" in run.stdout
    assert "To serve at least one request" in run.stdout
    assert "--port 8000" in run.stderr  # ignored flags are said on stderr, never refused
    json_run = invoke("launch", "--device", "l4", "--format", "json", "--", "vllm", "serve",
                      "llama-3.1-8b", "--max-model-len", "128K")
    data = json_run.json()
    assert data["starts"] is False and data["longest_context"] < 131072
    assert "larger than the available KV cache memory" in data["startup_error"]
    assert f"the estimated maximum model length is {data['longest_context']}." in \
        data["startup_error"]


@pytest.mark.parametrize("args", [
    ("launch", "--device", "h100", "--", "vllm", "serve", "qwen3-8b", "--max-model-len"),
    ("launch", "--device", "h100", "--", "vllm", "serve"),
    ("launch", "--device", "h100", "--", "tgi", "serve", "x"),
    ("launch", "--device", "h100", "--", "vllm", "serve", "Nobody/No-Such-Model-7B"),
    ("launch", "--device", "h100", "--engine-version", "0.1", "--", "vllm", "serve",
     "qwen3-8b"),
    ("launch", "--", "vllm", "serve", "qwen3-8b"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "tgi"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "vllm@0.1"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "vllm@latest"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "vllm,tgi"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine-arg", "swap_space"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "vllm@0.19",
     "--engine-arg", "swap_space=4"),
    ("placement", "llama-3.1-8b", "--device", "h100", "--engine", "vllm@0.10",
     "--engine-arg", "swap_space=lots"),
    ("engines", "tgi"),
])
def test_bad_input_is_one_line_and_exit_2(invoke: Invoke, args: tuple[str, ...]) -> None:
    run = invoke(*args)
    assert run.code == 2, (run.code, run.stdout)
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.startswith("inventory: error: ")


def test_hub_ids_resolve_as_everywhere_else(invoke: Invoke,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """launch resolves MODEL as placement does (preset, cache, then the Hub): the same
    answer, and the same one-line refusal for an id none of them holds."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run = invoke("launch", "--device", "h100", "--", "vllm", "serve", "Nobody/No-Such-7B")
    same = invoke("placement", "Nobody/No-Such-7B", "--device", "h100")
    assert run.code == same.code == 2 and run.stdout == ""
    assert run.stderr == same.stderr and run.stderr.count("\n") == 1
    preset = invoke("launch", "-d", "h100", "--format", "json", "--", "vllm", "serve",
                    "Qwen/Qwen3-8B").json()
    assert preset["model"] == "qwen3-8b"


def test_engines_lists_every_era(invoke: Invoke) -> None:
    data = invoke("engines", "--format", "json").json()
    eras = [(e["engine"], e["lowest"], e["default"]) for e in data["engines"]]
    assert eras[:9] == [("vllm", "0.33", True), ("vllm", "0.30", False),
                        ("vllm", "0.29", False), ("vllm", "0.28", False), ("vllm", "0.26", False),
                        ("vllm", "0.25.1", False), ("vllm", "0.21", False),
                        ("vllm", "0.11", False), ("vllm", "0.2", False)]
    assert len(data["engines"]) >= len(serving.ERAS)
    for era in data["engines"]:
        assert era["rules"] and all(r["source"] for r in era["rules"])
    one = invoke("engines", "vllm@0.19", "--format", "yaml")
    assert one.code == 0 and "label: vLLM 0.19" in one.stdout
    assert "Worker.determine_available_memory" in one.stdout
    table = invoke("engines", "vllm@0.7")
    assert table.code == 0 and "align_to_256bytes" in table.stdout
    assert "0.21" in invoke("engines").stdout


def test_placement_side_by_side(invoke: Invoke) -> None:
    args = ("llama-3.1-8b", "--device", "h100", "--count", "1", "--engine",
            "vllm@0.10,vllm@0.19,vllm@0.21")
    run = invoke("placement", *args, "--format", "json")
    assert run.code == 0, run.stderr
    results = run.json()
    assert [(r["engine"], r["engine_version"]) for r in results] == [
        ("vllm", "0.10"), ("vllm", "0.19"), ("vllm", "0.21")]
    pools = [r["plans"][0]["per_device"]["kv_pool_bytes"] for r in results]
    assert len(set(pools)) == 3
    # at one utilization, 0.21 leaves less KV than 0.19: it subtracts its CUDA graphs
    same = invoke("placement", *args, "--gpu-memory-utilization", "0.92", "--format", "json")
    pools = [r["plans"][0]["per_device"]["kv_pool_bytes"] for r in same.json()]
    assert pools[2] < pools[1]
    table = invoke("placement", *args)
    assert "vLLM 0.10 (V0)" in table.stdout and "best plan of each engine" in table.stdout
    compared = invoke("compare", "llama-3.1-8b", "--engine", "vllm@0.10,vllm@0.21",
                      "--device", "h100", "--count", "1", "--format", "json")
    assert compared.code == 0, compared.stderr
    assert [r["engine_version"] for r in compared.json()] == ["0.10", "0.21"]
    assert compared.json()[1]["plans"][0]["per_device"]["kv_pool_bytes"] == pools[2]
    eager = invoke("placement", "llama-3.1-8b", "--device", "h100", "--count", "1",
                   "--engine-arg", "enforce_eager=true", "--format", "json").json()
    assert eager["plans"][0]["per_device"]["kv_pool_bytes"] == pools[1]


@pytest.mark.parametrize(("command", "lead"), [
    (("vllm", "serve", "llama-3.1-8b", "--max-model-len", "128K"), "ValueError: To serve"),
    (("vllm", "serve", "llama-3.1-8b", "--max-model-len", "128K", "--gpu-memory-utilization",
      "0.5"), "ValueError: No available memory"),
    (("python", "-m", "sglang.launch_server", "--model-path", "llama-3.1-8b"),
     "RuntimeError: Not enough memory"),
    (("llama-server", "-m", "llama-3.1-8b", "-c", "131072"),
     "ggml_backend_cuda_buffer_type_alloc_buffer: "),
])
def test_the_stop_is_led_by_the_engines_own_exception(invoke: Invoke, command: tuple[str, ...],
                                                      lead: str) -> None:
    """Each engine's error as it raises it: vLLM's ValueError, SGLang's RuntimeError, and
    llama.cpp's log lines with no Python exception at all."""
    run = invoke("launch", "--device", "l4", "--format", "json", "--", *command)
    assert run.code == 1, run.stderr  # the engine will not start: exit 1
    error = run.json()["startup_error"]
    assert error.startswith(lead), error
    table = invoke("launch", "--device", "l4", "--", *command)
    assert f"will stop with:\n  {lead}" in table.stdout
    assert "ValueError: RuntimeError" not in table.stdout
    if error.startswith(("RuntimeError", "ValueError: No available")):  # an empty pool
        assert "no context fits" in table.stdout
        assert "the longest context that fits: 0 tokens" not in table.stdout


def test_launch_says_how_each_figure_was_obtained(invoke: Invoke) -> None:
    command = ("--", "vllm", "serve", "llama-3.1-8b", "--max-model-len", "32768")
    data = invoke("launch", "--device", "h100", "--format", "json", *command).json()
    kinds = {group: t["kind"] for group, t in data["trust"].items()}
    assert kinds["weights"] == "exact" and kinds["kv_pool"] == "engine rule"
    assert kinds["reserve"] == "calibrated" and kinds["startup"] == "engine rule"
    assert data["trust"]["reserve"]["extrapolated"]  # 0.21+: no start-up of its own
    table = invoke("launch", "--device", "h100", *command).stdout
    assert "trust: weights exact" in table and "startup engine rule" in table


@pytest.mark.parametrize("engine", ["vllm@0.19", "vllm@0.10", "sglang", "trtllm", "llamacpp"])
def test_the_reserve_band_is_the_engines_own(invoke: Invoke, engine: str) -> None:
    """vLLM 0.19's band is no other engine's: each quotes what its own start-ups showed
    out of sample (`engine/serving/bands.py`), or says it has no such band."""
    from llm_inventory.engine.serving import get
    from llm_inventory.engine.serving.bands import reserve_trust
    from llm_inventory.spec.devices import resolve_device

    data = _placement(invoke, "llama-3.1-8b", "--device", "h100", "--count", "1",
                      "--engine", engine)
    reserve = data["trust"]["reserve"]  # type: ignore[index]
    assert reserve == reserve_trust(get(engine), resolve_device("h100")).model_dump()
    assert "start-up" in reserve["basis"]
    if engine.startswith("sglang"):
        assert "SGLang" in reserve["basis"]


def test_llamacpp_splits_its_layers_over_every_device_it_sees(invoke: Invoke) -> None:
    """One llama-server process on four GPUs is four layer stages, not four replicas."""
    run = invoke("launch", "--device", "h100", "--count", "4", "--format", "json", "--",
                 "llama-server", "-m", "llama-3.1-70b", "-c", "8192", "-ngl", "999")
    assert run.code == 0, run.stderr
    plan = run.json()["plan"]
    assert (plan["tp"], plan["pp"], plan["dp"]) == (1, 4, 1)
    one = invoke("launch", "--device", "h100", "--count", "4", "--format", "json", "--",
                 "llama-server", "-m", "llama-3.1-70b", "-c", "8192", "-ts", "1,1")
    assert one.json()["plan"]["pp"] == 2  # -ts names the devices it splits over


@pytest.mark.parametrize(("version", "flags", "context"), [
    ("7880", (), 40960),  # -c 0, the default: the model's training context
    ("5000", (), 4096),  # the older default
    ("5000", ("-c", "0"), 40960),
])
def test_llamacpp_without_a_context_flag(invoke: Invoke, version: str, flags: tuple[str, ...],
                                         context: int) -> None:
    run = invoke("launch", "--device", "h100", "--engine-version", version, "--format",
                 "json", "--", "llama-server", "-m", "qwen3-8b", *flags)
    assert run.code == 0, run.stderr
    assert run.json()["context"] == context


@pytest.mark.parametrize(("flags", "named"), [
    (("-c", "abc"), "-c: "), (("--ctx-size", "abc"), "--ctx-size: "),
    (("-ctk", "q9_9"), "-ctk: "), (("-ts", "1,x"), "-ts: "), (("-fa=maybe",), "-fa: ")])
def test_llamacpp_errors_name_the_flag_as_written(invoke: Invoke, flags: tuple[str, ...],
                                                  named: str) -> None:
    run = invoke("launch", "--device", "h100", "--", "llama-server", "-m", "qwen3-8b", *flags)
    assert run.code == 2 and run.stdout == ""
    assert run.stderr.startswith(f"inventory: error: {named}"), run.stderr


@pytest.mark.parametrize(("command", "said"), [
    (("vllm", "serve", "qwen3-8b", "-tp", "2"), "--tensor-parallel-size 2"),
    (("python", "-m", "sglang.launch_server", "--model-path", "qwen3-8b", "--tp", "2"),
     "--tp 2"),
    (("trtllm-serve", "qwen3-8b", "--tp_size", "2"), "--tp_size 2"),
    (("llama-server", "-m", "qwen3-8b", "-c", "4096"), "-c 4096"),
])
def test_understood_flags_come_with_their_values(invoke: Invoke, command: tuple[str, ...],
                                                 said: str) -> None:
    data = invoke("launch", "--device", "h100", "--format", "json", "--", *command).json()
    assert said in data["command"]["understood"]


@pytest.mark.parametrize("version", ["0.5.23", "0.4.9"])
def test_sglang_launch_and_placement_agree(invoke: Invoke, version: str) -> None:
    run = invoke("launch", "--device", "h100", "--format", "json", "--engine-version", version,
                 "--", "python", "-m", "sglang.launch_server", "--model-path",
                 "llama-3.1-8b", "--tp", "2", "--context-length", "32768",
                 "--mem-fraction-static", "0.85")
    assert run.code == 0, run.stderr
    launched = run.json()
    placed = _placement(invoke, "llama-3.1-8b", "--device", "h100", "--count", "2",
                        "--tp", "2", "--context", "32768", "--gpu-memory-utilization", "0.85",
                        "--engine", f"sglang@{version}")
    plan = next(p for p in placed["plans"]  # type: ignore[attr-defined]
                if p["tp"] == 2 and p["pp"] == 1 and p["disaggregation"] is None)
    assert launched["engine_version"] == placed["engine_version"] == version
    for key in ("kv_pool_bytes", "kv_capacity_tokens", "weight_bytes", "reserve_bytes"):
        assert launched["plan"]["per_device"][key] == plan["per_device"][key]
    assert launched["startup"] == plan["startup"]
    assert any(line.startswith("KV Cache is allocated") for line in launched["startup"])


@pytest.mark.parametrize("command", [
    ["vllm", "serve", "whisper-large-v3", "-tp", "32768", "--compilation-config"],
    ["llama-server", "-m", "llama-3.1-8b", "--mlock", "-c", "banana"],
])
def test_ignored_flags_never_join_a_bad_input_line(invoke: Invoke, command: list[str]) -> None:
    """The flags-not-modelled warning waits until the command line is known good."""
    run = invoke("launch", "--device", "h100", "--", *command)
    assert run.code == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("inventory: error: "), run.stderr


def test_ignored_flags_are_listed_once_the_launch_is_read(invoke: Invoke) -> None:
    run = invoke("launch", "--device", "h100", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                 "--compilation-config", "{}")
    assert run.code == 0, run.stderr
    assert "flags not modelled, ignored: --compilation-config" in run.stderr
