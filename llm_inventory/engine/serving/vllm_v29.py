"""vLLM 0.29: the null block held back when checking that one request fits.

Rules that changed in 0.29, each from vLLM's source in the v0.29.0 release; the rest is
the 0.28 module's (`vllm_v28.py`):
- The null block (`BlockPool.__init__` pops block 0 as a placeholder that is never handed
  out, vllm/v1/core/block_pool.py, unchanged) is now reserved before the admission check and
  `--max-model-len auto`: `get_kv_cache_configs` and `check_enough_kv_cache_memory`
  (vllm/v1/core/kv_cache_utils.py) pass `available_memory − bytes of one block` to
  `_check_enough_kv_cache_memory` and `_auto_fit_max_model_len` ("Reserve the null block
  BlockPool permanently holds back, so auto-fit and the capacity check both plan against
  usable blocks"; vllm#47272 for the check, vllm#48724 for auto-fit). The pool itself is
  still cut from the whole memory, so the blocks, "GPU KV cache size" and the maximum
  concurrency printed are 0.28's; a model whose one request at max_model_len needs every
  block of the pool, or all but a part of one, now stops at start-up (and the ValueError
  quotes one block less), and the longest context `--max-model-len auto` picks is the one
  the pool holds with a block to spare.
- Model Runner V2 is the default for every model (`VllmConfig.use_v2_model_runner`,
  vllm/config/vllm.py: the 0.28 architecture list and the MoE/hybrid exclusions are gone;
  on ROCm, DeepSeek-V3.2 and V4 stay on V1). Nothing this tool models moves with it:
  both runners profile their CUDA graphs from 0.26 (this era keeps 0.21's estimate for
  both, an estimate), and V2's profiling forward runs max_num_batched_tokens tokens and
  samples min(tokens, max_num_seqs) rows as V1's does (`GPUModelRunner._dummy_run`,
  vllm/v1/worker/gpu/model_runner.py).
- The standardized KV cache layout (vllm#51718: one allocation per group and layer
  strides, `get_kv_cache_config_from_groups`) cuts ⌊memory ÷ Σ page bytes of the largest
  group⌋ blocks (`_get_kv_cache_bytes_per_block`), which for pages of one size is 0.28's
  ⌊⌊memory ÷ page⌋ ÷ group size⌋: the block count is unchanged.
The reserve is the 0.19 model's with the graph estimate (`vllm_v21.py`); one 0.29.0 start-up
replayed from its launch (engine-logs-2026 N11, RTX 5060 Ti, a cold compile) misses its pool
by +37 % and enters the group's band (tests/engine/serving/test_vllm_030_logs.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from llm_inventory.engine.serving.base import EngineSettings, KvCapacity, KvLayer, PoolLayout
from llm_inventory.engine.serving.paged import BlockPool, longest_context
from llm_inventory.engine.serving.vllm_v28 import VllmV28


@dataclass(frozen=True, slots=True)
class NullBlockPool(BlockPool):
    """0.28's pool, whose longest context (`--max-model-len auto` and the estimate the
    start-up error quotes) is found on the pool less the null block."""

    def capacity(self, pool_bytes: int) -> KvCapacity:
        found = BlockPool.capacity(self, pool_bytes)
        usable = pool_bytes - self.page
        if not self.page or not self.layers or not self.keeps_state \
                or self.measure(usable)[2] >= 1:
            return found
        longest = longest_context(self.layers, usable, block_size=self.block_size,
                                  max_num_batched_tokens=self.batched,
                                  upper=self.max_model_len,
                                  prefix_caching=self.prefix_caching,
                                  speculative_blocks=self.speculative_blocks,
                                  state_at_every_block=self.state_at_every_block)
        return found.model_copy(update={"longest_context": longest})


def usable(capacity: KvCapacity) -> KvCapacity:
    """`capacity` as the admission check sees it: its concurrency over every block but
    the null block (whole blocks, the pool's bytes rounded down to them)."""
    if not capacity.page_bytes or not capacity.blocks:
        return capacity
    need = capacity.request_blocks * capacity.page_bytes + capacity.fixed_bytes_per_request
    if not need:
        return capacity
    spare = (capacity.blocks - 1) * capacity.page_bytes
    return capacity.model_copy(update={"max_concurrency": spare / need})


class VllmV29(VllmV28):
    name = "vllm"
    versions = "0.29 (null block held back from the fit check; Model Runner V2 for every " \
               "model)"
    version = "0.29"
    label = "vLLM 0.29"
    summary = ("as 0.28, with the null block held back from the check that one request "
               "at max_model_len fits and from --max-model-len auto")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("one block (the null block) held back from the admission check and from "
         "--max-model-len auto; the pool, its blocks and printed tokens as before",
         "vllm/v1/core/kv_cache_utils.py get_kv_cache_configs, "
         "check_enough_kv_cache_memory (v0.29.0; vllm#47272, vllm#48724)"),
        ("Model Runner V2 by default for every model (DeepSeek-V3.2/V4 stay on V1 on "
         "ROCm); the graph estimate and profiling forward as before",
         "vllm/config/vllm.py VllmConfig.use_v2_model_runner (v0.29.0)"),
        ("standardized KV layout: blocks = ⌊memory ÷ bytes of the largest group's "
         "block⌋, the same count for pages of one size",
         "vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups, "
         "_get_kv_cache_bytes_per_block (v0.29.0; vllm#51718)"),
    ) + VllmV28.rules

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        """0.28's pool, its longest context found with the null block held back."""
        layout = super().pool_layout(layers, settings)
        if type(layout) is not BlockPool:
            return layout
        return NullBlockPool(**{field.name: getattr(layout, field.name)
                                for field in dataclasses.fields(layout)})

    def context_fallback(self, capacity: KvCapacity, settings: EngineSettings) -> str | None:
        """`--max-model-len auto` as 0.28's, when one request does not fit beside the null
        block."""
        return super().context_fallback(usable(capacity), settings)

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """0.28's error, checked on the pool less one block, as `_check_enough_kv_cache_
        memory` is called from 0.29 (the memory it quotes is one block less)."""
        if not capacity.page_bytes:
            return super().startup_error(capacity, pool_bytes, settings)
        checked = usable(capacity)
        return super().startup_error(checked, pool_bytes - capacity.page_bytes
                                     if checked.max_concurrency < 1 else pool_bytes,
                                     settings)


ENGINE = VllmV29()
