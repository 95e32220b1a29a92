"""vLLM 0.30 to 0.32: the sparse-MLA cache in nvfp4 (`nvfp4_ds_mla`).

Rules that changed in 0.30, from vLLM's source in the v0.30.0 release; the rest is the
0.29 module's (`vllm_v29.py`):
- `--kv-cache-dtype nvfp4_ds_mla` (a `CacheDType` from v0.30.0, vllm/config/cache.py) keeps
  DeepSeek-V3.2-style sparse MLA in FlashMLA's 352-byte record: 512 NoPE values in e2m1
  (256 B), 64 rope values in fp8 (64 B) and 32 e4m3 scales (32 B)
  (`FlashMLASparseBackend`, vllm/v1/attention/backends/mla/flashmla_sparse.py, its format
  note; `MLAAttention.get_kv_cache_spec`, vllm/model_executor/layers/attention/
  mla_attention.py: `{"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}`), beside the 132-byte
  indexer key, in blocks of 64 (`kinds/packed_mla.py`). Only on compute capability 10.x
  ("FLASHMLA_SPARSE only supports the nvfp4_ds_mla kv-cache dtype on SM100",
  `FlashMLASparseBackend.supports_combination`). Here an nvfp4 cache (`--kv-dtype nvfp4`,
  or `--kv-cache-dtype nvfp4_ds_mla` on a command line) for a sparse-MLA model is that
  record; other MLA models still refuse nvfp4 (`VllmConfig` "nvfp4 KV cache is not
  supported with MLA", vllm/config/vllm.py).
- Not modelled, no figure to check them against: from 0.31 XPU profiles graphs too, and the
  profiling forward runs under a 20 MiB allocator split limit so that the MoE workspace's
  freed segments are not counted as consumed (`Worker.determine_available_memory`,
  `_scoped_allocator_max_split`, vllm/v1/worker/gpu_worker.py, v0.31.0): a fix that returns
  memory to MoE models' KV pools when fragmentation had taken it, which the reserve
  estimate never counted. And from 0.32 the sparse-MLA prefill workspace an fp8_ds_mla or
  nvfp4_ds_mla cache reserves (bf16 rows of the 576-wide latent, `factor × max_model_len`
  of them, in the worker's shared scratch workspace beside the MoE workspace) takes factor 2
  above a max_model_len of 256K tokens instead of 5 (`AttentionConfig.
  sparse_mla_prefill_workspace_factor`, vllm/config/attention.py; `get_prefill_workspace_
  size`, vllm/v1/attention/backends/mla/flashmla_sparse.py, v0.32.0): 2.25 GiB rather than
  5.6 GiB at 1M tokens. No era here counts that workspace; at long contexts a DeepSeek-V3.2
  pool is overstated by it.
The reserve is the 0.19 model's with the graph estimate (`vllm_v21.py`). Six 0.30.0 and
0.31.0 start-ups replayed from their launch (engine-logs-2026 N09, N10, N12-N15; tests/engine/
serving/test_vllm_030_logs.py) miss their pools by −27 % to +12 %: +0.4 % on an A100, the
rest on 8 and 16 GB cards, where a cached or a cold torch.compile moves the printed pool by
1.26 GiB at the same settings and the graph estimate is twice what Model Runner V2 printed.
They are the reserve group's band (`engine/serving/bands.py`).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.vllm_v29 import VllmV29
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec


def packs(spec: ModelSpec, layout: str) -> bool:
    """Whether any of `spec`'s state layers is kept in vLLM's packed record `layout`."""
    from llm_inventory.engine import kinds
    from llm_inventory.engine.model_state import state_layers

    stack = spec.decoder
    return stack is not None and any(
        kinds.get(run.kind).sparse_record(run, stack, layout) is not None
        for run in state_layers(spec))


class VllmV30(VllmV29):
    name = "vllm"
    versions = "0.30 to 0.32 (sparse MLA in nvfp4_ds_mla on compute capability 10.x)"
    version = "0.30"
    label = "vLLM 0.30"
    summary = ("as 0.29, with DeepSeek-V3.2-style sparse MLA kept in the 352-byte "
               "nvfp4_ds_mla record when the cache is nvfp4 (compute capability 10.x)")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("nvfp4 cache of a sparse-MLA model: the nvfp4_ds_mla record (256 B e2m1 NoPE + "
         "64 B fp8 rope + 32 B e4m3 scales) beside the 132 B indexer key, blocks of 64, "
         "compute capability 10.x only",
         "vllm/v1/attention/backends/mla/flashmla_sparse.py FlashMLASparseBackend; "
         "vllm/model_executor/layers/attention/mla_attention.py get_kv_cache_spec "
         "(v0.30.0)"),
        ("not modelled: from 0.31 a 20 MiB allocator split limit in the profiling forward "
         "(MoE workspace fragmentation no longer taken from the pool); XPU graph profiling",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory (v0.31.0)"),
        ("not modelled: the sparse-MLA prefill workspace of an fp8/nvfp4 ds_mla cache "
         "(factor × max_model_len bf16 rows of 576; factor 5, from 0.32 2 above 256K tokens)",
         "vllm/v1/attention/backends/mla/flashmla_sparse.py get_prefill_workspace_size; "
         "vllm/config/attention.py sparse_mla_prefill_workspace_factor (v0.32.0)"),
    ) + VllmV29.rules
    sparse_layouts: ClassVar[dict[str, str]] = {"fp8": "fp8_ds_mla", "nvfp4": "nvfp4_ds_mla"}

    def check_kv_dtype(self, kv_dtype: str, spec: ModelSpec, device: Device) -> None:
        """0.21's check, except that a model whose layers take the packed record
        (`Kind.sparse_record`: sparse MLA) keeps an nvfp4 cache as `nvfp4_ds_mla` on
        compute capability 10.x."""
        if kv_dtype != "nvfp4" or not packs(spec, self.sparse_layouts["nvfp4"]):
            super().check_kv_dtype(kv_dtype, spec, device)
            return
        from llm_inventory.errors import InputError

        capability = str(device.compute_capability or "")
        if capability.split(".")[0] != "10":
            raise InputError("kv_dtype", f"{self.label} keeps a sparse-MLA cache in nvfp4 "
                             "(nvfp4_ds_mla) only on compute capability 10.x (B200, B300, "
                             f"GB200); {device.id} is {capability or 'not a CUDA device'}")


ENGINE = VllmV30()
