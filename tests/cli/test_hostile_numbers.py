"""Numbers as a hostile user writes them, wherever they enter: each is one line naming the
field and exit 2, never an internal error (exit 3). Every path goes through
`bounds.number` / `bounds.version_parts`."""

from __future__ import annotations

import pytest

from llm_inventory.bounds import number, version_parts
from llm_inventory.errors import InputError
from tests.conftest import Invoke

DIGITS = "9" * 5000
HOSTILE = ["nan", "inf", "-inf", "1e309", DIGITS, "1" + DIGITS]


@pytest.mark.parametrize("text", HOSTILE)
def test_number_refuses_every_hostile_spelling(text: str) -> None:
    for integer in (False, True):
        with pytest.raises(InputError) as caught:
            number("--x", text, integer=integer)
        assert str(caught.value).startswith("--x: ")
        assert len(str(caught.value)) < 200


def test_number_keeps_ordinary_values() -> None:
    assert number("f", "0.9", low=0, high=1) == 0.9
    assert number("f", " 32 ", low=1, integer=True) == 32
    assert number("f", 8192, low=1, integer=True) == 8192
    with pytest.raises(InputError, match="at least 1"):
        number("f", "0", low=1, integer=True)
    with pytest.raises(InputError, match="whole number"):
        number("f", "1.5", integer=True)
    with pytest.raises(InputError, match="above 0"):
        number("f", "0", low_open=True)


def test_version_parts_are_bounded() -> None:
    assert version_parts("engine", "0.19.1") == (0, 19, 1)
    assert version_parts("engine", "b7880") == (7880,)
    for bad in ("1" + DIGITS, "1." + DIGITS, "1.٣", "", "x"):
        with pytest.raises(InputError, match="^engine: version"):
            version_parts("engine", bad)


ARGS = ["placement", "llama-3.1-8b", "--device", "h100"]


@pytest.mark.parametrize("argv", [
    [*ARGS, "--engine", "vllm@1" + DIGITS],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "tokens_per_block=0"],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "max_num_tokens=0"],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "max_batch_size=0"],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "max_num_tokens=nan"],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "max_num_tokens=" + DIGITS],
    [*ARGS, "--engine", "trtllm", "--engine-arg", "free_gpu_memory_fraction=1e309"],
    [*ARGS, "--engine", "llamacpp", "--engine-arg", "ctx_size=inf"],
    [*ARGS, "--engine", "llamacpp", "--engine-arg", "ubatch_size=" + DIGITS],
    ["engines", "vllm@1" + DIGITS],
    ["launch", "--device", "h100", "--", "trtllm-serve", "meta-llama/Llama-3.1-8B",
     "--tokens_per_block", "0"],
    ["launch", "--device", "h100", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B",
     "--max-num-seqs", "1" + DIGITS],
    ["launch", "--device", "h100", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B",
     "--gpu-memory-utilization", "nan"],
    ["launch", "--device", "h100", "--", "python", "-m", "sglang.launch_server",
     "--model-path", "meta-llama/Llama-3.1-8B", "--mem-fraction-static", "1e309"],
    ["launch", "--device", "h100", "--", "python", "-m", "sglang.launch_server",
     "--model-path", "meta-llama/Llama-3.1-8B", "--max-running-requests", DIGITS],
    ["recommend", "llama-3.1-8b", "--device", "h100", "--isl", "1000", "--osl", "100",
     "--qps", "1" + DIGITS],
])
def test_hostile_numbers_are_bad_input(invoke: Invoke, argv: list[str]) -> None:
    run = invoke(*argv)
    assert run.code == 2, run.stderr
    assert run.stderr.startswith("inventory: error: ") and run.stderr.count("\n") == 1
    assert len(run.stderr) < 400
    assert run.stdout == ""


def test_engines_under_debug_is_still_one_line(invoke: Invoke,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """INVENTORY_DEBUG shows tracebacks for bugs only; plain bad input stays one line."""
    monkeypatch.setenv("INVENTORY_DEBUG", "1")
    run = invoke("engines", "vllm@1" + DIGITS)
    assert run.code == 2 and "Traceback" not in run.stderr


@pytest.mark.parametrize("columns", [DIGITS, "99999999", "abc", "1e309"])
def test_columns_from_the_environment_is_bounded(monkeypatch: pytest.MonkeyPatch,
                                                 columns: str) -> None:
    """$COLUMNS is a number that enters from the environment: bounded like any other."""
    from llm_inventory.bounds import env_columns

    monkeypatch.setenv("COLUMNS", columns)
    with pytest.raises(InputError, match="^COLUMNS: "):
        env_columns()
    monkeypatch.setenv("COLUMNS", "0")
    assert env_columns() is None
    monkeypatch.setenv("COLUMNS", " 120 ")
    assert env_columns() == 120


@pytest.mark.parametrize("arg", [
    "parallel=0", "ubatch_size=-1", "batch_size=0", "parallel=0x10", "parallel=4x4"])
def test_llamacpp_engine_args_are_held_to_what_it_can_use(invoke: Invoke, arg: str) -> None:
    """Found by the fuzzer: a negative ubatch gave negative compute buffers."""
    run = invoke(*ARGS, "--engine", "llamacpp", "--engine-arg", arg)
    assert run.code == 2 and run.stderr.count("\n") == 1, run.stderr


@pytest.mark.parametrize("arg", ["mem_fraction_static=-1", "mem_fraction_static=1.5",
                                 "page_size=0"])
def test_sglang_engine_args_take_the_launch_lines_ranges(invoke: Invoke, arg: str) -> None:
    """Found by the fuzzer: mem_fraction_static=-1 printed a negative usable memory."""
    run = invoke(*ARGS, "--engine", "sglang", "--engine-arg", arg)
    assert run.code == 2 and run.stderr.count("\n") == 1, run.stderr


@pytest.mark.parametrize("arg", ["chunked_prefill_size=-1", "chunked_prefill_size=65536"])
def test_sglang_figures_never_go_negative(invoke: Invoke, arg: str) -> None:
    """-1 turns chunking off (the step budget is then max_prefill_tokens or the prompt);
    a chunk so large that the reserve passes the GPU leaves no pool, not a negative one."""
    run = invoke(*ARGS, "--engine", "sglang", "--engine-arg", arg, "--format", "json")
    assert run.code in (0, 1), run.stderr
    data = run.json()
    assert data["max_num_batched_tokens"] > 0
    assert data["usable_bytes"] >= 0
    assert all(p["per_device"]["usable_bytes"] >= 0 for p in data["plans"])
