"""vLLM from 0.28: 0.21's accounting, with larger defaults on the largest GPUs.

Rules that changed in 0.28, each from vLLM's source at the v0.28.0 tag; the rest is the
0.26 module's (`vllm_v26.py`, itself 0.21's):
- Batch defaults (`EngineArgs.get_batch_defaults`, vllm/engine/arg_utils.py; added by
  vllm#51726, first tagged in v0.28.0, absent from v0.27.1): a device of 160 GiB or more
  (`device_memory >= 160 * GiB_bytes`, the raw capacity, so AMD MI300X and MI325X fall in
  it too: vllm#53961) takes max_num_batched_tokens 16384 and max_num_seqs 1024 for the
  OpenAI API server, twice 0.27's 8192; the ≥ 70 GiB tier (A100 excepted) keeps 8192 and
  1024, smaller devices 2048 and 256. The profiling forward runs max_num_batched_tokens
  tokens, so on those devices the activation peak grows with it and the KV pool shrinks.
- CUDA-graph capture sizes (`VllmConfig._set_cudagraph_sizes`, vllm/config/vllm.py;
  vllm#49390, first tagged in v0.28.0): the largest captured batch is 1024 on Blackwell
  (compute capability family 10.x), 512 elsewhere; still at most 2 × max_num_seqs and
  max_num_batched_tokens.
- Prefix caching is on by default for hybrid models too (`ModelConfig
  .is_prefix_caching_supported` answers true for them, and `EngineArgs
  ._set_default_chunked_prefill_and_prefix_caching_args` defaults to it; vllm#50991, first
  tagged in v0.28.0; 0.26 and 0.27 left hybrids off, 0.24 and 0.25 did not support it), so
  their state groups keep two blocks per request in mode "align" unless the launch says
  `--no-enable-prefix-caching`.
The reserve stays the estimate the 0.21 module describes: no 0.28 start-up with a known
model config and every figure printed was found to calibrate it on (tests/engine/serving/
test_vllm_v28.py replays what was found).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.base import EngineSettings, LaunchSettings
from llm_inventory.engine.serving.vllm_v26 import VllmV26
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB

TIER_BYTES = 160 * GIB  # `get_batch_defaults`: the top tier's device memory


class VllmV28(VllmV26):
    name = "vllm"
    versions = "0.28 (≥ 160 GiB tier of batch defaults, 1024-batch graphs on Blackwell)"
    version = "0.28"
    label = "vLLM 0.28"
    summary = ("as 0.21, with max_num_batched_tokens 16384 by default on devices of "
               "160 GiB or more and CUDA graphs up to batch 1024 on Blackwell")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("defaults on devices of ≥ 160 GiB (raw capacity, AMD included): "
         "max_num_batched_tokens 16384, max_num_seqs 1024; ≥ 70 GiB (not A100): 8192 and "
         "1024; else 2048 and 256",
         "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (v0.28.0, vllm#51726)"),
        ("largest CUDA-graph batch 1024 on compute capability 10.x, else 512",
         "vllm/config/vllm.py VllmConfig._set_cudagraph_sizes (v0.28.0, vllm#49390)"),
        ("prefix caching on by default, hybrid models included (their state cached in "
         "mode align: two blocks per request and state group)",
         "vllm/engine/arg_utils.py EngineArgs._set_default_chunked_prefill_and_prefix_"
         "caching_args, vllm/config/model.py ModelConfig.is_prefix_caching_supported "
         "(v0.28.0, vllm#50991)"),
    ) + tuple(rule for rule in VllmV26.rules
              if not rule[0].startswith(("captured sizes", "defaults: 8192")))
    blackwell: ClassVar[str] = "blackwell_graphs"

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        """0.21's settings, the batch defaults of `get_batch_defaults`' top tier on
        devices of 160 GiB or more, prefix caching on unless asked off, and whether the
        device is a Blackwell (10.x) part."""
        found = super().settings(device, asked)
        update: dict[str, object] = {}
        if device.memory_bytes >= TIER_BYTES:
            if asked.max_num_batched_tokens is None:
                update["max_num_batched_tokens"] = 16384
            if asked.max_num_seqs is None:
                update["max_num_seqs"] = 1024
        flags = dict(found.flags)
        if "enable_prefix_caching" not in asked.flags:  # on unless the launch turns it off
            flags["enable_prefix_caching"] = True
        capability = device.compute_capability
        if capability is not None and str(capability).split(".")[0] == "10":
            flags[self.blackwell] = True
        update["flags"] = flags
        return found.model_copy(update=update)

    def model_settings(self, settings: EngineSettings, spec: ModelSpec) -> EngineSettings:
        """No class keeps its state at every block by default: prefix caching turns mode
        "none" into "align" whatever the class (`MambaModelConfig.verify_and_update_config`,
        v0.28.0)."""
        return settings

    def max_graph_size(self, settings: EngineSettings) -> int:
        return 1024 if settings.flags.get(self.blackwell) else 512


ENGINE = VllmV28()
