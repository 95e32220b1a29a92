"""vLLM 0.26 and 0.27: Model Runner V2 profiles its CUDA graphs; the 0.21 accounting again.

- From 0.26.0 the V2 runner's `profile_cudagraph_memory` captures and measures graphs
  instead of returning 0 (a 0.26.0 A/B on Qwen2.5-0.5B shows MRv2 reserving ~0.10 GiB where
  the V1 runner reserves ~0.21 GiB: vllm#50159), so every model's pool again loses a
  CUDA-graph estimate; this era uses 0.21's estimate for both runners (an estimate: no
  MRv2 start-up with every figure printed was found to fit its own).
- Not modelled: on hybrid Gated-DeltaNet models 0.26's profiler also charges a profiling
  transient of about 128 KiB per batched context token as graph memory (vllm#50780:
  0.56 → 4.2 GiB, the pool 18–24 % smaller than on 0.23 for Qwen3.5-122B-A10B); this era
  undercounts that reserve, which `inventory engines vllm@0.26` states.
- ROCm profiles graphs too from 0.26.0 (`current_platform.is_cuda_alike()` in
  `Worker.determine_available_memory`, vllm/v1/worker/gpu_worker.py; vllm#44825 moved the
  profiler to `torch.accelerator.get_memory_info`, reliable on ROCm): an AMD GPU's pool loses
  the graph estimate as a CUDA GPU's does (up to 0.25 it lost none).
The reserve is the 0.19 model's with the graph estimate (`vllm_v21.py`, reserve group
"vllm-graphs"); no start-up of this era with its weights, reserve and pool all printed and a
known config was found, so its band is the group's, extrapolated (`engine/serving/bands.py`).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.vllm_v21 import VllmV21

GRAPH_RULE = "graphs profiled on CUDA only"


class VllmV26(VllmV21):
    name = "vllm"
    versions = "0.26 to 0.27 (CUDA graphs profiled again by both model runners)"
    version = "0.26"
    label = "vLLM 0.26"
    summary = ("as 0.21: the CUDA-graph estimate subtracted for every model again (Model "
               "Runner V2 profiles its graphs)")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("Model Runner V2 profiles its CUDA graphs; the estimate is subtracted for dense "
         "models again (0.21's estimate used for both runners)",
         "vllm/v1/worker/gpu/model_runner.py GPUModelRunner.profile_cudagraph_memory "
         "(0.26.0; vllm#50159)"),
        ("not modelled: hybrid GDN models' profiling transient (~128 KiB per batched context "
         "token) charged as graph memory, the pool 18–24 % below 0.23's",
         "vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory (vllm#50780)"),
        ("graphs profiled on CUDA and ROCm: AMD GPUs lose the graph estimate too",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory "
         "(current_platform.is_cuda_alike(), v0.26.0; vllm#44825)"),
    ) + tuple(rule for rule in VllmV21.rules if not rule[0].startswith(GRAPH_RULE))
    graph_platforms: ClassVar[frozenset[str]] = frozenset({"cuda", "rocm"})


ENGINE = VllmV26()
