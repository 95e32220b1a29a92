"""Each engine era's rules for LoRA adapters and the vision-language budget, cited.

An engine module names its rules with one line (`lora_rule = VLLM_V1_LORA`); the arithmetic
they parameterise is in `engine/lora.py` and `engine/mm_budget.py`.
"""

from __future__ import annotations

from llm_inventory.engine.lora import LoraRule
from llm_inventory.engine.mm_budget import MmRule

#: vLLM V1: the adapter stacks are created by `GPUModelRunner.load_lora_model` inside
#: `load_model`'s memory profiler (vllm/v1/worker/gpu_model_runner.py), so they count in
#: "Model loading took" and leave the KV pool; max_loras 1, max_lora_rank 16, max_cpu_loras
#: = max_loras by default and never fewer, max_lora_rank one of `MaxLoRARanks`
#: (`LoRAConfig`, vllm/config/lora.py); routed experts through
#: `FusedMoEWithLoRA` (vllm/lora/layers/fused_moe.py).
VLLM_V1_LORA = LoraRule(
    default_slots=1, default_rank=16, in_budget=True, all_layers=False, experts=True,
    fully_sharded=True, host_cache=True, ranks=(1, 8, 16, 32, 64, 128, 256, 320, 512),
    source="vllm/lora/layers/base_linear.py BaseLinearLayerWithLoRA.create_lora_weights; "
           "vllm/lora/model_manager.py LoRAModelManager._create_lora_modules; counted in "
           "GPUModelRunner.load_model (vllm/v1/worker/gpu_model_runner.py)")

#: vLLM V0: `ModelRunner.load_model` (vllm/worker/model_runner.py) measures the weights,
#: then wraps the model with `LRUCacheWorkerLoRAManager.create_lora_manager`; the profiling
#: in `Worker.determine_num_available_blocks` counts the torch peak above what was already
#: allocated, so the adapter stacks are never subtracted from the KV budget (vllm#14450,
#: "LoRA is not taken into account when determining the number of KV cache blocks"; the V1
#: engine does not have the bug). No MoE LoRA layers in V0; ranks 8 to 256
#: (`LoRAConfig.__post_init__` possible_max_ranks, vllm/config.py).
VLLM_V0_LORA = LoraRule(
    default_slots=1, default_rank=16, in_budget=False, all_layers=False, experts=False,
    fully_sharded=True, host_cache=True, ranks=(8, 16, 32, 64, 128, 256),
    source="vllm/worker/model_runner.py ModelRunner.load_model (LoRA manager created after "
           "the weights are measured); vllm#14450")

#: vLLM V1's encoder cache and multimodal profiling pass.
VLLM_V1_MM = MmRule(
    profiles_encoder=True, fraction_scale=False,
    source="vllm/v1/core/encoder_cache_manager.py compute_encoder_budget; "
           "vllm/v1/worker/gpu_model_runner.py GPUModelRunner.profile_run")

#: SGLang: `LoRAManager.init_memory_pool` allocates the buffers after the weights and before
#: the KV pool is sized from the free memory (python/sglang/srt/model_executor/
#: model_runner.py), so they leave the pool; max_loras_per_batch 8; the rank is read from
#: the adapters unless --max-lora-rank is given.
SGLANG_LORA = LoraRule(
    default_slots=8, default_rank=None, in_budget=True, all_layers=True, experts=False,
    fully_sharded=False, host_cache=False,
    source="python/sglang/srt/lora/mem_pool.py LoRAMemoryPool.get_lora_A_shape, "
           "get_lora_B_shape, init_buffers")

#: SGLang from 0.5.20: MoE modules get slots too (`LoRAMemoryPool.is_moe_module`).
SGLANG_LORA_MOE = LoraRule(
    default_slots=8, default_rank=None, in_budget=True, all_layers=True, experts=True,
    fully_sharded=False, host_cache=False, source=SGLANG_LORA.source + " (MoE shapes)")

#: SGLang's default mem_fraction_static scaled for a vision tower.
SGLANG_MM = MmRule(
    profiles_encoder=False, fraction_scale=True,
    source="python/sglang/srt/server_args.py ServerArgs.adjust_mem_fraction_for_vlm")

#: llama.cpp: `llama_adapter_lora_init` (src/llama-adapter.cpp) allocates each adapter's
#: tensors in the buffer type of the base tensor they adapt, so an adapter's bytes sit
#: where its layers sit; `--lora FILE` / `--lora-scaled FILE SCALE` (common/arg.cpp).
LLAMACPP_LORA = LoraRule(
    default_slots=1, default_rank=None, in_budget=True, all_layers=True, experts=True,
    fully_sharded=False, host_cache=False, from_files=True,
    source="src/llama-adapter.cpp llama_adapter_lora_init; common/arg.cpp --lora")
