"""Every exit status `inventory` documents, each forced once, and `--debug` anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_inventory.cli import app as app_module
from llm_inventory.cli.app import EPILOG, ExitCode
from tests.cli.test_subprocess import ENV, INVENTORY
from tests.conftest import Invoke


def test_the_codes_are_the_documented_ones() -> None:
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0, "CHECK_FAILED": 1, "BAD_INPUT": 2, "INTERNAL": 3, "OUTPUT_FAILED": 74,
        "PIPE_CLOSED": 141}
    for code in ExitCode:
        assert str(int(code)) in EPILOG


def test_help_lists_the_exit_codes(invoke: Invoke) -> None:
    shown = " ".join(invoke("--help").stdout.split())
    assert "Exit codes: 0 success; 1 a check you asked for failed" in shown
    assert "3 internal error" in shown and "141 output pipe closed" in shown


def test_0_success(invoke: Invoke) -> None:
    run = invoke("kv", "--layers", "80", "--tokens", "8000", "--format", "json")
    assert run.code == ExitCode.OK
    assert run.stderr == ""


def test_1_a_check_that_failed(invoke: Invoke) -> None:
    run = invoke("kv", "--max-bytes", "1GiB")
    assert run.code == ExitCode.CHECK_FAILED
    assert run.stderr.startswith("inventory: error: --max-bytes:")
    assert run.stdout  # the result is printed, then the check fails


def test_2_bad_input(invoke: Invoke) -> None:
    run = invoke("kv", "--layers", "0")
    assert run.code == ExitCode.BAD_INPUT
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1


def _broken(*args: object, **kwargs: object) -> None:
    raise ZeroDivisionError("a deliberate bug")


def _break_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways `kv` sizes state: the engine's and the uniform fast path's."""
    from llm_inventory.engine import state
    from llm_inventory.engine.kinds import uniform

    monkeypatch.setattr(state, "size_state", _broken)
    monkeypatch.setattr(uniform, "uniform_state", _broken)


def test_3_internal_error(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    _break_the_engine(monkeypatch)
    run = invoke("kv")
    assert run.code == ExitCode.INTERNAL
    assert run.stdout == ""
    assert run.stderr == ("inventory: error: unexpected ZeroDivisionError: a deliberate bug "
                          "(rerun with --debug for the traceback)\n")


@pytest.mark.parametrize("argv", [["--debug", "kv"], ["kv", "--debug"],
                                  ["kv", "--layers", "8", "--debug", "--tokens", "8"]])
def test_debug_anywhere_shows_the_traceback(monkeypatch: pytest.MonkeyPatch,
                                            argv: list[str]) -> None:
    _break_the_engine(monkeypatch)
    with pytest.raises(ZeroDivisionError, match="a deliberate bug"):
        app_module.main(argv)


@pytest.mark.parametrize("value", ["1", "yes", "on", "true"])
def test_inventory_debug_on_shows_the_traceback(monkeypatch: pytest.MonkeyPatch,
                                                value: str) -> None:
    _break_the_engine(monkeypatch)
    monkeypatch.setenv("INVENTORY_DEBUG", value)
    with pytest.raises(ZeroDivisionError, match="a deliberate bug"):
        app_module.main(["kv"])


@pytest.mark.parametrize("value", ["", "0", "false", "No", "off"])
def test_inventory_debug_off_keeps_one_line(invoke: Invoke, monkeypatch: pytest.MonkeyPatch,
                                            value: str) -> None:
    _break_the_engine(monkeypatch)
    monkeypatch.setenv("INVENTORY_DEBUG", value)
    run = invoke("kv")
    assert run.code == ExitCode.INTERNAL and run.stderr.count("\n") == 1


@pytest.mark.parametrize("argv", [["kv", "--debug"], ["kv", "--layers", "8", "--debug"]])
def test_debug_after_the_command_is_accepted(invoke: Invoke, argv: list[str]) -> None:
    run = invoke(*argv)
    assert run.code == ExitCode.OK, run.stderr


def test_a_request_model_refusal_is_bad_input_not_a_bug(invoke: Invoke,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A library request model's own validation (not the CLI's bounds) is rendered as
    `field: message`, the field spelled as its flag."""
    from llm_inventory import bounds

    monkeypatch.setitem(bounds.OPTIONS, "prompt_tokens", bounds.TOKENS)  # let 0 through
    run = invoke("placement", "llama-3.1-8b", "--device", "h100", "--prompt-tokens", "0")
    assert run.code == ExitCode.BAD_INPUT
    assert run.stderr == ("inventory: error: --prompt-tokens: Input should be greater than "
                          "or equal to 1, got 0\n")


def test_141_a_closed_pipe_is_quiet() -> None:
    """`inventory models | head -1` as a shell runs it, with the reader gone before the first
    write: no message, and not 1 (a failed check) but 128 + SIGPIPE."""
    assert INVENTORY
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([INVENTORY, "models"], stdout=write, stderr=subprocess.PIPE,
                              text=True, env=ENV, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == ExitCode.PIPE_CLOSED
    assert done.stderr == ""


def test_141_also_for_json_and_the_module_entry_point() -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "llm_inventory", "schema"], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=60)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (ExitCode.PIPE_CLOSED, "")


def test_a_reader_that_stops_early_still_gets_a_quiet_exit() -> None:
    """A real `| head -c 100`: the exit is 0 (all written before head left) or 141."""
    assert INVENTORY
    done = subprocess.run(f"'{INVENTORY}' schema | head -c 100 >/dev/null; "
                          "echo ${PIPESTATUS[0]} >&2", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert done.stderr.strip() in ("0", "141")


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_74_a_full_stdout_is_one_line(unbuffered: str) -> None:
    """`> /dev/full`: one line on stderr and 74, not 120 or a traceback."""
    assert INVENTORY
    with open("/dev/full", "w") as full:
        done = subprocess.run([INVENTORY, "models", "-f", "json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60,
                              env={**ENV, "PYTHONUNBUFFERED": unbuffered})
    assert done.returncode == ExitCode.OUTPUT_FAILED
    assert done.stderr == ("inventory: error: cannot write the output: No space left on "
                           "device; what was written is incomplete\n")


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_74_output_cut_by_a_file_size_limit_is_never_silent(unbuffered: str,
                                                            tmp_path: Path) -> None:
    """Python ignores SIGXFSZ: past `ulimit -f` a write comes back short, then EFBIG. The
    output cut at 4,096 bytes must not exit 0."""
    import resource

    assert INVENTORY
    target = tmp_path / "models.json"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    with target.open("w") as out:
        done = subprocess.run([INVENTORY, "models", "-f", "json"], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=60,
                              env={**ENV, "PYTHONUNBUFFERED": unbuffered}, preexec_fn=limit)
    assert target.stat().st_size <= 4096
    assert done.returncode == ExitCode.OUTPUT_FAILED, done.stderr
    assert done.stderr == ("inventory: error: cannot write the output: File too large; "
                           "what was written is incomplete\n")
