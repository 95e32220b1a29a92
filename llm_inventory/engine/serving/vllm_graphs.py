"""vLLM's CUDA-graph memory, as its start-up profiling estimates it. An estimate.

The mechanism (`GPUModelRunner.profile_cudagraph_memory`, vllm/v1/worker/gpu_model_runner.py):
for each capture mode it captures the largest graph and the next one, and estimates the mode
as the first capture (which sizes the shared graph pool) plus (graphs − 1) × the second
capture's increment (at least 1 MiB); the total is the largest first capture plus every
mode's per-graph part, since FULL and PIECEWISE graphs share one pool.

The graphs (`VllmConfig._set_cudagraph_sizes`, vllm/config/vllm.py; the default
FULL_AND_PIECEWISE mode of `CompilationConfig`): capture sizes 1, 2, 4, then multiples of 8
below 256, then multiples of 16, up to min(2 × max_num_seqs, 512) and at most
max_num_batched_tokens; PIECEWISE graphs for every size, FULL (decode) graphs for the sizes
up to max_num_seqs.

What vLLM measures, and this module estimates: a first capture of the largest size's
activations (its tokens × the widest layer's activation elements × the activation dtype,
a floor of `first_floor`), and a per-graph increment that grows with the layers on the
stage (each piecewise graph holds kernels per layer); `per_layer` and `first_floor` are
fitted on the graph-memory estimates vLLM 0.19 printed (engine-logs/runs.json).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_inventory.units import MIB


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                  max_graph_size: int = 512) -> list[int]:
    """The batch sizes vLLM captures graphs for, ascending (`max_graph_size`: 512, or 1024
    on Blackwell from 0.28)."""
    largest = min(2 * max_num_seqs, max_graph_size, max_num_batched_tokens)
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, largest + 1, 16))
    return [s for s in sizes if s <= largest]


@dataclass(frozen=True)
class GraphModel:
    """Constants of the estimate (bytes)."""

    per_layer: int = int(0.25 * MIB)  # per graph, per decoder layer on the stage
    first_floor: int = 64 * MIB  # the first capture's pool, at least
    minimum: int = MIB  # vLLM's floor per graph


@dataclass(frozen=True)
class GraphEstimate:
    piecewise: int  # graphs captured in PIECEWISE mode
    full: int  # graphs captured in FULL mode
    largest: int  # tokens of the largest graph
    largest_full: int
    bytes: int


def estimate_graphs(model: GraphModel, *, max_num_seqs: int, max_num_batched_tokens: int,
                    layers: int, widest_per_token: int, activation_bits: int,
                    max_graph_size: int = 512) -> GraphEstimate:
    """CUDA-graph memory of one worker in vLLM's FULL_AND_PIECEWISE mode (an estimate)."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, max_graph_size)
    full = [s for s in sizes if s <= max_num_seqs]
    if not sizes or not layers:
        return GraphEstimate(piecewise=0, full=0, largest=0, largest_full=0, bytes=0)
    per_graph = max(model.minimum, model.per_layer * layers)

    def first(tokens: int) -> int:
        return max(model.first_floor, tokens * widest_per_token * activation_bits // 8)

    shared = max(first(sizes[-1]), first(full[-1]) if full else 0)
    extra = (len(sizes) - 1) * per_graph + (max(0, len(full) - 1) * per_graph)
    return GraphEstimate(piecewise=len(sizes), full=len(full), largest=sizes[-1],
                         largest_full=full[-1] if full else 0, bytes=shared + extra)
