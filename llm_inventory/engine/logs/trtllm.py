"""TensorRT-LLM start-up logs: the TensorRT-engine path and the PyTorch backend.

Lines read (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp and trtGptModelInflightBatching
.cpp for the engine path; tensorrt_llm/_torch/pyexecutor/resource_manager.py for PyTorch):
`Loaded engine size: X MiB`, `Memory usage when calculating max tokens in paged kv cache:
total: T GiB, available: A GiB`, `Number of blocks in KV cache primary pool: B`, `Number of
tokens per block: P.`, `[MemUsageChange] Allocated X GiB for max tokens in paged KV cache
(N)`; the 0.8 engine `Allocate X bytes for k/v cache.` and `Using N tokens in paged KV
cache.`; the LLM API's `max_seq_len=…, max_num_requests=…, max_num_tokens=…`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llm_inventory.engine.logs import Check, LogLine, StartupLog
from llm_inventory.engine.logs.common import (
    NUMBER,
    Pattern,
    check,
    collect,
    count,
    first,
    kept,
    ranks,
)

_N = NUMBER
PATTERNS: tuple[Pattern, ...] = (
    (re.compile(rf"Loaded engine size: {_N} MiB"), [("engine_weights", "MiB")]),
    (re.compile(rf"Allocated {_N} MiB for execution context memory"),
     [("execution_context", "MiB")]),
    (re.compile(rf"Allocated {_N} MB GPU memory for runtime buffers"),
     [("runtime_buffers", "MB")]),
    (re.compile(rf"Allocated {_N} MB GPU memory for decoder"), [("decoder", "MB")]),
    (re.compile(rf"max tokens in paged kv cache: total: {_N} GiB, available: {_N} GiB"),
     [("total_memory", "GiB"), ("available", "GiB")]),
    (re.compile(rf"Number of blocks in KV cache primary pool: {_N}"),
     [("kv_blocks", "blocks")]),
    (re.compile(rf"Number of tokens per block: {_N}"), [("tokens_per_block", "tokens")]),
    (re.compile(rf"Allocated {_N} (GiB|MiB) for max tokens in paged KV cache \({_N}\)"),
     [("kv_pool", "@2"), ("", ""), ("kv_tokens", "tokens")]),
    (re.compile(rf"Allocate {_N} bytes for k/v cache"), [("kv_pool", "bytes")]),
    (re.compile(rf"Using {_N} tokens in paged KV cache"), [("kv_tokens", "tokens")]),
)

_MARKERS = (re.compile(r"\[TensorRT-LLM\]|\[TRT-LLM\]"),)
_VERSION = re.compile(r"TensorRT-LLM version:? v?(\d+\.\d+(?:\.\d+)?(?:\.?(?:rc|post|dev)\d*)*)")
_PYTORCH = re.compile(r"\[TRT-LLM\] \[[IWE]\]|PyTorch backend|pyexecutor")
_ENGINE_PATH = re.compile(r"Loaded engine size|TensorRT-managed allocation|execution context")
_SETTINGS = re.compile(r"(max_seq_len|max_num_requests|max_num_tokens|max_batch_size|"
                       r"free_gpu_memory_fraction|tensor_parallel_size|tp_size)[=:]\s*"
                       r"([\w.]+)")
_MODEL = re.compile(r"(?:--model|model(?:_dir)?[=:])\s*'?([\w./-]+)")


def score(lines: Sequence[LogLine]) -> int:
    return 2 * count(lines, _MARKERS)


def read(lines: Sequence[LogLine]) -> StartupLog:
    # the combined "Allocated … (N)" pattern carries an unused unit group: drop its figure
    figures = [f for f in collect(lines, PATTERNS) if f.key]
    keys = {f.key for f in figures}
    version = first(lines, _VERSION)
    engine_path = first(lines, _ENGINE_PATH) is not None
    pytorch = first(lines, _PYTORCH) is not None and not engine_path
    flags: dict[str, str] = {}
    for line in lines:
        for match in _SETTINGS.finditer(line.text):
            flags.setdefault(match.group(1), match.group(2))
    total = next((f for f in figures if f.key == "total_memory"), None)
    fraction = flags.get("free_gpu_memory_fraction")
    tp = flags.get("tensor_parallel_size") or flags.get("tp_size")
    context = flags.get("max_seq_len")
    model = first(lines, _MODEL)
    return StartupLog(
        engine="trtllm",
        dialect="TensorRT-LLM PyTorch backend" if pytorch else
        "TensorRT-LLM TensorRT-engine path",
        version=version.group(1) if version else None,
        version_basis="printed" if version else "",
        model=model.group(1) if model else None,
        gpu_memory_bytes=int(total.base) if total else None,
        tp=int(tp) if tp and tp.isdigit() else None,
        context=int(context) if context and context.isdigit() else None,
        memory_fraction=float(fraction) if fraction and fraction.replace(".", "", 1)
        .isdigit() else None,
        block_size=next((int(f.base) for f in figures if f.key == "tokens_per_block"), None),
        flags=flags, figures=figures, ranks=ranks(lines),
        truncated="kv_pool" not in keys and "kv_tokens" not in keys)


def checks(log: StartupLog) -> list[Check]:
    """TensorRT-LLM's arithmetic (kvCacheManager.cpp, calculateMaxNumBlocks): the pool is
    free_gpu_memory_fraction (0.9 unless set) × the available memory it printed; tokens are
    primary blocks × tokens per block."""
    fraction = log.memory_fraction or 0.9
    return kept(
        check(log, "kv_pool", f"free_gpu_memory_fraction ({fraction}) × available memory",
              ["available"], lambda f: fraction * float(f[0].base), [fraction]),
        check(log, "kv_tokens", "primary pool blocks × tokens per block",
              ["kv_blocks", "tokens_per_block"],
              lambda f: float(f[0].base) * float(f[1].base)),
    )
