"""Write start-up log text for the engine-log records (dev only; never a runtime dependency).

- `other-engines.json` records quote the engine's own lines: each is written verbatim to
  `<id>.log`, with its source as the file's first line (a `#` comment the readers skip).
- `runs.json` records (vLLM 0.19.0, llm-d planner accuracy sweep) hold every memory figure
  the raw logs printed but not the text: `<id>.log` is rebuilt ONLY from those figures, in
  vLLM 0.19's own line formats (vllm/v1/worker/gpu_worker.py, gpu_model_runner.py,
  v1/core/kv_cache_utils.py, entrypoints/utils.py). Timings, dates and process ids were not
  recorded and are left out rather than invented.

Usage: python tools/engine_log_text.py tests/data/engine-logs tests/data/engine-logs-text
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _vllm_019(run: dict) -> str:
    a = run["actual"]
    args = run["non_default_args"]
    ec = "(EngineCore_DP0 pid=0) "
    tp = run["tp"] * run["pp"]
    lines = [
        f"(APIServer pid=0) INFO [api_server.py] vLLM API server version {run['vllm_version']}",
        f"(APIServer pid=0) INFO [utils.py] non-default args: {args!r}",
        f"{ec}INFO [core.py] Initializing a V1 LLM engine (v{run['vllm_version']}) with "
        f"config: model='{run['model']}', dtype=torch.{run['dtype']}, "
        f"max_seq_len={run['max_model_len']}, tensor_parallel_size={run['tp']}, "
        f"pipeline_parallel_size={run['pp']}, quantization={run['quantization']}, "
        f"kv_cache_dtype={run['kv_cache_dtype']}",
    ]
    printer = a.get("printed_by", {}).get("kv_cache_gib", "")
    worker = f"({printer} pid=0) " if printer.startswith("Worker_") else (
        "(Worker_TP0 pid=0) " if tp > 1 else ec)
    lines.append(f"{worker}INFO [gpu_model_runner.py] Model loading took "
                 f"{a['weights_gib']:.2f} GiB memory")
    if "init_free_gib" in a:
        lines.append(f"{worker}DEBUG [gpu_worker.py] Initial free memory: "
                     f"{a['init_free_gib']:.2f} GiB; Requested memory: "
                     f"{run['gpu_memory_utilization']:.2f} (util), "
                     f"{a['requested_memory_gib']:.2f} GiB")
    # one profile line per worker, in the order the record lists them (ranks interleave)
    profiles = a.get("per_worker_profile") or [
        {"worker": worker, **{k: a[k] for k in ("total_non_kv_gib", "activation_gib",
                                                 "non_torch_gib", "weights_gib") if k in a}}]
    for p in profiles:
        if not all(k in p for k in ("total_non_kv_gib", "activation_gib", "non_torch_gib")):
            continue
        prefix = p["worker"] if p["worker"].startswith("(") else f"({p['worker']} pid=0) "
        lines.append(f"{prefix}DEBUG [gpu_worker.py] Total non KV cache memory: "
                     f"{p['total_non_kv_gib']:.2f}GiB; torch peak memory increase: "
                     f"{p['activation_gib']:.2f}GiB; non-torch forward increase memory: "
                     f"{p['non_torch_gib']:.2f}GiB; weights memory: {p['weights_gib']:.2f}GiB.")
    lines.append(f"{worker}INFO [gpu_worker.py] Available KV cache memory: "
                 f"{a['kv_cache_gib']:.2f} GiB")
    lines.append(f"{ec}INFO [kv_cache_utils.py] GPU KV cache size: {a['kv_tokens']:,} tokens")
    lines.append(f"{ec}INFO [kv_cache_utils.py] Maximum concurrency for "
                 f"{run['max_model_len']:,} tokens per request: {a['max_concurrency']:.2f}x")
    if "cuda_graph_gib" in a:
        lines.append(f"{worker}INFO [gpu_model_runner.py] Graph capturing finished, took "
                     f"{a['cuda_graph_gib']:.2f} GiB")
    if "cuda_graph_estimated_gib" in a:
        lines.append(f"{worker}INFO [gpu_worker.py] CUDA graph pool memory: "
                     f"{a['cuda_graph_gib']:.2f} GiB (actual), "
                     f"{a['cuda_graph_estimated_gib']:.2f} GiB (estimated)")
    source = (f"# rebuilt from the figures of llm-d-incubation/llm-d-planner@d3121e0 "
              f"{run['log_file']} (runs.json {run['id']})")
    return "\n".join([source, *lines]) + "\n"


def main(source: str, target: str) -> None:
    src, out = Path(source), Path(target)
    out.mkdir(parents=True, exist_ok=True)
    for run in json.loads((src / "runs.json").read_text()):
        (out / f"{run['id']}.log").write_text(_vllm_019(run))
    for record in json.loads((src / "other-engines.json").read_text()):
        quote = record["quote"]
        text = quote if isinstance(quote, str) else "\n".join(quote)
        (out / f"{record['id']}.log").write_text(f"# {record['source']}\n{text}\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
