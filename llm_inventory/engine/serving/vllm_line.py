"""vLLM's launch lines (`vllm serve`, vllm/engine/arg_utils.py EngineArgs.add_cli_args).

- The split: --tensor-parallel-size, --pipeline-parallel-size; an EP group wider than TP is
  --data-parallel-size (EP group ÷ TP) with --enable-expert-parallel, the experts spread
  over TP × DP ranks (vllm/config/parallel.py); each DP rank is its own engine core with
  its own scheduler, so --max-num-seqs and --max-num-batched-tokens stay per rank.
- A prefill/decode plan: two servers with `--kv-transfer-config` naming the NIXL connector
  in the `kv_both` role (docs/features/nixl_connector_usage.md), the second pool on the
  next devices, and `vllm-router --vllm-pd-disaggregation` in front (vllm-project/router).
"""

from __future__ import annotations

from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan, visible_devices

PREFILL_PORT, DECODE_PORT, ROUTER_PORT = 8100, 8200, 8000
KV_TRANSFER = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def server_argv(p: LaunchPlan) -> list[str]:
    args = ["vllm", "serve", p.model, "--tensor-parallel-size", str(p.tp)]
    if p.pp > 1:
        args += ["--pipeline-parallel-size", str(p.pp)]
    if p.ep > 1:
        if p.attention_dp > 1:
            args += ["--data-parallel-size", str(p.attention_dp)]
        args += ["--enable-expert-parallel"]
    args += ["--max-model-len", str(p.context)]
    if p.memory_fraction is not None:
        args += ["--gpu-memory-utilization", f"{p.memory_fraction:g}"]
    if p.max_num_seqs is not None:
        args += ["--max-num-seqs", str(p.max_num_seqs)]
    args += ["--max-num-batched-tokens", str(p.max_num_batched_tokens)]
    if p.kv_dtype:  # its choices spell bf16 out (arg_utils CacheDType)
        args += ["--kv-cache-dtype", "bfloat16" if p.kv_dtype == "bf16" else p.kv_dtype]
    if p.quantization:
        args += ["--quantization", p.quantization]
    if p.speculative is not None:  # engine/serving/speculative_launch.py
        from llm_inventory.engine.serving.speculative_launch import vllm_args

        args += vllm_args(p.speculative)
    from llm_inventory.engine.serving.feature_flags import VLLM, feature_args

    return [*args, *feature_args(VLLM, p.lora, p.multimodal), *p.offload]


def write(p: LaunchPlan) -> list[LaunchLine]:
    base = server_argv(p)
    if p.disaggregation != "prefill/decode":
        return [LaunchLine("serve", base)]
    n = p.devices
    pools = [("prefill", PREFILL_PORT, 0), ("decode", DECODE_PORT, n)]
    lines = [LaunchLine(role, [*base, "--port", str(port), "--kv-transfer-config",
                               KV_TRANSFER], visible_devices(start, n))
             for role, port, start in pools]
    lines.append(LaunchLine("router", [
        "vllm-router", "--vllm-pd-disaggregation", "--port", str(ROUTER_PORT),
        "--prefill", f"http://127.0.0.1:{PREFILL_PORT}",
        "--decode", f"http://127.0.0.1:{DECODE_PORT}"]))
    return lines
