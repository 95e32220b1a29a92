"""vLLM's V1 engine (0.11 to 0.20): how it sizes the KV cache at start-up.

Rules, each from vLLM's source:
- Budget: requested = total memory × gpu_memory_utilization; the KV pool is what is left of
  it after the weights, the non-torch memory and the peak of a profiling forward
  (`Worker.determine_available_memory`, vllm/v1/worker/gpu_worker.py). CUDA graphs are
  captured afterwards and not subtracted (newer releases do: see the 0.21 module).
- Defaults (`EngineArgs._set_default_args`, vllm/engine/arg_utils.py): on GPUs of 70 GiB
  or more (A100s excepted) max_num_batched_tokens 8192 and max_num_seqs 1024, else 2048
  and 256; block size 16; gpu_memory_utilization 0.90 (`CacheConfig`, vllm/config/cache.py;
  a 0.19.0 start-up left at the default logs "Requested memory … 0.900000 (util)"; 0.21
  raised it to 0.92).
- The pool is paged as `engine/serving/paged.py` describes (`KVCacheManager`,
  vllm/v1/core/kv_cache_utils.py); every worker profiles its own memory and the engine
  keeps the smallest block count (`get_kv_cache_configs`). `--enable-prefix-caching`
  (engine flag `enable_prefix_caching`) changes what a hybrid model's state groups need
  per request (mode "align"); it is off unless asked for hybrid models in 0.19.
- Weights: vocabulary tables padded to a multiple of 64 rows (`pad_vocab_size`,
  vllm/model_executor/layers/vocab_parallel_embedding.py); MLA backends keep the kv_b
  up-projection split per head (W_UK, W_UV) in the activation dtype beside the weight
  (`MLACommonImpl.process_weights_after_loading`); MXFP4 experts take the layout of the
  release's default backend on the GPU (`mxfp4_experts`,
  vllm/model_executor/layers/quantization/mxfp4.py); the rotary cos/sin caches
  (`get_rope`, vllm/model_executor/layers/rotary_embedding) stay with the weights.
- The reserve (non-torch memory, forward and sampler peaks) is an estimate calibrated on
  vLLM 0.19 start-ups: see `vllm_reserve.py`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.lora import LoraRule
from llm_inventory.engine.mm_budget import MmRule
from llm_inventory.engine.offload import OffloadRules
from llm_inventory.engine.serving.base import (
    EngineSettings,
    ExpertPadding,
    FlagValue,
    KvCapacity,
    KvLayer,
    LaunchCommand,
    LaunchSettings,
    Occupied,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
)
from llm_inventory.engine.serving.feature_rules import VLLM_V1_LORA, VLLM_V1_MM
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.engine.serving.vllm_launch import PROGRAMS, parse_vllm
from llm_inventory.engine.serving.vllm_reserve import ReserveModel, estimate_reserve
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB, dtype_bits, normalize_dtype, parse_bytes

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import DraftRule, Speculative

# The settings key a speculative launch sets for `pool_layout`: the state blocks each request
# keeps per drafted token.
SPECULATIVE_BLOCKS = "num_speculative_blocks"
# The settings key of mamba cache mode "all" (a state at every block), for `pool_layout`.
MAMBA_CACHE_ALL = "mamba_cache_all"

# MXFP4 expert layouts of vLLM's MoE kernels (see `mxfp4_experts`).
EXPERTS_MARLIN = ExpertPadding(intermediate=128, hidden=256, hidden_out=True)
EXPERTS_FLASHINFER_TRTLLM = ExpertPadding(intermediate=256, hidden=256, hidden_out=True,
                                          bias_bits=32)
EXPERTS_TRITON_HOPPER = ExpertPadding(intermediate=64, rows=16, reduction_bytes=32,
                                      scale_rows=256, scale_groups=2, scale_copies=2,
                                      bias_bits=32)
EXPERTS_TRITON_HOPPER_PREPADDED = ExpertPadding(intermediate=64, rows=64, reduction_bytes=64,
                                                scale_rows=256, scale_groups=2,
                                                scale_copies=2, bias_bits=32)
HOPPER = (9, 0)  # the generation a device of unknown capability is taken for


def mxfp4_moe(spec: ModelSpec) -> bool:
    """An MoE model whose checkpoint stores its experts in MXFP4 (gpt-oss)."""
    q, stack = spec.quantization, spec.decoder
    return q is not None and q.method == "mxfp4" and stack is not None and bool(stack.moe)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def mxfp4_experts(version: str, device: Device | None) -> ExpertPadding:
    """How vLLM `version` lays out MXFP4 experts on `device`, as its wheel installs.

    Backend (`get_mxfp4_backend`, vllm/model_executor/layers/quantization/mxfp4.py, to
    0.18; `select_mxfp4_moe_backend`, vllm/model_executor/layers/fused_moe/oracle/mxfp4.py,
    from 0.19), no VLLM_* override set:
    - to 0.11.0: Marlin on every GPU (0.10 pins torch 2.7, below the 2.8 Triton needs; the
      wheels ship no triton_kernels and FlashInfer is an extra);
    - 0.11.1 and 0.11.2: FlashInfer TRT-LLM (BF16) on capability 10.0 (FlashInfer now a
      dependency), Marlin elsewhere;
    - from 0.12 (triton_kernels vendored as vllm/third_party/triton_kernels): Triton on
      Hopper, FlashInfer TRT-LLM on 10.0 (the whole 10.x family from 0.13), Marlin on
      Ampere, Ada and 12.x (Triton wants 9.0 ≤ capability < 11.0). A device of unknown
      capability is taken as Hopper.
    Layouts (`Mxfp4MoEMethod.create_weights` and `process_weights_after_loading`; from 0.19
    `mxfp4_round_up_hidden_size_and_intermediate_size` and
    `convert_to_mxfp4_moe_kernel_format`):
    - Marlin: intermediate to 128, hidden to 256 in and out; `prepare_moe_fp4_layer_for_marlin`
      (quantization/utils/marlin_utils_fp4.py) repacks in place, one-byte scales, bf16 biases;
    - FlashInfer TRT-LLM: intermediate and hidden to 256, in and out; shuffled copies replace
      the loaded tensors, biases cast to fp32;
    - Triton: intermediate to 64; `_swizzle_mxfp4` (quantization/utils/mxfp4_utils.py)
      re-lays values as `HopperMXValueLayout` (triton_kernels tensor_details/layout_details/
      hopper_value.py: output rows to 16 and the packed reduction to 32 B in the 3.5 copy of
      0.12–0.16; both pre-padded to 64 in the 3.6 copy from 0.17) and scales as
      `HopperMXScaleLayout` (hopper_scale.py: rows to 2·2·8 × 8 warps = 256, columns to 2);
      the swizzled values replace the loaded ones, the loaded scales stay registered beside
      their swizzled copies, biases are cast to fp32.
    """
    release = _release(version)
    capability = HOPPER
    if device is not None and device.compute_capability is not None:
        major, _, minor = device.compute_capability.partition(".")
        capability = (int(major), int(minor or 0))
    if release < (0, 11, 1):
        return EXPERTS_MARLIN
    if capability == (10, 0) or (capability[0] == 10 and release >= (0, 13)):
        return EXPERTS_FLASHINFER_TRTLLM
    if release < (0, 12):
        return EXPERTS_MARLIN
    if capability[0] == 9:
        return EXPERTS_TRITON_HOPPER if release < (0, 17) else EXPERTS_TRITON_HOPPER_PREPADDED
    return EXPERTS_MARLIN


KV_CACHE_MEMORY = "kv_cache_memory"  # --kv-cache-memory-bytes: the KV pool, in bytes


def kv_cache_memory(value: FlagValue) -> int:
    """`--kv-cache-memory-bytes` (or its prefix `--kv-cache-memory`) as bytes: a whole
    number or a size (80GiB …); InputError for anything else."""
    if isinstance(value, bool) or isinstance(value, float):
        raise InputError(KV_CACHE_MEMORY, f"expected bytes or a size such as 8GiB, got {value!r}")
    found = parse_bytes(value, KV_CACHE_MEMORY)
    if found <= 0:
        raise InputError(KV_CACHE_MEMORY, "must be more than 0 bytes")
    return found


def bool_flag(flags: dict[str, FlagValue], name: str) -> bool:
    """An on/off engine flag (absent: off); InputError for anything but true or false."""
    value = flags.get(name, False)
    if isinstance(value, str):
        if value.lower() not in ("true", "false", "1", "0"):
            raise InputError("engine_flags", f"{name} must be true or false, got {value!r}")
        return value.lower() in ("true", "1")
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InputError("engine_flags", f"{name} must be true or false, got {value!r}")


class VllmV1(ServingEngine):
    name = "vllm"
    versions = "0.11–0.20 (V1 engine)"
    version = "0.19"
    label = "vLLM 0.19"
    lora_rule: ClassVar[LoraRule | None] = VLLM_V1_LORA
    mm_rule: ClassVar[MmRule | None] = VLLM_V1_MM
    memory_error_names_device = False  # the start-up free-memory error names its device
    budget_bounds_use = True  # total × gpu_memory_utilization: weights, peak, graphs, KV
    # read by get_pp_indices (vllm/distributed/utils.py): layers per stage, comma-separated
    layer_partition = "VLLM_PP_LAYER_PARTITION"
    summary = ("KV pool = total × gpu_memory_utilization − weights − non-torch memory − "
               "profiled activation peak, in blocks of 16 tokens; the smallest worker binds")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("budget: total × gpu_memory_utilization − weights − non-torch − activation peak",
         "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory"),
        ("defaults: 8192 batched tokens and 1024 sequences on ≥ 70 GiB GPUs (not A100), else "
         "2048 and 256; blocks of 16",
         "vllm/engine/arg_utils.py EngineArgs._set_default_args"),
        ("default gpu_memory_utilization 0.90", "vllm/config/cache.py CacheConfig"),
        ("blocks per hybrid group, per-request blocks of sliding and chunked groups",
         "vllm/v1/core/kv_cache_utils.py; vllm/v1/kv_cache_interface.py"),
        ("Mamba / linear-attention state paged with attention: the attention block enlarged "
         "until its page holds a state page, the state page padded to it, one page per "
         "request", "vllm/model_executor/models/config.py HybridAttentionMambaModelConfig; "
         "vllm/v1/kv_cache_interface.py MambaSpec"),
        ("prefix caching asked for beside Mamba / linear-attention state: mode \"align\", "
         "two state pages per request, the state's block the attention block",
         "vllm/config/cache.py CacheConfig.mamba_cache_mode; vllm/v1/kv_cache_interface.py "
         "MambaSpec.max_memory_usage_bytes"),
        ("speculative decoding beside Mamba / linear-attention state: one more state page "
         "per request for each drafted token, and a Gated DeltaNet conv window longer by "
         "the drafted tokens",
         "vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes "
         "(num_speculative_blocks, set by vllm/model_executor/layers/mamba/abstract.py "
         "MambaBase.get_kv_cache_spec); vllm/model_executor/layers/mamba/mamba_utils.py "
         "MambaStateShapeCalculator.gated_delta_net_state_shape (num_spec)"),
        ("smallest block count over workers", "vllm/v1/core/kv_cache_utils.py "
         "get_kv_cache_configs"),
        ("vocabulary padded to 64 rows", "vllm/model_executor/layers/vocab_parallel_embedding.py "
         "pad_vocab_size"),
        ("MLA W_UK/W_UV copies in the activation dtype",
         "vllm/attention/backends/mla MLACommonImpl.process_weights_after_loading"),
        ("MXFP4 experts by backend and GPU: Triton on Hopper (intermediate to 64, swizzled "
         "values and scales, the loaded scales kept), FlashInfer TRT-LLM on Blackwell (256), "
         "Marlin elsewhere (128 and 256)", "vllm/model_executor/layers/quantization/mxfp4.py "
         "get_mxfp4_backend, Mxfp4MoEMethod; vllm/model_executor/layers/fused_moe/oracle/"
         "mxfp4.py select_mxfp4_moe_backend"),
        ("rotary cos/sin caches at the scaled length",
         "vllm/model_executor/layers/rotary_embedding get_rope"),
        ("reserve: non-torch memory, forward and sampler peaks (estimate, calibrated on 0.19 "
         "start-ups)", "llm_inventory/engine/serving/vllm_reserve.py"),
        ("--kv-cache-memory-bytes: the KV pool is that many bytes, the utilization and the "
         "profiled reserve not applied", "vllm/v1/worker/gpu_worker.py "
         "Worker.determine_available_memory (cache_config.kv_cache_memory_bytes)"),
        ("stops when one request at max_model_len needs more KV than the pool, with the "
         "estimated maximum model length",
         "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory"),
    )
    programs = PROGRAMS
    vocab_padding = 64
    absorbs_mla = True

    def __init__(self, reserve: ReserveModel | None = None) -> None:
        self.reserve_model = reserve or ReserveModel()

    engine_flags: ClassVar[tuple[str, ...]] = ("enable_prefix_caching",)
    default_utilization: ClassVar[float] = 0.90

    def takes_launch_flag(self, name: str) -> bool:
        """The engine flags this era's `settings` takes (the rest of a command line's are
        not modelled here: listed as ignored)."""
        return name in self.engine_flags or name == KV_CACHE_MEMORY

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        unknown = sorted(set(asked.flags) - set(self.engine_flags) - {KV_CACHE_MEMORY})
        if unknown:
            raise InputError("engine_flags", f"{self.label} takes "
                             + ", ".join(f"{name} (true/false)" for name in self.engine_flags)
                             + f", {KV_CACHE_MEMORY} (bytes) as engine flags; got "
                             + ", ".join(unknown))
        flags: dict[str, FlagValue] = {name: bool_flag(asked.flags, name)
                                       for name in self.engine_flags}
        if asked.flags.get(KV_CACHE_MEMORY) is not None:
            flags[KV_CACHE_MEMORY] = kv_cache_memory(asked.flags[KV_CACHE_MEMORY])
        large = device.memory_bytes >= 70 * GIB and "a100" not in device.id
        return EngineSettings(
            max_model_len=asked.context,
            max_num_batched_tokens=asked.max_num_batched_tokens or (8192 if large else 2048),
            max_num_seqs=asked.max_num_seqs or (1024 if large else 256),
            block_size=asked.block_size or 16,
            memory_fraction=(self.default_utilization if asked.memory_fraction is None
                             else asked.memory_fraction),
            kv_dtype=asked.kv_dtype,
            flags=flags,
            dtype=asked.dtype,
        )

    def offload_rules(self) -> OffloadRules | None:
        from llm_inventory.engine.serving.vllm_offload import VllmOffload

        return VllmOffload(self.version)

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        return parse_vllm(argv)

    def launch_lines(self, plan: LaunchPlan) -> list[LaunchLine]:
        from llm_inventory.engine.serving import vllm_line

        return vllm_line.write(plan)

    # the packed sparse-MLA record each KV dtype selects (`kinds/packed_mla.py`): an fp8
    # cache becomes `fp8_ds_mla` for DeepSeek-V3.2-style models
    # (`DeepseekV32ForCausalLM.verify_and_update_config`, vllm/model_executor/models/
    # config.py)
    sparse_layouts: ClassVar[dict[str, str]] = {"fp8": "fp8_ds_mla"}
    sparse_block: ClassVar[int] = 64  # FlashMLA sparse's block, forced for these models

    # Fixed-state kinds whose conv window also holds the drafted tokens under speculative
    # decoding (`MambaStateShapeCalculator.gated_delta_net_state_shape` num_spec; the
    # Mamba-2 and KDA shapes of the newest releases take it too, not modelled here)
    drafted_conv_kinds: ClassVar[frozenset[str]] = frozenset({"gdn"})

    def state_layers(self, spec: ModelSpec, layers: tuple[StateLayer, ...],
                     settings: EngineSettings) -> tuple[StateLayer, ...]:
        """Sparse MLA layers in the packed record the KV dtype selects (`sparse_layouts`);
        Gated DeltaNet conv windows longer by the drafted tokens under speculative decoding
        (`speculative_settings`); the rest as the model keeps them."""
        from llm_inventory.engine import kinds

        drafted = int(settings.flags.get(SPECULATIVE_BLOCKS, 0))
        if drafted:
            layers = tuple(
                run.model_copy(update={"conv_window": run.conv_window + drafted})
                if run.kind in self.drafted_conv_kinds and run.conv_window else run
                for run in layers)
        layout = self.sparse_layouts.get(normalize_dtype(settings.kv_dtype, "kv_dtype"))
        stack = spec.decoder
        if layout is None or stack is None:
            return layers
        return tuple(kinds.get(run.kind).sparse_record(run, stack, layout) or run
                     for run in layers)

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        """Paged as `paged.py` says; a model with sparse MLA in blocks of 64 whatever
        --block-size asks (`CudaPlatformBase.check_and_update_config`, vllm/platforms/
        cuda.py: "Forcing kv cache block size to 64 for FlashMLASparse backend")."""
        from llm_inventory.engine import kinds

        block = settings.block_size
        if any(kinds.get(layer.kind).sparse_mla for layer in layers):
            block = self.sparse_block
        return pool_layout(layers, block_size=block,
                           max_model_len=settings.max_model_len,
                           max_num_batched_tokens=settings.max_num_batched_tokens,
                           prefix_caching=bool(settings.flags.get("enable_prefix_caching")),
                           speculative_blocks=int(settings.flags.get(SPECULATIVE_BLOCKS, 0)),
                           state_at_every_block=bool(settings.flags.get(MAMBA_CACHE_ALL)))

    def speculative_settings(self, settings: EngineSettings,
                             asked: Speculative) -> EngineSettings:
        """State layers (Mamba, Gated DeltaNet) keep one state block more per drafted token
        for each request: `MambaSpec.num_speculative_blocks` = num_speculative_tokens
        (`MambaBase.get_kv_cache_spec`, vllm/model_executor/layers/mamba/abstract.py), read
        by `pool_layout`; a Gated DeltaNet conv window holds kernel − 1 +
        num_speculative_tokens positions (`MambaStateShapeCalculator.
        gated_delta_net_state_shape`, vllm/model_executor/layers/mamba/mamba_utils.py), read
        by `state_layers`. Every drafting method, n-gram included."""
        return settings.model_copy(update={"flags": {
            **settings.flags, SPECULATIVE_BLOCKS: asked.num_speculative_tokens}})

    def expert_padding(self, spec: ModelSpec, device: Device | None = None
                       ) -> ExpertPadding | None:
        """MXFP4 experts as this release's default backend on `device` lays them out
        (`mxfp4_experts`)."""
        return mxfp4_experts(self.version, device) if mxfp4_moe(spec) else None

    def draft_rule(self) -> DraftRule:
        """V1 loads the drafter with the target before profiling (GPUModelRunner.load_model:
        "Loading drafter model…", its weights in "Model loading took"); its attention layers
        register in the forward context, so GPUModelRunner.get_kv_cache_spec lists them
        and get_kv_cache_config (vllm/v1/core/kv_cache_utils.py) cuts one pool for target
        and drafter; the scheduler allocates num_speculative_tokens lookahead slots per
        running request (vllm/v1/core/sched/scheduler.py, KVCacheManager.allocate_slots);
        draft_tensor_parallel_size is 1 or the target's (vllm/config/speculative.py); an
        EAGLE or MTP drafter takes the target's embedding and lm_head in place of its own
        copies (vllm/v1/spec_decode/eagle.py EagleProposer.load_model: "Assuming the EAGLE
        head shares the same vocab embedding with the target model")."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=True, kv_budgeted=True, shares_vocab=True, source=(
            "weights loaded before profiling, KV layers in the same KV cache spec "
            "(vllm/v1/worker/gpu_model_runner.py GPUModelRunner.load_model, "
            "get_kv_cache_spec; vllm/v1/core/kv_cache_utils.py get_kv_cache_config)"))

    def at_version(self, version: str) -> ServingEngine:
        """This era answering as release `version` (its MXFP4 backends differ inside it)."""
        if version == self.version:
            return self
        variant = type(f"{type(self).__name__}_{version.replace('.', '_')}", (type(self),),
                       {"version": version, "label": f"vLLM {version}"})
        engine: ServingEngine = copy.copy(self)
        engine.__class__ = variant
        return engine

    def context_limit(self, spec: ModelSpec) -> int | None:
        """The derived max_model_len (`_get_and_verify_max_len`, vllm/config/model.py): the
        model's positions, × the rope scaling factor unless the type is su, longrope or
        llama3 (YaRN scales original_max_position_embeddings), and never for Gemma 3,
        whose positions already count the scaling."""
        positions = spec.max_context
        stack = spec.decoder
        rope = stack.rope_scaling if stack is not None else None
        if positions is None or rope is None or rope.factor is None or stack is None \
                or stack.local_rope or rope.type in ("su", "longrope", "llama3"):
            return positions
        if rope.type in ("yarn", "deepseek_yarn") and rope.original_max_positions:
            positions = rope.original_max_positions
        return int(positions * rope.factor)

    def rope_positions(self, spec: ModelSpec) -> list[int]:
        """Positions of each cos/sin cache `get_rope` precomputes: linear and dynamic-NTK
        scaling extend it to max_position_embeddings × factor, YaRN to the original
        positions × factor; Llama 3, mRoPE and plain RoPE keep the model's positions;
        LongRoPE keeps a short cache over original_max_position_embeddings beside the long
        one (`Phi3LongRoPEScaledRotaryEmbedding`, vllm/model_executor/layers/rotary_embedding/
        phi3_long_rope_scaled_rope.py: `long_short_cos_sin_cache`); Gemma 3's sliding layers
        keep a second, unscaled cache."""
        stack, positions = spec.decoder, spec.max_context
        if stack is None or positions is None:
            return []
        rope, scaled = stack.rope_scaling, positions
        if rope is not None and rope.type in ("longrope", "su") and rope.original_max_positions:
            return [rope.original_max_positions, positions]
        if rope is not None and rope.factor is not None:
            if rope.type in ("linear", "dynamic"):
                scaled = int(positions * rope.factor)
            elif rope.type in ("yarn", "deepseek_yarn") and rope.original_max_positions:
                scaled = int(rope.original_max_positions * rope.factor)
        return [positions, scaled] if stack.local_rope else [scaled]

    def runtime_buffer_bytes(self, spec: ModelSpec, dtype: str) -> int:
        """cos/sin caches: Σ cached positions × rotary dims × the activation dtype."""
        from llm_inventory.engine import kinds

        stack = spec.decoder
        if stack is None or not stack.rope or not stack.shaped:
            return 0
        rotary = max((kind.rotary_dim(s) for kind, s in kinds.variants(stack)), default=0)
        return sum(p * rotary * dtype_bits(dtype) // 8 for p in self.rope_positions(spec))

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        return estimate_reserve(
            self.reserve_model, tp=shape.tp, pp=shape.pp, last_stage=shape.last_stage,
            has_layers=shape.has_layers, tokens=settings.max_num_batched_tokens,
            logit_rows=min(settings.max_num_seqs, settings.max_num_batched_tokens),
            vocab=shape.vocab, hidden=shape.hidden, widest_per_token=shape.widest_per_token,
            activation_bits=shape.activation_bits,
            moe_workspace_per_token=shape.moe_workspace_per_token,
        )

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        """total × utilization − weights − reserve; exactly `--kv-cache-memory-bytes` when
        given (`Worker.determine_available_memory`, vllm/v1/worker/gpu_worker.py, returns
        `cache_config.kv_cache_memory_bytes` as it is, the utilization not applied)."""
        asked = settings.flags.get(KV_CACHE_MEMORY)
        if asked is not None:
            return int(asked)
        usable = int(device.memory_bytes * settings.memory_fraction)
        return usable - weight_bytes - reserve.reserve_bytes

    def occupied(self, device: Device, settings: EngineSettings,
                 others_bytes: int) -> Occupied:
        """V1 budgets total × gpu_memory_utilization and measures its own use against a
        snapshot taken at start-up, so other processes' memory leaves the pool as it is;
        but `Worker.init_device` (vllm/v1/worker/gpu_worker.py; later `request_memory` in
        vllm/v1/worker/utils.py, which names the device) raises when the free memory it
        finds is below the budget ⌈total × gpu_memory_utilization⌉, in these words."""
        total = device.memory_bytes
        free = total - others_bytes
        requested = math.ceil(total * settings.memory_fraction)
        if others_bytes <= 0 or free >= requested:
            return Occupied()
        where = "cuda:0 " if self.memory_error_names_device else ""
        return Occupied(error=(
            f"ValueError: Free memory on device {where}({round(free / GIB, 2)}/"
            f"{round(total / GIB, 2)} GiB) on startup is less than desired GPU memory "
            f"utilization ({settings.memory_fraction}, {round(requested / GIB, 2)} GiB). "
            "Decrease GPU memory utilization or reduce GPU memory used by other processes."))

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """`_check_enough_kv_cache_memory` (vllm/v1/core/kv_cache_utils.py), in its words
        and with the ValueError it raises: the KV one request at max_model_len needs against
        the pool."""
        see = ("See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
               "details.")
        if pool_bytes <= 0:
            return ("ValueError: No available memory for the cache blocks. Try increasing "
                    f"`gpu_memory_utilization` when initializing the engine. {see}")
        if not capacity.page_bytes or capacity.max_concurrency >= 1:
            return None
        needed = capacity.request_blocks * capacity.page_bytes \
            + capacity.fixed_bytes_per_request
        estimated = ""
        if capacity.longest_context:
            estimated = ("Based on the available memory, the estimated maximum model length "
                         f"is {capacity.longest_context}. ")
        return (f"ValueError: To serve at least one request with the model's max seq len "
                f"({settings.max_model_len}), ({needed / GIB:.2f} GiB KV cache is needed, "
                f"which is larger than the available KV cache memory ({pool_bytes / GIB:.2f} "
                f"GiB). {estimated}Try increasing `gpu_memory_utilization` or decreasing "
                f"`max_model_len` when initializing the engine. {see}")

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        """vLLM's own lines: the attention block enlarged for fixed state and the state
        page's padding (`HybridAttentionMambaModelConfig`, vllm/model_executor/models/
        config.py), then the pool (`_report_kv_cache_config`, vllm/v1/core/kv_cache_utils.py)."""
        lines = []
        if capacity.block_size and capacity.block_size != settings.block_size:
            lines.append(f"Setting attention block size to {capacity.block_size} tokens to "
                         "ensure that attention page size is >= mamba page size.")
        state, page = capacity.state_page_bytes, capacity.layer_page_bytes
        if state and page > state:
            lines.append(f"Padding mamba page size by {100 * (page - state) / state:.2f}% to "
                         "ensure that mamba page size and attention page size are exactly "
                         "equal.")
        return lines + [
            f"Available KV cache memory: {max(0, pool_bytes) / GIB:.2f} GiB",
            f"GPU KV cache size: {capacity.tokens:,} tokens",
            f"Maximum concurrency for {settings.max_model_len:,} tokens per request: "
            f"{capacity.max_concurrency:.2f}x",
        ]


ENGINE = VllmV1()
