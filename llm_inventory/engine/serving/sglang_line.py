"""SGLang's launch lines (`python -m sglang.launch_server`, srt/server_args.py).

- The split: --tp-size is every device of a stage (the world of one instance);
  --pp-size the stages; --ep-size the experts' group. Attention DP inside an EP group is
  --dp-size D with --enable-dp-attention: D attention ranks of tp-size ÷ D devices each,
  still tp-size devices in all (`_handle_data_parallelism` asserts tp_size % dp_size == 0).
- Under DP attention SGLang divides --chunked-prefill-size by dp_size
  (`_handle_data_parallelism`) and --max-running-requests by dp_size per worker
  (scheduler / pool configurator, `max_running_requests // dp_size`): the line asks for
  the per-rank figures times D.
- A prefill/decode plan: --disaggregation-mode prefill | decode on two servers, the second
  pool on the next devices, and `python -m sglang_router.launch_router --pd-disaggregation`
  in front (docs/advanced_features/pd_disaggregation.md).
"""

from __future__ import annotations

from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan, visible_devices

PREFILL_PORT, DECODE_PORT, ROUTER_PORT = 30000, 30001, 8000


def kv_word(dtype: str) -> str:
    """SGLang's --kv-cache-dtype word for a KV dtype (fp8 means e4m3)."""
    return "fp8_e4m3" if dtype == "fp8" else dtype


def server_argv(p: LaunchPlan) -> list[str]:
    dp = p.attention_dp
    args = ["python", "-m", "sglang.launch_server", "--model-path", p.model,
            "--tp-size", str(p.ep if p.ep > p.tp else p.tp)]
    if p.pp > 1:
        args += ["--pp-size", str(p.pp)]
    if p.ep > 1:
        args += ["--ep-size", str(p.ep)]
    if dp > 1:
        args += ["--dp-size", str(dp), "--enable-dp-attention"]
    args += ["--context-length", str(p.context)]
    if p.memory_fraction is not None:
        args += ["--mem-fraction-static", f"{p.memory_fraction:g}"]
    if p.max_num_seqs is not None:
        args += ["--max-running-requests", str(p.max_num_seqs * dp)]
    args += ["--chunked-prefill-size", str(p.max_num_batched_tokens * dp)]
    if p.kv_dtype:
        args += ["--kv-cache-dtype", kv_word(p.kv_dtype)]
    if p.quantization:
        args += ["--quantization", p.quantization]
    if p.speculative is not None:  # engine/serving/speculative_launch.py
        from llm_inventory.engine.serving.speculative_launch import sglang_args

        args += sglang_args(p.speculative)
    from llm_inventory.engine.serving.feature_flags import SGLANG, feature_args

    return [*args, *feature_args(SGLANG, p.lora, p.multimodal), *p.offload]


def write(p: LaunchPlan) -> list[LaunchLine]:
    base = server_argv(p)
    if p.disaggregation != "prefill/decode":
        return [LaunchLine("serve", base)]
    n = p.devices
    pools = [("prefill", PREFILL_PORT, 0), ("decode", DECODE_PORT, n)]
    lines = [LaunchLine(role, [*base, "--port", str(port), "--disaggregation-mode", role],
                        visible_devices(start, n))
             for role, port, start in pools]
    lines.append(LaunchLine("router", [
        "python", "-m", "sglang_router.launch_router", "--pd-disaggregation",
        "--prefill", f"http://127.0.0.1:{PREFILL_PORT}",
        "--decode", f"http://127.0.0.1:{DECODE_PORT}", "--port", str(ROUTER_PORT)]))
    return lines
