"""SGLang start-up logs (0.4 to the 2026 builds).

Lines read, by the source that prints them (python/sglang/srt/model_executor/
model_runner.py unless said): `Init torch distributed ends. mem usage=X GB`, `Load weight
begin. avail mem=X GB`, `Load weight end. type=…, dtype=…, avail mem=X GB, mem usage=Y GB`,
`KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB` (mem_cache/memory_pool.py),
`Memory pool end. avail mem=X GB`, `Capture cuda graph end. … mem usage=X GB … avail mem=Y
GB` (cuda_graph_runner.py), and the scheduler's `max_total_num_tokens=N, …,
max_running_requests=R, context_len=C`; `server_args=ServerArgs(…)` (the settings). SGLang
prints GiB (bytes ÷ 2^30) and labels them "GB".
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
    dtype,
    first,
    kept,
    ranks,
)

_N = NUMBER
PATTERNS: tuple[Pattern, ...] = (
    (re.compile(rf"Init torch distributed ends\. mem usage={_N} GB"),
     [("init_distributed", "GB")]),
    (re.compile(rf"Load weight begin\. avail mem={_N} GB"), [("free_before_weights", "GB")]),
    (re.compile(rf"Load weight end\..*?avail mem={_N} GB, mem usage={_N} GB"),
     [("free_after_weights", "GB"), ("weights", "GB")]),
    (re.compile(rf"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens: {_N}, K size: {_N} GB, "
                rf"V size: {_N} GB"),
     [("kv_tokens", "tokens"), ("k_size", "GB"), ("v_size", "GB")]),
    (re.compile(rf"Memory pool end\. avail mem={_N} GB"), [("free_after_pool", "GB")]),
    (re.compile(rf"Capture cuda graph begin\..*?avail mem={_N} GB"),
     [("free_before_graphs", "GB")]),
    (re.compile(rf"Capture cuda graph end\..*?mem usage={_N} GB"), [("cuda_graph", "GB")]),
    (re.compile(rf"Capture cuda graph end\..*?avail mem={_N} GB"),
     [("free_after_graphs", "GB")]),
    (re.compile(rf"max_total_num_tokens={_N}"), [("max_total_num_tokens", "tokens")]),
    (re.compile(rf"max_running_requests={_N}"), [("max_running_requests", "tokens")]),
)

_MARKERS = (re.compile(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens|max_total_num_tokens=|"
                       r"Load weight end\. |ServerArgs\(|Memory pool end\. avail mem"),)
_ARGS = re.compile(r"server_args=ServerArgs\((.*)\)")
_VERSION = re.compile(r"sglang(?: version|==| v)\s*:?\s*v?(\d+\.\d+(?:\.\d+)*(?:\.post\d+)?)",
                      re.IGNORECASE)
_CONTEXT = re.compile(r"context_len=(\d+)")
_WEIGHT_DTYPE = re.compile(r"Load weight end\..*?dtype=(torch\.\w+)")
_KV_DTYPE = re.compile(r"Using KV cache dtype: (torch\.\w+)|KV Cache is allocated\. dtype: "
                       r"(torch\.\w+)")


def score(lines: Sequence[LogLine]) -> int:
    return 3 * count(lines, _MARKERS)


def _server_args(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip().strip("'") for m in re.finditer(
        r"(\w+)=('(?:[^']*)'|\[[^\]]*\]|\{[^}]*\}|[^,()]*)(?:,|$)", text)}


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def read(lines: Sequence[LogLine]) -> StartupLog:
    figures = collect(lines, PATTERNS)
    keys = {f.key for f in figures}
    args = first(lines, _ARGS)
    flags = _server_args(args.group(1)) if args else {}
    version = first(lines, _VERSION)
    context = first(lines, _CONTEXT)
    weight_dtype = first(lines, _WEIGHT_DTYPE)
    kv = first(lines, _KV_DTYPE)
    fraction = flags.get("mem_fraction_static")
    try:
        memory_fraction = float(fraction) if fraction not in (None, "None") else None
    except ValueError:
        memory_fraction = None
    return StartupLog(
        engine="sglang", dialect="SGLang model runner",
        version=version.group(1) if version else None,
        version_basis="printed" if version else "",
        model=flags.get("model_path"), tp=_int(flags.get("tp_size")),
        pp=_int(flags.get("pp_size")), dp=_int(flags.get("dp_size")),
        context=int(context.group(1)) if context else _int(flags.get("context_length")),
        dtype=dtype(weight_dtype.group(1) if weight_dtype else flags.get("dtype")),
        kv_dtype=dtype((kv.group(1) or kv.group(2)) if kv else flags.get("kv_cache_dtype")),
        quantization=flags.get("quantization") if flags.get("quantization") not in
        (None, "None") else None,
        memory_fraction=memory_fraction, block_size=_int(flags.get("page_size")),
        flags=flags, figures=figures, ranks=ranks(lines),
        truncated="kv_tokens" not in keys and "max_total_num_tokens" not in keys)


def checks(log: StartupLog) -> list[Check]:
    """SGLang's prints on each other (model_runner.py): the weights' memory is the free
    memory before loading less the free memory after; graph capture's usage the free memory
    before capture less after; the scheduler's max_total_num_tokens is the pool's #tokens;
    K and V buffers are the same size for standard attention."""
    return kept(
        check(log, "weights", "avail mem before loading − avail mem after loading",
              ["free_before_weights", "free_after_weights"],
              lambda f: float(f[0].base) - float(f[1].base)),
        check(log, "cuda_graph", "avail mem before capture − avail mem after capture",
              ["free_before_graphs", "free_after_graphs"],
              lambda f: float(f[0].base) - float(f[1].base)),
        check(log, "max_total_num_tokens", "the pool's #tokens", ["kv_tokens"],
              lambda f: float(f[0].base)),
        check(log, "v_size", "K size (K and V heads alike)", ["k_size"],
              lambda f: float(f[0].base)),
    )
