"""TensorRT-LLM from 1.1: 1.0's accounting (`trtllm.py`), the PyTorch backend's block count
rounded up.

The rule that changed, from TensorRT-LLM's source (NVIDIA/TensorRT-LLM):
- `KVCacheManager.calculate_max_num_blocks` (tensorrt_llm/_torch/pyexecutor/
  resource_manager.py) takes the token budget (the memory rule's, capped by `max_tokens`,
  the minimum over ranks) and returns `math.ceil(max_tokens / tokens_per_block)` blocks:
  a budget of 86,711 tokens in blocks of 32 becomes 2,710 blocks, 86,720 tokens, where 1.0
  was read as keeping ⌊tokens ÷ tokens_per_block⌋. The pools then allocate whole blocks,
  a part of one block past the budget.
Everything else, the TensorRT-engine path included (which always rounded up), is 1.0's.
The reserve's band is 1.0's, carried over (no 1.1 or 1.2 start-up with every figure printed
was found).
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.trtllm import TensorRtLlm


class TensorRtLlm11(TensorRtLlm):
    versions = "1.1 onward (the PyTorch backend by default, the TensorRT-engine path asked)"
    version = "1.2"
    label = "TensorRT-LLM 1.2"
    pytorch_rounds_up = True
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("PyTorch: pool = (total − profiling peak + temporary KV) × fraction, capped by "
         "max_tokens and max_gpu_total_bytes; blocks = ⌈tokens ÷ tokens_per_block⌉ "
         "(86,711 tokens in blocks of 32 → 86,720)",
         "tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator.configure_kv_cache_capacity; "
         "resource_manager.py KVCacheManager.calculate_max_num_blocks (math.ceil)"),
    ) + tuple(rule for rule in TensorRtLlm.rules if not rule[0].startswith("PyTorch:"))


ENGINE = TensorRtLlm11()
