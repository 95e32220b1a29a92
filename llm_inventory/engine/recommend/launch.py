"""The launch command that realises a plan, in each engine's own flags.

Flags by engine (each engine's documented server options): vLLM `vllm serve`
(--tensor-parallel-size, --pipeline-parallel-size, --data-parallel-size,
--enable-expert-parallel, --max-model-len, --gpu-memory-utilization, --max-num-seqs,
--max-num-batched-tokens, --kv-cache-dtype, --quantization); SGLang
`python -m sglang.launch_server` (--tp-size, --pp-size, --ep-size, --dp-size,
--context-length, --mem-fraction-static, --max-running-requests, --chunked-prefill-size,
--kv-cache-dtype); TensorRT-LLM `trtllm-serve` (--tp_size, --pp_size, --ep_size,
--max_seq_len, --max_batch_size, --max_num_tokens, --kv_cache_free_gpu_memory_fraction);
llama.cpp `llama-server` (--ctx-size over --parallel slots, --n-gpu-layers; layers split
over the GPUs, its default, since its row split is not modelled). The memory flag is the
planned engine's alone: the engines' fractions mean different things (vLLM's of the total,
SGLang's of free memory for weights and KV, TensorRT-LLM's of what the weights leave), so
the other engines' commands keep their own default. An engine without a formatter here gets
no command (None).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchPlan:
    """What a launch command has to say."""

    model: str
    tp: int
    pp: int
    ep: int
    context: int
    memory_fraction: float | None  # None: the engine's own default
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_dtype: str | None  # None: the model's own
    quantization: str | None  # None: the checkpoint as stored


def _vllm(p: LaunchPlan) -> list[str]:
    args = ["vllm", "serve", p.model, "--tensor-parallel-size", str(p.tp)]
    if p.pp > 1:
        args += ["--pipeline-parallel-size", str(p.pp)]
    if p.ep > 1:
        if p.ep > p.tp:
            args += ["--data-parallel-size", str(p.ep // p.tp)]
        args += ["--enable-expert-parallel"]
    args += ["--max-model-len", str(p.context)]
    if p.memory_fraction is not None:
        args += ["--gpu-memory-utilization", f"{p.memory_fraction:g}"]
    args += ["--max-num-seqs", str(p.max_num_seqs),
             "--max-num-batched-tokens", str(p.max_num_batched_tokens)]
    if p.kv_dtype:
        args += ["--kv-cache-dtype", p.kv_dtype]
    if p.quantization:
        args += ["--quantization", p.quantization]
    return args


def _sglang(p: LaunchPlan) -> list[str]:
    args = ["python", "-m", "sglang.launch_server", "--model-path", p.model,
            "--tp-size", str(p.tp)]
    if p.pp > 1:
        args += ["--pp-size", str(p.pp)]
    if p.ep > 1:
        args += ["--ep-size", str(p.ep)]
        if p.ep > p.tp:
            args += ["--dp-size", str(p.ep // p.tp), "--enable-dp-attention"]
    args += ["--context-length", str(p.context)]
    if p.memory_fraction is not None:
        args += ["--mem-fraction-static", f"{p.memory_fraction:g}"]
    args += ["--max-running-requests", str(p.max_num_seqs),
             "--chunked-prefill-size", str(p.max_num_batched_tokens)]
    if p.kv_dtype:
        args += ["--kv-cache-dtype", "fp8_e4m3" if p.kv_dtype.startswith("fp8") else p.kv_dtype]
    if p.quantization:
        args += ["--quantization", p.quantization]
    return args


def _trtllm(p: LaunchPlan) -> list[str]:
    args = ["trtllm-serve", p.model, "--tp_size", str(p.tp)]
    if p.pp > 1:
        args += ["--pp_size", str(p.pp)]
    if p.ep > 1:
        args += ["--ep_size", str(p.ep)]
    args += ["--max_seq_len", str(p.context), "--max_batch_size", str(p.max_num_seqs),
             "--max_num_tokens", str(p.max_num_batched_tokens)]
    if p.memory_fraction is not None:
        args += ["--kv_cache_free_gpu_memory_fraction", f"{p.memory_fraction:g}"]
    return args


def _llamacpp(p: LaunchPlan) -> list[str]:
    # llama.cpp splits --ctx-size evenly over its --parallel slots
    return ["llama-server", "-m", p.model, "--ctx-size", str(p.context * p.max_num_seqs),
            "--parallel", str(p.max_num_seqs), "--n-gpu-layers", "999",
            "--batch-size", str(p.max_num_batched_tokens)]


FORMATTERS: dict[str, Callable[[LaunchPlan], list[str]]] = {
    "vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm, "llamacpp": _llamacpp,
}


def launch_command(engine: str, plan: LaunchPlan) -> str | None:
    """The command line for `engine` (its registry name), shell-quoted; None when no
    formatter knows the engine."""
    formatter = FORMATTERS.get(engine)
    return shlex.join(formatter(plan)) if formatter is not None else None
