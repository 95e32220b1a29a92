"""Input files shaped to crash a reader or a renderer: one line and exit 2, or a result."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Invoke

RECOMMEND = ["recommend", "llama-3.1-8b", "--device", "h100", "--qps", "1"]


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  "{a: " * 50_000 + "1" + "}" * 50_000])
@pytest.mark.parametrize("flag", ["--lengths", "--prices"])
def test_deeply_nested_yaml_is_bad_input(invoke: Invoke, tmp_path: Path, text: str,
                                         flag: str) -> None:
    """libyaml refuses the nesting; the pure-Python parser asked for a wordier message
    then recursed past Python's limit (RecursionError, exit 3)."""
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    argv = [*RECOMMEND, flag, str(path)]
    if flag == "--prices":
        argv += ["--isl", "100", "--osl", "100"]
    run = invoke(*argv)
    assert run.code == 2, run.stderr
    assert "nests" in run.stderr and run.stderr.count("\n") == 1


def test_empty_device_list_is_bad_input(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text("devices: []\n")
    run = invoke("devices", "--devices-file", str(path))
    assert run.code == 2 and run.stderr.count("\n") == 1


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_long_source_prints(invoke: Invoke, tmp_path: Path, fmt: str) -> None:
    """A 10,000-character word in `sources:` (the TEXT bound): the table's prose columns
    could not share the width (max() of an empty sequence); it prints wider instead."""
    path = tmp_path / "devices.yaml"
    path.write_text("devices:\n- id: mygpu\n  name: My GPU\n  memory_bytes: 80000000000\n"
                    "  sources: {memory_bytes: " + "x" * 10_000 + "}\n")
    run = invoke("devices", "mygpu", "--devices-file", str(path), "--format", fmt)
    assert run.code == 0, run.stderr
    assert "x" * 1000 in run.stdout
