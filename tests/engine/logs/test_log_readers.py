"""Start-up log readers: every real log in the test data read back, figure for figure.

The `other-engines.json` records quote the engines' own lines (public issues, PRs, docs) and
list every figure printed, copied; the `runs.json` records (vLLM 0.19.0) list the figures of
raw logs whose text is rebuilt from them in `engine-logs-text/` (tools/engine_log_text.py).
Two real logs quoted in vllm-project/vllm#10517 are kept there verbatim.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.logs import clean, read_log
from llm_inventory.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
TEXT = DATA / "engine-logs-text"
OTHER = json.loads((DATA / "engine-logs" / "other-engines.json").read_text())
RUNS = json.loads((DATA / "engine-logs" / "runs.json").read_text())

# record figure name → (reader key, unit the record keeps it in)
RECORD_KEYS = {
    "weights_mem_usage_gb": "weights", "kv_tokens": "kv_tokens", "k_size_gb": "k_size",
    "v_size_gb": "v_size", "load_begin_avail_gb": "free_before_weights",
    "load_end_avail_gb": "free_after_weights", "mem_pool_end_avail_gb": "free_after_pool",
    "max_total_num_tokens": "max_total_num_tokens",
    "max_running_requests": "max_running_requests",
    "total_gpu_memory_gib": "total_memory", "budget_gib": "budget",
    "non_torch_gib": "non_torch", "activation_peak_gib": "activation",
    "gpu_blocks": "kv_blocks", "max_concurrency": "max_concurrency",
    "available_gib": "available", "primary_blocks": "kv_blocks",
    "tokens_per_block": "tokens_per_block", "engine_size_mib": "engine_weights",
    "kv_cache_bytes": "kv_pool", "kv_cells": "kv_cells", "kv_layers": "kv_layers",
    "kv_mib": "kv_size", "k_mib": "k_size", "v_mib": "v_size",
    "init_dist_mem_usage_gb": "init_distributed",
}
ENGINES = {"sglang": "sglang", "vllm": "vllm", "tensorrt-llm": "trtllm",
           "llama.cpp": "llamacpp"}


def _quote(record: dict) -> str:
    quote = record["quote"]
    return quote if isinstance(quote, str) else "\n".join(quote)


@pytest.mark.parametrize("record", OTHER, ids=[r["id"] for r in OTHER])
def test_every_quoted_log_is_read_figure_for_figure(record: dict) -> None:
    log = read_log(_quote(record))
    expected = ENGINES[record["engine"]]
    if record["id"] == "V08":  # a PR's summary: "before" and "after" block counts
        assert log.figure("kv_blocks").base == 7449  # type: ignore[union-attr]
        return
    assert log.engine == expected or (expected == "llamacpp" and log.engine == "ik_llama")
    compared = 0
    for name, key in RECORD_KEYS.items():
        if name not in record["figures"]:
            continue
        figure = log.figure(key)
        if figure is None:  # a figure the record derived from a line it does not quote
            continue
        assert figure.value == pytest.approx(record["figures"][name]), (name, figure)
        compared += 1
    assert compared >= 1
    # every figure the log prints that follows from its others is reproduced
    assert all(check.holds for check in log.checks), log.checks



def test_the_figures_kept_in_the_records_are_all_read() -> None:
    """Each record's printed figure that the readers model is found, unless its line is
    not among the lines the record quotes."""
    missing = []
    for record in OTHER:
        quote = _quote(record)
        log = read_log(quote)
        for name, value in record["figures"].items():
            key = RECORD_KEYS.get(name)
            if key is None or log.figure(key) is not None or record["id"] == "V08":
                continue
            if f"{value:.2f}" in quote or str(value) in quote:
                missing.append((record["id"], name))
    assert missing == []


@pytest.mark.parametrize("run", RUNS, ids=[r["id"] for r in RUNS])
def test_every_vllm_019_log_reproduces_its_own_figures(run: dict) -> None:
    log = read_log((TEXT / f"{run['id']}.log").read_text())
    actual = run["actual"]
    assert (log.engine, log.version, log.dialect) == ("vllm", "0.19.0", "vLLM V1 engine")
    assert log.model == run["model"] and log.context == run["max_model_len"]
    assert (log.tp or 1, log.pp or 1) == (run["tp"], run["pp"])
    assert log.memory_fraction == run["gpu_memory_utilization"]
    assert log.figure("kv_pool").value == actual["kv_cache_gib"]  # type: ignore[union-attr]
    assert log.figure("kv_tokens").base == actual["kv_tokens"]  # type: ignore[union-attr]
    # several workers: the first rank's (stage 0, TP rank 0), as the engine reports its pool
    first = next((w for w in actual.get("per_worker_profile", [])
                  if w["worker"] in ("Worker_TP0", "Worker_PP0")), actual)
    assert log.figure("activation").value == first["activation_gib"]  # type: ignore[union-attr]
    assert {c.key for c in log.checks} >= {"kv_pool", "reserve_total", "max_concurrency"}
    assert all(c.holds is not False for c in log.checks), log.checks
    # hybrid sliding-window models print a concurrency from their layer groups, not
    # tokens ÷ max_model_len (engine-logs README, point 7): said, not claimed
    unknown = [c for c in log.checks if c.holds is None]
    assert all(c.key == "max_concurrency" for c in unknown), unknown
    if unknown:
        assert any(word in run["model"] for word in ("gemma-2", "gemma-3", "gpt-oss"))


@pytest.mark.parametrize(("name", "engine", "version", "dialect"), [
    ("V01", "vllm", None, "vLLM V0 engine"),  # 0.7.1
    ("V05", "vllm", None, "vLLM V0 engine"),  # 0.7.3/0.8
    ("SG01", "sglang", None, "SGLang model runner"),  # ~0.4.3
    ("SG10", "sglang", None, "SGLang model runner"),  # 2026 build
    ("T01", "trtllm", None, "TensorRT-LLM TensorRT-engine path"),  # 0.19
    ("T06", "trtllm", None, "TensorRT-LLM TensorRT-engine path"),  # 0.8
    ("T08", "trtllm", None, "TensorRT-LLM PyTorch backend"),
    ("L01", "llamacpp", None, "llama.cpp"),  # llama_kv_cache_unified era
    ("L07", "llamacpp", None, "llama.cpp"),  # llama_new_context_with_model era
    ("L09", "ik_llama", None, "ik_llama.cpp"),
])
def test_each_dialect_from_two_releases(name: str, engine: str, version: str | None,
                                        dialect: str) -> None:
    log = read_log((TEXT / f"{name}.log").read_text())
    assert (log.engine, log.version, log.dialect) == (engine, version, dialect)
    assert not log.truncated


def test_the_v0_and_v1_lines_of_releases_far_apart() -> None:
    old = read_log((TEXT / "gh-vllm-10517-3090-llama-3.1-8b-20k.log").read_text())
    assert old.dialect == "vLLM V0 engine" and old.context == 20000
    assert old.figure("kv_blocks").base == 1952  # type: ignore[union-attr]
    assert old.figure("peak_torch").value == 17.06  # type: ignore[union-attr]
    assert old.gpu_memory_bytes == round(23.58 * 2**30)
    assert [c.holds for c in old.checks] == [True, True]


def test_ansi_colours_and_timestamps_change_nothing() -> None:
    plain = (TEXT / "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log").read_text()
    bold, green, reset = "\x1b[1m", "\x1b[32m", "\x1b[0m"
    dressed = "\n".join(
        f"2025-11-03T09:12:{i % 60:02d}.123456789Z {green}"
        + line.replace("INFO", f"{bold}INFO{reset}") + reset
        for i, line in enumerate(plain.splitlines()))
    a, b = read_log(plain), read_log(dressed)
    assert [(f.key, f.printed) for f in a.figures] == [(f.key, f.printed) for f in b.figures]
    assert (a.model, a.version, a.context) == (b.model, b.version, b.context)
    assert all(c.holds for c in b.checks)


def test_two_ranks_interleaved_take_the_first_ranks_figures() -> None:
    text = (TEXT / "meta-llama-llama-3-1-8b---h100-80gb--tp1pp4dp1--8192.log").read_text()
    lines = text.splitlines()
    log = read_log(text)
    # stage 0 printed 1.10 GiB; stages 1 and 2 printed 1.05 GiB before and after it
    assert log.figure("activation").value == 1.10  # type: ignore[union-attr]
    assert log.figure("activation").rank == "Worker_PP0"  # type: ignore[union-attr]
    assert {"Worker_PP0", "Worker_PP1", "Worker_PP2", "Worker_PP3"} <= set(log.ranks)
    shuffled = lines[:4] + random.Random(7).sample(lines[4:], len(lines) - 4)
    again = read_log("\n".join(shuffled))
    assert again.figure("activation").value == 1.10  # type: ignore[union-attr]


def test_sglang_ranks_in_brackets() -> None:
    lines = clean("[2025-10-16 09:06:10 TP5] Load weight begin. avail mem=137.29 GB")
    assert (lines[0].rank, lines[0].text) == ("TP5", "Load weight begin. avail mem=137.29 GB")


def test_a_truncated_log_is_read_and_said_so() -> None:
    text = (TEXT / "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log").read_text()
    cut = "\n".join(text.splitlines()[:6])
    log = read_log(cut)
    assert log.truncated and log.version == "0.19.0" and log.figure("kv_pool") is None
    cut_mid_line = text[: text.index("Available KV cache") + 12]
    assert read_log(cut_mid_line).truncated


@pytest.mark.parametrize("text", ["", "hello world\nnothing here", "\x00\x01\x02binary",
                                  "INFO vLLM something\n" * 3, "{" * 10_000])
def test_garbage_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(InputError) as raised:
        read_log(text)
    assert "\n" not in str(raised.value)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["", "INFO ", "[2025-01-01 00:00:00 TP0] ",
                                               "(EngineCore_DP0 pid=1) ", "llama[1]: "]))
def test_any_text_is_read_or_refused_in_one_line(text: str, prefix: str) -> None:
    """Whatever a file holds: a StartupLog, or one InputError line; never another error."""
    lines = clean(prefix + text)
    assert all("\x1b[" not in line.text for line in lines)
    try:
        log = read_log(prefix + text)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert log.engine in ("vllm", "sglang", "trtllm", "llamacpp", "ik_llama")


def test_a_huge_line_is_bounded() -> None:
    line = "total_gpu_memory=1GiB " * 200_000
    with pytest.raises(InputError):
        read_log(line)


def test_two_ranks_glued_on_one_line_are_split() -> None:
    """Two worker processes writing one stream with no newline between their lines."""
    text = ("(Worker_TP1 pid=12) DEBUG [gpu_worker.py] Total non KV cache memory: 37.95GiB; "
            "torch peak memory increase: 1.96GiB; non-torch forward increase memory: 2.10GiB; "
            "weights memory: 33.88GiB.(Worker_TP0 pid=11) INFO [gpu_worker.py] Available KV "
            "cache memory: 37.28 GiB\n(EngineCore_DP0 pid=10) INFO [kv_cache_utils.py] GPU KV "
            "cache size: 244,304 tokens")
    log = read_log(text)
    assert log.figure("kv_pool").value == 37.28  # type: ignore[union-attr]
    assert log.figure("kv_pool").rank == "Worker_TP0"  # type: ignore[union-attr]
    assert log.figure("activation").rank == "Worker_TP1"  # type: ignore[union-attr]
    assert log.figure("kv_tokens").base == 244304  # type: ignore[union-attr]


HELDOUT = json.loads((DATA / "engine-logs-heldout" / "heldout.json").read_text())
HELD_KEYS = {"kv_cache_gib": "kv_pool", "kv_tokens": "kv_tokens", "weights_gib": "weights",
             "peak_torch_gib": "peak_torch", "non_torch_gib": "non_torch",
             "kv_blocks": "kv_blocks", "max_concurrency": "max_concurrency",
             "k_size_gb": "k_size", "v_size_gb": "v_size", "kv_tokens_logged": "kv_tokens"}


@pytest.mark.parametrize("record", HELDOUT, ids=[r["id"] for r in HELDOUT])
def test_every_held_out_quote_is_read(record: dict) -> None:
    """The held-out start-ups (public issues; vLLM 0.6 to 0.24, SGLang, TensorRT-LLM): each
    read as its engine, each printed figure the readers model found with its value, and no
    figure that follows from the log's others contradicted. (Reading only: these records
    stay out of every accounting fit.)"""
    quote = _quote(record)
    log = read_log(quote)
    assert log.engine == ENGINES[record["engine"]]
    for name, key in HELD_KEYS.items():
        if name not in record["figures"]:
            continue
        value = record["figures"][name]
        figure = log.figure(key)
        if figure is None:  # H14 paraphrases vLLM's line in prose: not the engine's words
            assert record["id"] == "H14" and name in ("non_torch_gib", "kv_cache_gib")
            continue
        assert figure.value == pytest.approx(value), (name, figure)
    assert all(c.holds is not False for c in log.checks), log.checks


def test_the_error_vllm_stopped_with_is_read() -> None:
    """vllm-project/vllm#25350 (2025-09): the stop of a V1 release, quoted verbatim."""
    text = ("ValueError: To serve at least one request with the models's max seq len (221000), "
            "(10.12 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(5.59 GiB). Based on the available memory, the estimated maximum model length is "
            "122080. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.")
    log = read_log(text)
    assert log.error is not None and log.error.startswith("ValueError: To serve")
    assert log.figure("kv_pool").value == 5.59  # type: ignore[union-attr]
    assert log.figure("longest_context").base == 122080  # type: ignore[union-attr]
    assert not log.truncated
