"""vLLM 0.25.1 to 0.25.x: dense models on Model Runner V2, which reserves no CUDA-graph memory.

The change, from vLLM's source and the reports that traced it:
- Model Runner V2 became the default for dense models in 0.25.1 (`VllmConfig.
  use_v2_model_runner` → `_is_default_v2_model_runner_model`, vllm/config/vllm.py; Qwen3
  dense models from 0.24), and its `profile_cudagraph_memory` (vllm/v1/worker/gpu/
  model_runner.py) was a placeholder returning 0 (vllm#36520). `Worker.
  determine_available_memory` subtracts that 0, so a dense model's KV pool takes the whole
  budget that 0.21–0.24 shared with the graph estimate: a Llama-3.1-70B FP8 TP8 start-up
  that reserved ≈ 9.5 GiB for graphs on 0.23 reserves none on 0.25.1 (vllm#49224, whose
  start-up then ran out of memory capturing the graphs).
- "Dense" here: no routed experts and no fixed-size (Mamba, linear-attention) state; MoE
  and hybrid models stay on the V1 runner and its estimate (`vllm_v21.py`).
- From 0.26 the V2 runner profiles its graphs again (`vllm_v26.py`).
The reserve is the 0.19 model's with the graph estimate (`vllm_v21.py`, reserve group
"vllm-graphs"); no start-up of this era with its weights, reserve and pool all printed and a
known config was found, so its band is the group's, extrapolated (`engine/serving/bands.py`).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.base import EngineSettings, ReserveEstimate, StageShape
from llm_inventory.engine.serving.vllm_v21 import VllmV21


def runs_on_v2(shape: StageShape) -> bool:
    """Whether vLLM 0.25 picks Model Runner V2 for this model: a dense one (no routed
    experts, no fixed-size state)."""
    return not shape.moe_workspace_per_token and not shape.fixed_state


class VllmV25(VllmV21):
    name = "vllm"
    versions = "0.25.1 to 0.25.x (dense models on Model Runner V2: no CUDA-graph reserve)"
    version = "0.25.1"
    label = "vLLM 0.25.1"
    summary = ("as 0.21, except that dense models run on Model Runner V2, whose CUDA-graph "
               "estimate is 0: their KV pool takes the graphs' share too")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("dense models (no routed experts, no Mamba or linear-attention state) run on Model "
         "Runner V2 by default",
         "vllm/config/vllm.py VllmConfig.use_v2_model_runner, "
         "_is_default_v2_model_runner_model (0.25.1)"),
        ("Model Runner V2's CUDA-graph estimate is 0, so nothing is subtracted for graphs "
         "(vllm#49224: ≈ 9.5 GiB on 0.23, 0 on 0.25.1 for Llama-3.1-70B FP8 TP8)",
         "vllm/v1/worker/gpu/model_runner.py GPUModelRunner.profile_cudagraph_memory "
         "(placeholder, vllm#36520)"),
    ) + VllmV21.rules

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """0.21's reserve; without the CUDA-graph estimate for models on Model Runner V2."""
        found = super().reserve(shape, settings)
        if not runs_on_v2(shape) or not found.cuda_graph_bytes:
            return found
        return found.model_copy(update={
            "reserve_bytes": found.reserve_bytes - found.cuda_graph_bytes,
            "cuda_graph_bytes": 0})


ENGINE = VllmV25()
