"""vLLM start-up logs, V0 and V1 engines, every release modelled.

The lines read, by the source that prints them:
- version: `vLLM API server version X` (entrypoints/openai/api_server.py), `Initializing a
  V1 LLM engine (vX) with config: …` (v1/engine/core.py), `Initializing an LLM engine (vX)
  with config: …` (engine/llm_engine.py, V0); the config line also names the model, dtype,
  max_seq_len, tensor/pipeline sizes, quantization and kv_cache_dtype;
  `non-default args: {…}` (entrypoints/utils.py, 0.9 on) the flags given;
- weights: `Model loading took X GiB` (V1 gpu_model_runner.py), `Loading model weights took
  X GB` (V0 model_runner.py; GiB despite the word);
- the budget (V0 worker.py and V1 gpu_worker.py to 0.10): `the current vLLM instance can use
  total_gpu_memory (T) x gpu_memory_utilization (U) = B` then `model weights take W;
  non_torch_memory takes N; PyTorch activation peak memory takes A; the rest of the memory
  reserved for KV Cache is K`;
- V1 from 0.10 (gpu_worker.py, DEBUG): `Initial free memory: F GiB; Requested memory: U
  (util), B GiB` and `Total non KV cache memory: R; torch peak memory increase: A;
  non-torch forward increase memory: N; weights memory: W`; INFO `Available KV cache
  memory: K GiB`;
- pool: `GPU KV cache size: N tokens` and `Maximum concurrency for C tokens per request:
  Xx` (v1/core/kv_cache_utils.py); V0 `# GPU blocks: B, # CPU blocks: C` (executor_base.py);
- graphs: `Graph capturing finished in S secs, took G GiB`; from 0.21 `CUDA graph pool
  memory: G GiB (actual), E GiB (estimated)` (gpu_worker.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from llm_inventory.engine.logs import Check, LogLine, StartupLog
from llm_inventory.engine.logs.common import (
    NUMBER,
    Pattern,
    check,
    collect,
    count,
    dtype,
    first,
    kept,
    ranks,
)
from llm_inventory.units import GIB

_N = NUMBER
PATTERNS: tuple[Pattern, ...] = (
    (re.compile(rf"Model loading took {_N} ?GiB"), [("weights", "GiB")]),
    (re.compile(rf"Loading model weights took {_N} ?GB"), [("weights", "GB")]),
    (re.compile(rf"total_gpu_memory \({_N} ?GiB\) x gpu_memory_utilization \({_N}\) = "
                rf"{_N} ?GiB"), [("total_memory", "GiB"), ("utilization", "x"),
                                 ("budget", "GiB")]),
    (re.compile(rf"model weights take {_N} ?GiB; non_torch_memory takes {_N} ?GiB; "
                rf"PyTorch activation peak memory takes {_N} ?GiB; the rest of the memory "
                rf"reserved for KV Cache is {_N} ?GiB"),
     [("weights_profiled", "GiB"), ("non_torch", "GiB"), ("activation", "GiB"),
      ("kv_pool", "GiB")]),
    (re.compile(rf"total_gpu_memory={_N}GiB[,\s]+initial_memory_usage={_N}GiB[,\s]+"
                rf"peak_torch_memory={_N}GiB.*?non_torch_memory={_N}GiB[,\s]+kv_cache_size="
                rf"{_N}GiB[,\s]+gpu_memory_utilization={_N}"),
     [("total_memory", "GiB"), ("initial_usage", "GiB"), ("peak_torch", "GiB"),
      ("non_torch", "GiB"), ("kv_pool", "GiB"), ("utilization", "x")]),
    (re.compile(rf"Initial free memory: {_N} ?GiB; Requested memory: {_N} \(util\), "
                rf"{_N} ?GiB"), [("initial_free", "GiB"), ("utilization", "x"),
                                 ("budget", "GiB")]),
    (re.compile(rf"Total non KV cache memory: {_N} ?GiB; torch peak memory increase: {_N} ?"
                rf"GiB; non-torch forward increase memory: {_N} ?GiB; weights memory: "
                rf"{_N} ?GiB"),
     [("reserve_total", "GiB"), ("activation", "GiB"), ("non_torch", "GiB"),
      ("weights_profiled", "GiB")]),
    (re.compile(rf"Available KV cache memory: {_N} ?GiB"), [("kv_pool", "GiB")]),
    (re.compile(rf"GPU KV cache size: {_N} tokens"), [("kv_tokens", "tokens")]),
    (re.compile(rf"(?:^|# )(?:GPU|CUDA|cuda|gpu) blocks: {_N}"), [("kv_blocks", "blocks")]),
    (re.compile(rf"num_gpu_blocks is: {_N}"), [("kv_blocks", "blocks")]),
    (re.compile(rf"larger than the maximum number of tokens that can be stored in KV cache "
                rf"\({_N}\)"), [("kv_tokens", "tokens")]),
    (re.compile(rf"larger than the available KV cache memory \({_N} ?GiB\)"),
     [("kv_pool", "GiB")]),
    (re.compile(rf"the estimated maximum model length is {_N}"),
     [("longest_context", "tokens")]),
    (re.compile(rf"Maximum concurrency for {_N} tokens per request: {_N}x"),
     [("concurrency_context", "tokens"), ("max_concurrency", "x")]),
    (re.compile(rf"Graph capturing finished(?: in [\d.]+ secs?)?, took {_N} ?GiB"),
     [("cuda_graph", "GiB")]),
    (re.compile(rf"CUDA graph pool memory: {_N} ?GiB \(actual\), {_N} ?GiB \(estimated\)"),
     [("cuda_graph", "GiB"), ("cuda_graph_estimated", "GiB")]),
)

_VERSION = (re.compile(r"vLLM API server version v?(\d+\.\d+(?:\.\d+)?[\w.+-]*)"),
            re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(\d+\.\d+(?:\.\d+)?[\w.+-]*)\)"),
            re.compile(r"vLLM version:? v?(\d+\.\d+(?:\.\d+)?[\w.+-]*)"))
_V1 = re.compile(r"Initializing a V1 LLM engine|Available KV cache memory|"
                 r"GPU KV cache size")
_V1_RANK = re.compile(r"^(?:EngineCore|Worker_)")  # V1's processes; V0's are VllmWorkerProcess
_ERROR = re.compile(r"((?:ValueError|RuntimeError|torch\.OutOfMemoryError|"
                    r"torch\.cuda\.OutOfMemoryError): .*|The model's max seq len \(\d+\) is "
                    r"larger than the maximum number of tokens.*|No available memory for the "
                    r"cache blocks.*)")
_CONFIG = re.compile(r"Initializing an? (?:V1 )?LLM engine.*?with config: (.*)")
_ARGS = re.compile(r"non-default args: (\{.*\})")
_STARTED = (re.compile(r"vLLM API server version|Initializing an? (?:V1 )?LLM engine|"
                       r"non-default args: \{|Model loading took|Loading model weights took"),)
_SERVE = re.compile(r"\bvllm serve (\S+)(.*)")
_MARKERS = (re.compile(r"vLLM|vllm"), re.compile(r"KV Cache is \d|GPU KV cache size|"
            r"reserved for KV Cache|(?:GPU|CUDA|cuda) blocks: \d|Available KV cache memory|"
            r"Memory profiling results: total_gpu_memory|"
            r"larger than the available KV cache memory|No available memory for the cache "
            r"blocks|maximum number of tokens that can be stored in KV cache|"
            r"Maximum concurrency for [\d,]+ tokens per request"))


def score(lines: Sequence[LogLine]) -> int:
    """Memory lines count most; the banner, config and loading lines make a truncated log
    still vLLM's. A mere mention of vLLM is not a start-up log."""
    return 3 * count(lines, _MARKERS[1:]) + 2 * count(lines, _STARTED)


