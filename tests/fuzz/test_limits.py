"""A sample of the fuzz cases as real processes under RLIMIT_CPU and RLIMIT_AS, and the
largest inputs the bounds allow, timed against the limits a CI runner can afford."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_inventory import bounds
from tests.checkpoint.gguf_files import llama_gguf
from tests.fuzz import values
from tests.fuzz.harness import fuzz, run, run_limited
from tests.fuzz.test_flags import COMMANDS, invocation


@fuzz(6)
@given(data=st.data())
def test_a_sample_of_flag_cases_in_a_limited_process(data: st.DataObject) -> None:
    command = data.draw(st.sampled_from(COMMANDS))
    args = data.draw(invocation(command).filter(lambda a: all(map(values.for_subprocess, a))))
    run_limited(args)


def _deep_gguf(tmp_path: Path) -> Path:
    """The tiny quantized Llama, claiming the most layers the bounds allow."""
    path = tmp_path / "deep.gguf"
    llama_gguf(path)
    raw = bytearray(path.read_bytes())
    at = raw.find(b"llama.block_count") + len(b"llama.block_count") + 4
    raw[at:at + 4] = struct.pack("<I", bounds.LAYERS.limit)
    path.write_bytes(bytes(raw))
    return path


def test_the_most_layers_the_bounds_allow_in_a_limited_process(tmp_path: Path) -> None:
    outcome = run_limited(["inventory", _deep_gguf(tmp_path), "--format", "json"])
    assert outcome.code == 0


DEEP_DENSE = """\
name: deepest
family: dense
decoder:
  layers: 4096
  hidden_size: 4096
  heads: 4096
  head_dim: 64
  intermediate_size: 16384
  vocab_size: 262144
"""


def test_placement_at_the_device_and_layer_bounds_within_five_cpu_seconds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fuzz import harness

    monkeypatch.setattr(harness, "LIMIT_CPU_SECONDS", 5)
    model = tmp_path / "deepest.yaml"
    model.write_text(DEEP_DENSE)
    assert run(["placement", model, "--device", "h100", "--count", "8"]).code == 0
    outcome = run_limited(["placement", model, "--device", "h100",
                           "--count", str(bounds.DEVICES.limit), "--per-node", "1",
                           "--format", "json"])
    assert outcome.code == 0
