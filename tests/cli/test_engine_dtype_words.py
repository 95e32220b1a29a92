"""Each engine's own KV cache words where that engine takes them: llama.cpp's q8_0, q4_0,
iq4_nl … through --kv-dtype, sized as llama.cpp stores them in every table."""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import Invoke

LLAMA = ("placement", "llama-3.1-8b", "-d", "rtx-4090", "-n", "1", "-e", "llamacpp",
         "--context", "32768")


@pytest.mark.parametrize(("word", "bits"), [("q8_0", 8.5), ("q4_0", 4.5), ("iq4_nl", 4.5)])
def test_llamacpp_cache_words_are_kv_dtypes(invoke: Invoke, word: str, bits: float) -> None:
    base = invoke(*LLAMA, "--format", "json").json()
    run = invoke(*LLAMA, "--kv-dtype", word, "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["kv_dtype"] == word
    f16 = base["widths"][0]["state_bytes_per_sequence"]
    # the tp table's state is the cache as stored, not the model's bf16
    assert data["widths"][0]["state_bytes_per_sequence"] == pytest.approx(f16 * bits / 16,
                                                                          rel=1e-6)
    plan = data["plans"][0]["per_device"]
    assert plan["state_bytes_per_sequence"] == data["widths"][0]["state_bytes_per_sequence"]
    # the same figure as the engine's own flags give
    flags = invoke(*LLAMA, "--engine-arg", f"cache_type_k={word}", "--engine-arg",
                   f"cache_type_v={word}", "--format", "json").json()
    assert flags["plans"][0]["per_device"]["kv_capacity_tokens"] == plan["kv_capacity_tokens"]
    assert flags["widths"][0]["state_bytes_per_sequence"] == plan["state_bytes_per_sequence"]


def test_the_launch_line_asks_for_the_cache_type(invoke: Invoke) -> None:
    data = invoke(*LLAMA, "--kv-dtype", "q8_0", "--launch", "--format", "json").json()
    words = shlex.split(data["plans"][0]["launch"][0])
    assert words[words.index("-ctk") + 1] == words[words.index("-ctv") + 1] == "q8_0"
    assert words[words.index("-fa") + 1] == "on"  # a quantized V cache needs it


def test_an_engine_refuses_another_engines_word(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--kv-dtype", "q8_0")
    assert run.code == 2 and "q8_0" in run.stderr


def test_vllm_fp8_e5m2_is_asked_as_written(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--kv-dtype",
                  "fp8_e5m2", "--launch", "--format", "json").json()
    assert data["fitting"] > 0
    assert "--kv-cache-dtype fp8_e5m2" in data["plans"][0]["launch"][0]
