"""llama.cpp and ik_llama.cpp start-up logs.

Lines read (src/llama-kv-cache*.cpp, src/llama-context.cpp, src/llama-model.cpp; ik_llama.cpp
keeps the older src/llama.cpp names): `llama_kv_cache[_unified]: size = X MiB (C cells, L
layers, S seqs), K (t): X MiB, V (t): Y MiB`; the older `llama_new_context_with_model: KV
self size = X MiB, K (t): …, V (t): …` (ik_llama.cpp's MLA: `c^KV (t): X MiB`); per device
`<DEV> KV buffer size = X MiB`, `<DEV> model buffer size = X MiB`, `<DEV> compute buffer
size = X MiB`; `n_ctx = N`; `build: N (hash)`; `using device CUDA0 (NAME) - F MiB free` and
`Device 0: NAME, compute capability …` for the GPU.
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
    (re.compile(rf"size = +{_N} MiB \( *{_N} cells, *{_N} layers, *[\d/]+ seqs\), K \(\w+\): "
                rf"+{_N} MiB, V \(\w+\): +{_N} MiB"),
     [("kv_size", "MiB"), ("kv_cells", "cells"), ("kv_layers", "layers"), ("k_size", "MiB"),
      ("v_size", "MiB")]),
    (re.compile(rf"KV self size += +{_N} MiB, K \(\w+\): +{_N} MiB, V \(\w+\): +{_N} MiB"),
     [("kv_size", "MiB"), ("k_size", "MiB"), ("v_size", "MiB")]),
    (re.compile(rf"KV self size += +{_N} MiB, c\^KV \(\w+\): +{_N} MiB"),
     [("kv_size", "MiB"), ("k_size", "MiB")]),
    (re.compile(rf"n_ctx += +{_N}$"), [("kv_context", "cells")]),
)
_BUFFER = re.compile(rf"(\w+) (KV|model|compute|output) buffer size = +{_N} MiB")
_MARKERS = (re.compile(r"^llama_|^llm_load|^load_tensors|^ggml_|KV self size|"
                       r"llama_kv_cache"),)
_BUILD = re.compile(r"build(?::| =) (\d+) \((\w+)\)")
_IK = re.compile(r"ik_llama|c\^KV|mla_attn|llama_new_context_with_model: mla")
_TYPES = re.compile(r"K \((\w+)\):.*?V \((\w+)\):|c\^KV \((\w+)\)")
_DEVICE = re.compile(r"using device \w+ \(([^)]+)\)|Device 0: ([^,]+), compute capability")
_FREE = re.compile(r"using device \w+ \([^)]+\) - (\d+) MiB free")
_MODEL = re.compile(r"loaded meta data with .* from (\S+\.gguf)")
_NAME = re.compile(r"general\.name\s+str\s+=\s+(.+)$")


def score(lines: Sequence[LogLine]) -> int:
    return 2 * count(lines, _MARKERS)


def read(lines: Sequence[LogLine]) -> StartupLog:
    from llm_inventory.engine.logs.common import figure

    figures = collect(lines, PATTERNS)
    for line in lines:  # every device's buffers, one figure each
        match = _BUFFER.search(line.text)
        if match:
            key = f"{match.group(2).lower()}_buffer_{match.group(1)}"
            if all(f.key != key for f in figures):
                figures.append(figure(key, match.group(3), "MiB", line))
    figures.sort(key=lambda f: f.line)
    keys = {f.key for f in figures}
    build = first(lines, _BUILD)
    ik = first(lines, _IK) is not None
    types = first(lines, _TYPES)
    device = first(lines, _DEVICE)
    model = first(lines, _MODEL) or first(lines, _NAME)
    context = next((int(f.base) for f in figures if f.key == "kv_context"), None)
    k_type = types.group(1) or types.group(3) if types else None
    return StartupLog(
        engine="ik_llama" if ik else "llamacpp",
        dialect="ik_llama.cpp" if ik else "llama.cpp",
        version=build.group(1) if build else None,
        version_basis=f"printed (build {build.group(1)}, {build.group(2)})" if build else "",
        model=model.group(1).strip() if model else None,
        gpu=(device.group(1) or device.group(2)).strip() if device else None,
        gpu_count=len({f.key for f in figures if f.key.startswith("kv_buffer_CUDA")}) or None,
        context=context, kv_dtype=dtype(k_type),
        flags={"k_type": k_type or "", "v_type": types.group(2) or "" if types else ""}
        if types else {},
        figures=figures, ranks=ranks(lines), truncated="kv_size" not in keys)


def checks(log: StartupLog) -> list[Check]:
    """llama.cpp's cache print on itself (llama-kv-cache.cpp): the size is K's plus V's;
    the per-device KV buffers add up to it."""
    buffers = [f.key for f in log.figures if f.key.startswith("kv_buffer_")]
    found = [check(log, "kv_size", "K size + V size", ["k_size", "v_size"],
                   lambda f: float(f[0].base) + float(f[1].base))]
    if len(buffers) > 1:
        found.append(check(log, "kv_size", "the devices' KV buffers summed", buffers,
                           lambda f: sum(float(x.base) for x in f)))
    return kept(*found)