def _config(text: str) -> dict[str, str]:
    """`key=value, key=value` of the engine's config line (values may hold commas in
    brackets or quotes; only the simple ones are needed)."""
    found: dict[str, str] = {}
    for match in re.finditer(r"(\w+)=('(?:[^']*)'|[^,()]*)(?:,|$)", text):
        found[match.group(1)] = match.group(2).strip().strip("'")
    return found


def _args(text: str) -> dict[str, str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.replace(",", "").strip()
    return int(text) if text.isdigit() else None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def read(lines: Sequence[LogLine]) -> StartupLog:
    figures = collect(lines, PATTERNS)
    by_key = {f.key: f for f in figures}
    version, basis = None, ""
    for regex in _VERSION:
        match = first(lines, regex)
        if match:
            version, basis = match.group(1), "printed"
            break
    v1 = first(lines, _V1) is not None or any(_V1_RANK.match(line.rank) for line in lines)
    flags: dict[str, str] = {}
    config = first(lines, _CONFIG)
    if config:
        flags.update(_config(config.group(1)))
    serve = first(lines, _SERVE)
    model = None
    if serve:
        model = serve.group(1)
        tokens = serve.group(2).split()
        for i, token in enumerate(tokens):
            if token.startswith("--"):
                name = token[2:].replace("-", "_")
                value = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].startswith(
                    "-") else "True"
                flags[name] = value
    args = first(lines, _ARGS)
    given = _args(args.group(1)) if args else {}
    flags.update(given)
    model = given.get("model") or flags.get("model") or model
    util = by_key.get("utilization")
    total = by_key.get("total_memory")
    memory: int | None = int(total.base) if total else None
    budget = by_key.get("budget")
    if memory is None and budget and util and util.value > 0:
        memory = round(budget.value / util.value * GIB)  # within the printing precision
    context = (_int(given.get("max_model_len")) or _int(flags.get("max_seq_len"))
               or _int(flags.get("max_model_len")))
    if context is None and "concurrency_context" in by_key:
        context = int(by_key["concurrency_context"].base)
    notes: list[str] = []
    if total is None and memory is not None:
        notes.append("device memory derived from the requested budget ÷ utilisation "
                     "(vLLM prints it to 0.01 GiB)")
    truncated = "kv_pool" not in by_key and "kv_tokens" not in by_key and \
        "kv_blocks" not in by_key
    return StartupLog(
        engine="vllm", dialect="vLLM V1 engine" if v1 else "vLLM V0 engine",
        version=version, version_basis=basis, model=model, gpu_memory_bytes=memory,
        tp=_int(given.get("tensor_parallel_size") or flags.get("tensor_parallel_size")),
        pp=_int(given.get("pipeline_parallel_size") or flags.get("pipeline_parallel_size")),
        dp=_int(given.get("data_parallel_size")), context=context,
        dtype=dtype(given.get("dtype") or flags.get("dtype")),
        kv_dtype=dtype(given.get("kv_cache_dtype") or flags.get("kv_cache_dtype")),
        quantization=(flags.get("quantization") if flags.get("quantization") not in
                      (None, "None") else None),
        memory_fraction=util.value if util else _float(given.get("gpu_memory_utilization")),
        block_size=_int(given.get("block_size")),
        max_num_batched_tokens=_int(given.get("max_num_batched_tokens")),
        flags=flags, figures=figures, ranks=ranks(lines), truncated=truncated, notes=notes,
        error=error.group(1).strip() if (error := first(lines, _ERROR)) else None)


