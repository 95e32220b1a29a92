"""vLLM's runtime reserve: memory it holds beyond weights and the KV pool. An estimate.

Modelled on vLLM's start-up accounting (0.19; `Worker.determine_available_memory`,
vllm/v1/worker/gpu_worker.py): the KV pool is what is left of
`total × gpu_memory_utilization` after the weights, the non-torch memory, and the peak of a
profiling forward pass over `max_num_batched_tokens` tokens followed by a sampler pass over
`max_num_seqs` rows. The mechanisms and the fitted constants:

- Non-torch memory (CUDA context, cuBLAS workspaces, NCCL/custom all-reduce buffers):
  a constant per worker, larger once tensor parallelism adds communication buffers.
- Forward peak: activations of the widest layer for every token of the profiling batch,
  bytes per token ∝ the layer's widest intermediate widths on one rank (MLP or experts,
  QKV, residual), in the activation dtype.
- Sampler peak (last pipeline stage only): logits for `max_num_seqs` rows over the full
  vocabulary (gathered on every TP rank) in the model dtype, plus the float32 copies the
  sampler makes, on top of the forward's surviving hidden states and of the fused-MoE
  workspace, which stays allocated once the forward has sized it (per token: top_k ×
  (max(2 × intermediate, hidden) + intermediate) on one rank).
- Peak = the larger of the two, plus the rotary caches and other buffers held with weights.

CUDA graphs are captured after the KV pool is sized, so (as in vLLM 0.19) they are not
subtracted; `cuda_graph_bytes` is reported beside the plan for newer engines that do.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from llm_inventory.engine.serving.base import ReserveEstimate
from llm_inventory.units import GIB


class ReserveModel(BaseModel):
    """Constants of the reserve estimate; defaults calibrated on vLLM 0.19 start-ups."""

    model_config = ConfigDict(frozen=True)

    non_torch_single: int = int(0.25 * GIB)  # one GPU, no TP communicator
    non_torch_tp: int = int(2.1 * GIB)  # per GPU once TP ≥ 2 (all-reduce buffers)
    non_torch_pp: int = int(0.07 * GIB)  # per GPU of a pipeline without TP
    sampler_bytes_per_logit: float = 14.0  # model-dtype logits + float32 sampler copies
    residual_widths: float = 3.0  # hidden-size activations alive beside the sampler
    forward_width_factor: float = 1.3  # scales the widest layer's per-token activations
    forward_floor: int = int(0.5 * GIB)  # allocator and compile-time workspaces


def estimate_reserve(
    model: ReserveModel,
    *,
    tp: int,
    pp: int,
    last_stage: bool,
    has_layers: bool,
    tokens: int,
    logit_rows: int,
    vocab: int,
    hidden: int,
    widest_per_token: int,
    activation_bits: int,
    moe_workspace_per_token: int = 0,
) -> ReserveEstimate:
    """Reserve of one worker (see the module rules); `widest_per_token` is elements."""
    if tp > 1:
        non_torch = model.non_torch_tp
    elif pp > 1:
        non_torch = model.non_torch_pp
    else:
        non_torch = model.non_torch_single
    act_bytes = activation_bits / 8
    forward = 0
    if has_layers:
        forward = int(tokens * widest_per_token * act_bytes * model.forward_width_factor)
        forward = max(forward, model.forward_floor)
    sampler = 0
    if last_stage and vocab:
        residual = tokens * (hidden * model.residual_widths + moe_workspace_per_token)
        sampler = int(residual * act_bytes + logit_rows * vocab * model.sampler_bytes_per_logit)
    activation = max(forward, sampler)
    return ReserveEstimate(
        non_torch_bytes=non_torch,
        forward_peak_bytes=forward,
        sampler_peak_bytes=sampler,
        activation_bytes=activation,
        reserve_bytes=non_torch + activation,
    )
