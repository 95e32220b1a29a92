"""TensorRT-LLM's launch line (`trtllm-serve`, tensorrt_llm/commands/serve.py options).

--tp_size, --pp_size, --ep_size, --max_seq_len, --max_batch_size, --max_num_tokens,
--kv_cache_free_gpu_memory_fraction. What `trtllm-serve` takes only from its
--extra_llm_api_options YAML gets no line: attention DP (`enable_attention_dp`), a KV
cache dtype (`kv_cache_config.dtype`), speculative decoding (`speculative_config`) and a
disaggregated pair (`trtllm-serve
disaggregated -c` with `cache_transceiver_config`); a line without them would start a
different plan. Nor does LoRA (its `lora_config`, not modelled here).
"""

from __future__ import annotations

from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan


def write(p: LaunchPlan) -> list[LaunchLine]:
    if p.attention_dp > 1 or p.kv_dtype or p.disaggregation or p.quantization or (
            p.speculative is not None) or p.lora is not None:  # speculative_config: the YAML
        return []
    args = ["trtllm-serve", p.model, "--tp_size", str(p.tp)]
    if p.pp > 1:
        args += ["--pp_size", str(p.pp)]
    if p.ep > 1:
        args += ["--ep_size", str(p.ep)]
    args += ["--max_seq_len", str(p.context)]
    if p.max_num_seqs is not None:
        args += ["--max_batch_size", str(p.max_num_seqs)]
    args += ["--max_num_tokens", str(p.max_num_batched_tokens)]
    if p.memory_fraction is not None:
        args += ["--kv_cache_free_gpu_memory_fraction", f"{p.memory_fraction:g}"]
    return [LaunchLine("serve", args)]
