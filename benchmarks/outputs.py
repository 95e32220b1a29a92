"""Snapshot every command's output, to show a speed change alters no figure.

    python benchmarks/outputs.py write before/     # on the commit before the change
    python benchmarks/outputs.py compare before/   # after it: exit 1 on any difference

Runs a corpus of commands (every command and its help; JSON, YAML and tables; every preset
through `inventory`, `kv` and `placement`; the large placement searches; several engines) in one
process, as `main()` does, at a pinned width, and stores stdout, stderr and the exit code of
each. One process on purpose: a memo that leaks from one search into the next shows here.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = sorted(
    p.stem for p in (ROOT / "llm_inventory" / "data" / "presets").iterdir()
    if p.suffix in {".json", ".yaml"} and p.stem != "index"
)
FORMATS = ("table", "json", "yaml")


def corpus() -> list[list[str]]:
    runs: list[list[str]] = []
    for fmt in FORMATS:
        runs += [
            ["kv", "--layers", "80", "--tokens", "8000", "--format", fmt],
            ["kv", "--layers", "80", "--tokens", "8000", "--tp", "16", "--format", fmt],
            ["kv", "--layers", "80", "--tp", "3", "--format", fmt],
            ["kv", "--layers", "61", "--tokens", "128K", "--latent", "576", "--tp", "8",
             "--format", fmt],
            ["kv", "--layers", "48", "--tokens", "32k", "--window", "4096", "--sequences", "7",
             "--pp", "3", "--block-size", "16", "--kv-dtype", "fp8", "--format", fmt],
            ["kv", "--layers", "32", "--kv-heads", "4", "--head-dim", "192", "--v-head-dim",
             "128", "--chunk", "8192", "--tokens", "100000", "--units", "si", "--format", fmt],
            ["kv", "--layers", "80", "--tokens", "8000", "--max-bytes", "1GiB", "--format", fmt],
            ["kv", "--model", "gemma-2-9b", "--tokens", "32K", "--block-size", "16",
             "--format", fmt],
            ["kv", "--model", "qwen2.5-vl-7b", "--images", "2", "--image-size", "1344x756",
             "--format", fmt],
            ["compare", "examples/dense-70b.yaml", "examples/moe-8x7b.yaml",
             "examples/vlm-2048.yaml", "--units", "si", "--format", fmt],
            ["placement", "examples/dense-70b.yaml", "--device", "h100-sxm", "--count", "8",
             "--context", "8000", "--units", "si", "--limit", "6", "--format", fmt],
            ["placement", "mixtral-8x7b", "--device", "h100", "--count", "8", "--tp", "1",
             "--ep", "3", "--limit", "2", "--format", fmt],
            ["placement", "qwen3-8b", "--engine", "llamacpp", "--device", "rtx-4090",
             "--count", "1", "--context", "32K", "--dtype", "q4_k_m", "--format", fmt],
            ["placement", "llama-3.1-70b", "--device", "h100", "--count", "16",
             "--engine", "vllm@0.10,vllm@0.19,vllm,sglang,trtllm", "--format", fmt],
            ["placement", "deepseek-v3", "--device", "h200", "--count", "64", "--dtype",
             "fp8", "--sort", "kv", "--format", fmt],
            ["inventory", "mixtral-8x7b", "--batch", "32", "--device", "h100", "--format", fmt],
            ["recommend", "examples/dense-70b.yaml", "--device", "h100", "--isl", "7000",
             "--osl", "1000", "--qps", "2", "--ttft", "2s", "--tpot", "50ms", "--percentile",
             "p95", "--limit", "5", "--format", fmt],
            ["route", "--experts", "8", "--top-k", "2", "--tokens", "16", "--seed", "40603",
             "--ep", "4", "--steps", "200", "--format", fmt],
            ["route", "--model", "deepseek-v3", "--tokens", "64", "--steps", "200",
             "--format", fmt],
            ["sample", "--probs", "A=0.60,B=0.25,C=0.10,D=0.04,E=0.01", "--chain",
             "repetition_penalty=1.3@A,top_p=0.85", "--format", fmt],
            ["devices", "--format", fmt],
            ["devices", "h100-sxm", "--format", fmt],
            ["models", "--format", fmt],
            ["engines", "--format", fmt],
            ["schema", "--format", fmt],
            ["launch", "--device", "h100", "--format", fmt, "--", "vllm", "serve",
             "Qwen/Qwen3-8B", "-tp", "2", "--max-model-len", "32K"],
        ]
    for preset in PRESETS:
        runs += [
            ["inventory", preset, "--format", "json"],
            ["kv", "--model", preset, "--format", "json"],
            ["placement", preset, "--device", "h100", "--count", "8", "--format", "json"],
            ["placement", preset, "--device", "h100", "--count", "8"],
        ]
    commands = ["kv", "inventory", "placement", "recommend", "compare", "launch", "engines",
                "models", "devices", "route", "sample", "schema"]
    runs += [["--help"], ["--version"], *([c, "--help"] for c in commands)]
    deepseek = ["placement", "deepseek-v3", "--device", "h200", "--format", "json"]
    runs += [
        ["placement", "llama-3.1-70b", "--device", "h100", "--count", "8", "--format", "json"],
        [*deepseek, "--count", "1024"],
        [*deepseek, "--count", "16384"],
        ["placement", "deepseek-v3", "--device", "h200", "--count", "1024"],
        ["placement", "kimi-k2.5", "--device", "b200", "--count", "256", "--format", "yaml"],
        # bad input and failed checks: the same one line and exit code
        ["kv", "--layers", "0"],
        ["placement", "no-such-model", "--device", "h100"],
        ["placement", "llama-3.1-405b", "--device", "l4", "--count", "1", "--require-fit"],
    ]
    return runs


def run(argv: list[str]) -> dict[str, object]:
    from llm_inventory.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def snapshot() -> list[dict[str, object]]:
    os.environ.update({"COLUMNS": "100", "NO_COLOR": "1"})
    os.environ.pop("INVENTORY_DEBUG", None)
    os.chdir(ROOT)
    return [run(argv) for argv in corpus()]


def _line(result: dict[str, object]) -> str:
    argv = result["argv"]
    return " ".join(argv) if isinstance(argv, list) else str(argv)


def _key(argv: object) -> str:
    return hashlib.sha256(json.dumps(argv).encode()).hexdigest()[:16]


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in {"write", "compare"}:
        sys.stderr.write(__doc__ or "")
        return 2
    folder = Path(sys.argv[2])
    results = snapshot()
    if sys.argv[1] == "write":
        folder.mkdir(parents=True, exist_ok=True)
        for result in results:
            (folder / f"{_key(result['argv'])}.json").write_text(json.dumps(result))
        sys.stdout.write(f"{len(results)} outputs written to {folder}\n")
        return 0
    differ = 0
    for result in results:
        path = folder / f"{_key(result['argv'])}.json"
        if not path.exists():
            sys.stdout.write(f"new: {_line(result)}\n")
            continue
        if json.loads(path.read_text()) != result:
            differ += 1
            sys.stdout.write(f"DIFFERS: {_line(result)}\n")
    size = sum(len(str(r["stdout"])) for r in results)
    sys.stdout.write(f"{len(results)} outputs ({size:,} characters), {differ} differ\n")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
