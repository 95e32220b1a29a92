"""llama.cpp's launch line (`llama-server`, common/arg.cpp).

-m FILE.gguf (or -hf REPO for a Hub id); --ctx-size is the context times the --parallel
slots (each slot holds ctx ÷ parallel cells without --kv-unified), or the context alone
when the slot count is its own (llama-server then unifies the cache); -ngl the layers on the
GPUs (999: all); --n-cpu-moe the first layers whose experts stay in host memory; -nkvo
every layer's caches in host memory; more than
one GPU is a layer split (`-sm layer`, the default) with -ts giving each an even share;
--batch-size the logical batch; -ctk/-ctv the cache types (q8_0, q4_0, … or f16).
No prefill/decode split: llama-server has none.
"""

from __future__ import annotations

from llm_inventory.engine.serving.ggml_types import KV_CACHE_TYPES
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan

ALL_LAYERS = 999


# the tool's dtype words as llama.cpp spells its cache types
_WORDS = {"fp16": "f16", "bf16": "bf16", "fp32": "f32"}


def write(p: LaunchPlan) -> list[LaunchLine]:
    kv = _WORDS.get(p.kv_dtype, p.kv_dtype) if p.kv_dtype else None
    if p.disaggregation or p.tp > 1 or p.ep > 1 or (kv and kv not in KV_CACHE_TYPES):
        return []  # no such split, or a cache type it has not (fp8)
    args = ["llama-server", "-m" if p.gguf else "-hf", p.model]
    if p.max_num_seqs is None:  # its own slot count over one shared (unified) cache
        args += ["--ctx-size", str(p.context)]
    else:
        args += ["--ctx-size", str(p.context * p.max_num_seqs),
                 "--parallel", str(p.max_num_seqs)]
    args += ["-ngl", str(ALL_LAYERS if p.n_gpu_layers is None else p.n_gpu_layers)]
    if p.n_cpu_moe:
        args += ["--n-cpu-moe", str(p.n_cpu_moe)]
    if p.no_kv_offload:
        args.append("-nkvo")
    if p.pp > 1:
        args += ["-ts", ",".join("1" for _ in range(p.pp))]
    args += ["--batch-size", str(p.max_num_batched_tokens)]
    if kv:
        # a quantized V cache needs flash attention (llama_init_from_model refuses it)
        args += ["-ctk", kv, "-ctv", kv, "-fa", "on"]
    if p.speculative is not None:  # engine/serving/speculative_launch.py
        from llm_inventory.engine.serving.speculative_launch import llamacpp_args

        draft = llamacpp_args(p.speculative)
        if not draft:
            return []  # llama-server drafts with a draft model only
        args += draft
    if p.lora is not None:
        if not p.lora.adapters or len(p.lora.adapters) != len(p.lora.adapter_bytes):
            return []  # adapters sized by a rank, not files: --lora names files only
        from llm_inventory.engine.serving.feature_flags import LLAMACPP, feature_args

        args += feature_args(LLAMACPP, p.lora, None)
    return [LaunchLine("serve", args)]
