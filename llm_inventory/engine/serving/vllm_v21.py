"""vLLM from 0.21: the V1 engine with CUDA-graph memory profiled and subtracted up front.

Rules, each from vLLM's source; the rest is the 0.19 module's (`vllm.py`):
- Budget: KV pool = total × gpu_memory_utilization − weights − non-torch − activation peak −
  the CUDA-graph estimate, which is subtracted when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
  is on, the default since 0.21 (`Worker.determine_available_memory`,
  vllm/v1/worker/gpu_worker.py). So the same `--gpu-memory-utilization` leaves less KV than
  in 0.19, and vLLM prints the equivalence: the current utilization equals (utilization −
  graphs ÷ total) without graph profiling, and (utilization + graphs ÷ total) keeps the old
  KV size, each rounded to 4 decimals and the latter capped at 1.
- The estimate: `vllm_graphs.py` (captured sizes × per-graph memory, from
  `GPUModelRunner.profile_cudagraph_memory`); none with `--enforce-eager`.
- Only on CUDA: 0.21–0.25 profile graphs when `current_platform.is_cuda()` ("Skip on
  ROCm/HIP/XPU as graph pool handles and mem_get_info behave differently", v0.21.0
  `Worker.determine_available_memory`), so an AMD GPU (MI300X, MI325X, MI355X) subtracts no
  graph estimate and prints no graph lines; ROCm joins from 0.26 (`vllm_v26.py`). The
  platform is the device's vendor's (`runtimes.platform`).
- Default gpu_memory_utilization 0.92 (`CacheConfig`, vllm/config/cache.py; 0.21 start-ups
  left at the default print "The current --gpu-memory-utilization=0.9200 …").
- "GPU KV cache size" is ⌊maximum concurrency × max_model_len⌋, no longer blocks ÷ groups ×
  the smallest block (`get_kv_cache_capacity` and `_report_kv_cache_config`,
  vllm/v1/core/kv_cache_utils.py): hybrid models print more tokens than 0.20 for the same
  pool (a public 0.20 → 0.21 report shows ~10× for Gemma 4 at an unchanged KV memory; a
  public 0.24.0 start-up prints 567,978 = ⌊299 ÷ 69 × 131,072⌋).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvCapacity,
    KvLayer,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    StageShape,
    StartupContext,
    StartupReport,
)
from llm_inventory.engine.serving.paged import BlockPool
from llm_inventory.engine.serving.runtimes import platform
from llm_inventory.engine.serving.vllm import MAMBA_CACHE_ALL, VllmV1
from llm_inventory.engine.serving.vllm_graphs import GraphModel, estimate_graphs
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB

# The model types whose vLLM classes declare `SupportsMambaPrefixCaching` (vllm/model_executor/
# models/: falcon_h1, granitemoehybrid, jamba, mamba, mamba2, nemotron_h, zamba2; the same
# set from v0.24.0 to v0.28.0).
MAMBA_PREFIX_CACHING_TYPES = frozenset({"falcon_h1", "granitemoehybrid", "jamba", "mamba",
                                        "mamba2", "nemotron_h", "zamba2"})


class VllmV21(VllmV1):
    name = "vllm"
    versions = "0.21 and later (V1 engine, CUDA graphs profiled up front)"
    version = "0.21"
    label = "vLLM 0.21"
    memory_error_names_device = True  # vllm/v1/worker/utils.py request_memory
    # A reserve model of its own: 0.19's constants plus the CUDA-graph estimate, its band
    # measured on start-ups of the releases that subtract it (engine/serving/bands.py).
    reserve_group = "vllm-graphs"
    calibrated_on = ("vLLM 0.19 start-ups, the CUDA-graph memory on the estimates they "
                     "printed")
    summary = ("KV pool = total × gpu_memory_utilization − weights − non-torch memory − "
               "profiled activation peak − estimated CUDA-graph memory, in blocks of 16 "
               "tokens; the smallest worker binds")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("budget: total × gpu_memory_utilization − weights − non-torch − activation peak − "
         "CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 by default)",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory"),
        ("prints the equivalent utilization without graph profiling (u − graphs ÷ total) "
         "and the one that keeps the old KV size (u + graphs ÷ total)",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory"),
        ("CUDA-graph estimate: largest first capture + (graphs − 1) × per-graph memory per "
         "mode (estimate: per-graph memory fitted on 0.19's printed estimates)",
         "vllm/v1/worker/gpu_model_runner.py GPUModelRunner.profile_cudagraph_memory"),
        ("captured sizes 1, 2, 4, 8 … 248, 256 … up to min(2 × max_num_seqs, 512); FULL "
         "graphs up to max_num_seqs", "vllm/config/vllm.py VllmConfig._set_cudagraph_sizes"),
        ("no graphs with --enforce-eager", "vllm/config/compilation.py CompilationConfig"),
        ("graphs profiled on CUDA only: no estimate on ROCm (AMD GPUs) up to 0.25",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory "
         "(current_platform.is_cuda(), v0.21.0–v0.25.1)"),
        ("default gpu_memory_utilization 0.92", "vllm/config/cache.py CacheConfig"),
        ("--max-model-len auto: the model's length, or the longest context the KV pool "
         "holds when one request at it does not fit (vllm#29431)",
         "vllm/v1/core/kv_cache_utils.py estimate_max_model_len, check_enough_kv_cache_memory"),
        ("--kv-cache-dtype nvfp4: e2m1 values and an e4m3 scale a 16, head_size ÷ 2 + "
         "head_size ÷ 16 bytes a head, on compute capability 10.x, not for MLA (vllm#40177)",
         "vllm/v1/attention/backends/flashinfer.py FlashInferBackend.supports_kv_cache_dtype"),
        ("printed KV tokens: ⌊maximum concurrency × max_model_len⌋",
         "vllm/v1/core/kv_cache_utils.py get_kv_cache_capacity, _report_kv_cache_config"),
    ) + tuple(rule for rule in VllmV1.rules[1:]
              if not rule[0].startswith("default gpu_memory_utilization"))

    def __init__(self, graphs: GraphModel | None = None) -> None:
        super().__init__()
        self.graph_model = graphs or GraphModel()

    engine_flags: ClassVar[tuple[str, ...]] = ("enforce_eager", "enable_prefix_caching",
                                               "max_model_len_auto")
    default_utilization: ClassVar[float] = 0.92
    #: the platforms whose workers profile CUDA graphs before sizing the pool
    #: (`Worker.determine_available_memory`: `current_platform.is_cuda()` up to 0.25)
    graph_platforms: ClassVar[frozenset[str]] = frozenset({"cuda"})
    platform_flag: ClassVar[str] = "platform"

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        """0.19's settings, and the device's platform when it is not CUDA
        (`runtimes.platform`), which decides whether graphs are profiled."""
        found = super().settings(device, asked)
        runs_on = platform(device)
        if runs_on == "cuda":
            return found
        return found.model_copy(update={"flags": {**found.flags,
                                                  self.platform_flag: runs_on}})

    def profiles_graphs(self, settings: EngineSettings) -> bool:
        """Whether this release's worker profiles (and subtracts) CUDA graphs on the
        device's platform."""
        return str(settings.flags.get(self.platform_flag, "cuda")) in self.graph_platforms

    def model_settings(self, settings: EngineSettings, spec: ModelSpec) -> EngineSettings:
        """With prefix caching, the classes that declare `SupportsMambaPrefixCaching` keep
        their state in mode "all", a state at every block (`MambaModelConfig
        .verify_and_update_config`, vllm/model_executor/models/config.py, v0.21.0-v0.27.1:
        "all" if model_config.supports_mamba_prefix_caching else "align")."""
        if (spec.model_type in MAMBA_PREFIX_CACHING_TYPES
                and settings.flags.get("enable_prefix_caching")):
            return settings.model_copy(update={"flags": {**settings.flags,
                                                         MAMBA_CACHE_ALL: True}})
        return settings

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        """0.19's pool, its token count printed as ⌊maximum concurrency × max_model_len⌋
        (`get_kv_cache_capacity`, called by `_report_kv_cache_config`,
        vllm/v1/core/kv_cache_utils.py): for a model of one attention kind the same as
        blocks × block size at a max_model_len that is a multiple of the block."""
        layout = super().pool_layout(layers, settings)
        if isinstance(layout, BlockPool):
            return replace(layout, tokens_from_concurrency=True)
        return layout

    def check_kv_dtype(self, kv_dtype: str, spec: ModelSpec, device: Device) -> None:
        """`--kv-cache-dtype nvfp4` (vllm#40177, from the 0.21 era): e2m1 values and an e4m3
        scale a 16, packed per head (head_size ÷ 2 + head_size ÷ 16 bytes), through
        FlashInfer's trtllm-gen kernels on compute capability 10.x only
        (`FlashInferBackend.supports_kv_cache_dtype`, vllm/v1/attention/backends/
        flashinfer.py); MLA backends refuse it, and the sparse-MLA record `nvfp4_ds_mla`
        comes with 0.30 (`vllm_v30.py`)."""
        if kv_dtype != "nvfp4":
            super().check_kv_dtype(kv_dtype, spec, device)
            return
        from llm_inventory.errors import InputError

        if spec.decoder is not None and spec.decoder.mla is not None:
            raise InputError("kv_dtype", f"{self.label} keeps no MLA cache in nvfp4 (MLA "
                             "backends refuse it; the sparse-MLA record nvfp4_ds_mla comes "
                             "with 0.30); use bf16 or fp8")
        capability = str(device.compute_capability or "")
        if capability.split(".")[0] != "10":
            raise InputError("kv_dtype", f"{self.label} keeps an nvfp4 cache only on compute "
                             f"capability 10.x (B200, B300, GB200); {device.id} is "
                             f"{capability or 'not a CUDA device'}")

    def max_graph_size(self, settings: EngineSettings) -> int:
        """The largest batch captured as a CUDA graph (`VllmConfig._set_cudagraph_sizes`):
        512 up to 0.27."""
        return 512

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """0.19's reserve plus the CUDA-graph estimate (both estimates)."""
        base = super().reserve(shape, settings)
        if settings.flags.get("enforce_eager") or not shape.has_layers \
                or not self.profiles_graphs(settings):
            return base
        graphs = estimate_graphs(
            self.graph_model, max_num_seqs=settings.max_num_seqs,
            max_num_batched_tokens=settings.max_num_batched_tokens, layers=shape.layers,
            widest_per_token=shape.widest_per_token, activation_bits=shape.activation_bits,
            max_graph_size=self.max_graph_size(settings))
        return base.model_copy(update={"cuda_graph_bytes": graphs.bytes,
                                       "reserve_bytes": base.reserve_bytes + graphs.bytes})

    def context_fallback(self, capacity: KvCapacity, settings: EngineSettings) -> str | None:
        """`--max-model-len auto` (vllm#29431): instead of stopping when one request at the
        model's length does not fit, max_model_len becomes the longest context the pool
        holds (`estimate_max_model_len`, vllm/v1/core/kv_cache_utils.py)."""
        if not settings.flags.get("max_model_len_auto") or capacity.max_concurrency >= 1 \
                or not capacity.longest_context:
            return None
        return (f"--max-model-len auto: max_model_len becomes {capacity.longest_context:,}, "
                "the longest context the KV pool holds")

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """0.19's error, except that `--max-model-len auto` starts at the longest context
        the pool holds when there is one."""
        if self.context_fallback(capacity, settings) is not None and pool_bytes > 0:
            return None
        return super().startup_error(capacity, pool_bytes, settings)

    def startup(self, capacity: KvCapacity, pool_bytes: int, settings: EngineSettings,
                context: StartupContext) -> StartupReport:
        """`determine_available_memory`'s lines, the graph equivalence among them."""
        lines = self.startup_lines(capacity, pool_bytes, settings)
        graphs = context.reserve.cuda_graph_bytes
        if graphs > 0:
            util = settings.memory_fraction
            delta = graphs / context.device.memory_bytes
            lines[1:1] = [
                f"CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                f"--gpu-memory-utilization={util:.4f} is equivalent to "
                f"--gpu-memory-utilization={round(util - delta, 4):.4f} without CUDA graph "
                "memory profiling. To maintain the same effective KV cache size as before, "
                f"increase --gpu-memory-utilization to {min(round(util + delta, 4), 1.0):.4f}. "
                "To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.",
            ]
            lines.insert(0, f"Estimated CUDA graph memory: {graphs / GIB:.2f} GiB total")
        return StartupReport(lines=lines,
                             error=self.startup_error(capacity, pool_bytes, settings))


ENGINE = VllmV21()