def checks(log: StartupLog) -> list[Check]:
    """vLLM's own arithmetic on the printed figures (V0 worker.py determine_num_available
    _blocks, V1 gpu_worker.py determine_available_memory, kv_cache_utils.py): the budget is
    total × utilisation; the pool what the budget leaves after weights, non-torch memory and
    the activation peak (or after the non-KV total); tokens are blocks × block size;
    concurrency is tokens ÷ max_model_len (standard attention)."""
    block = log.block_size or 16
    util = log.memory_fraction
    found = [
        check(log, "budget", "total_gpu_memory × gpu_memory_utilization", ["total_memory"],
              lambda f: float(f[0].base) * (util or 0), [util or 0]) if util else None,
        check(log, "kv_pool", "total × utilisation − peak torch memory − non-torch memory",
              ["total_memory", "peak_torch", "non_torch"],
              lambda f: float(f[0].base) * (util or 0) - float(f[1].base) - float(f[2].base),
              [util or 0, 1, 1]) if util and log.figure("peak_torch") else
        check(log, "kv_pool", "budget − weights − non_torch − activation peak",
              ["budget", "weights_profiled", "non_torch", "activation"],
              lambda f: float(f[0].base) - sum(float(x.base) for x in f[1:]))
        if log.figure("reserve_total") is None else
        check(log, "kv_pool", "requested memory − total non-KV memory",
              ["budget", "reserve_total"], lambda f: float(f[0].base) - float(f[1].base)),
        check(log, "reserve_total", "weights + torch peak increase + non-torch increase",
              ["weights_profiled", "activation", "non_torch"],
              lambda f: sum(float(x.base) for x in f)),
        check(log, "kv_tokens", f"GPU blocks × block size ({block})", ["kv_blocks"],
              lambda f: float(f[0].base) * block),
        check(log, "max_concurrency", "GPU KV cache tokens ÷ tokens per request",
              ["kv_tokens", "concurrency_context"],
              lambda f: float(f[0].base) / float(f[1].base)),
    ]
    if log.figure("kv_tokens") is None:
        found.append(check(log, "max_concurrency",
                           f"GPU blocks × block size ({block}) ÷ tokens per request",
                           ["kv_blocks", "concurrency_context"],
                           lambda f: float(f[0].base) * block / float(f[1].base)))
    checks = kept(*found)
    # A hybrid model (sliding-window or linear-attention layer groups) prints a concurrency
    # counted in blocks per group (v1/core/kv_cache_utils.py get_max_concurrency_for_kv_
    # cache_config), which the printed tokens alone do not give.
    return [c.model_copy(update={
        "holds": None, "formula": c.formula + " (does not hold: a hybrid model's "
        "concurrency counts blocks per layer group, which the log does not print)"})
        if c.key == "max_concurrency" and not c.holds else c for c in checks]
