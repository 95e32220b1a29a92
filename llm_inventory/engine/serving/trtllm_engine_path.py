"""TensorRT-LLM before 1.0: the TensorRT-engine path unless `--backend pytorch` is asked.

- Default backend: `trtllm-serve --backend` defaults to None, "the cpp path" (the TensorRT
  engine; tensorrt_llm/commands/serve.py, 0.17 to the 0.21 releases); the PyTorch backend
  exists from 0.17 and runs only when asked. From 1.0 `--backend` defaults to pytorch
  (NVIDIA/TensorRT-LLM pull requests #5312 and #5717, merged after the 0.21 branch).

Everything else is the accounting of `trtllm.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_inventory.engine.serving.trtllm import TensorRtLlm

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import DraftRule


class TensorRtLlmEnginePath(TensorRtLlm):
    versions = "0.9–0.21 (the TensorRT-engine path by default; PyTorch from 0.17 when asked)"
    version = "0.19"
    label = "TensorRT-LLM 0.19"
    default_backend = "tensorrt"
    rules = tuple(
        ("defaults: max_batch_size 2048, max_num_tokens 8192, tokens_per_block 32, fraction "
         "0.9, the TensorRT-engine path (--backend pytorch from 0.17)",
         "tensorrt_llm/llmapi/llm_args.py; tensorrt_llm/commands/serve.py (--backend "
         "default None: the cpp path)") if rule.startswith("defaults:") else (rule, source)
        for rule, source in TensorRtLlm.rules)

    def draft_rule(self) -> DraftRule:
        """Not read for the TensorRT-engine path: the draft engine is counted on top of the
        target's pool, weights and KV."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=False, kv_budgeted=False, draft_tps=(), source=(
            "TensorRT-engine path: the draft engine's accounting is not read; its weights "
            "and KV are counted on top"))


ENGINE = TensorRtLlmEnginePath()
