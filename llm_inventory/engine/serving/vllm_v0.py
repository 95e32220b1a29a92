"""vLLM's V0 engine (0.2 to 0.10): how it sized the KV cache at start-up.

Rules, each from vLLM's V0 source:
- Budget: num_gpu_blocks = ⌊(total × gpu_memory_utilization − peak) ÷ cache_block_size⌋,
  peak = weights + non-torch memory + the torch peak of a profiling forward
  (`Worker.determine_num_available_blocks`, vllm/worker/worker.py); the executor keeps the
  smallest count over workers (`ExecutorBase.determine_num_available_blocks`,
  vllm/executor/executor_base.py). CUDA graphs are captured after and not subtracted.
- Block size: cache_block_size = block_size × Σ over attention layers of (K + V entry)
  × the KV dtype's bytes; an MLA layer has one joint entry (no V), and on CUDA that entry is
  padded to a multiple of 256 bytes counted in the model dtype's elements
  (`CacheEngine.get_cache_block_size` and `_align_cache`, vllm/worker/cache_engine.py;
  `align_to_256bytes`, vllm/utils.py; VLLM_CUDA_MEM_ALIGN_KV_CACHE on by default): DeepSeek's
  576-element bf16 latent costs 1,280 B per layer instead of 1,152. Every attention layer
  pays per token (no hybrid groups); non-attention state (Mamba) is not in the block.
- CPU blocks: ⌊swap_space ÷ cache_block_size⌋, swap_space 4 GiB by default.
- MXFP4 experts (gpt-oss, from 0.10.1) load through Marlin on every GPU, which pads each
  rank's intermediate to 128 and the hidden size to 256 (`Mxfp4MoEMethod.create_weights`,
  vllm/model_executor/layers/quantization/mxfp4.py; `mxfp4_experts` in the V1 module).
- Defaults (vllm/engine/arg_utils.py `EngineArgs`; vllm/config.py `SchedulerConfig`):
  gpu_memory_utilization 0.90, block size 16, max_num_seqs 256; chunked prefill turned on for
  max_model_len above 32K, then max_num_batched_tokens 2048, else max(max_model_len, 2048).
- Printed: the profile summary (worker.py), "# cuda blocks: N, # CPU blocks: M" and
  "Maximum concurrency for L tokens per request: C x" with C = blocks × block_size ÷ L
  (`ExecutorBase.initialize_cache`; the device word is "GPU" before 0.7, the platform's
  dispatch key "CUDA" in 0.7.0–0.7.2, its device name "cuda" after); it stops with "The
  model's max seq len (L) is larger than the maximum number of tokens that can be stored in
  KV cache (T)" when blocks × block_size < L (`raise_if_cache_size_invalid`, worker.py).
- The reserve (non-torch memory, the profiling peak) is an estimate calibrated on V0
  start-ups (engine-logs/other-engines.json; `V0Reserve`): its profiling pass spreads
  max_num_batched_tokens over max_num_seqs dummy sequences and samples one row per sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from llm_inventory.engine import kinds
from llm_inventory.engine.serving.base import (
    EngineSettings,
    ExpertPadding,
    KvCapacity,
    KvLayer,
    LaunchCommand,
    LaunchSettings,
    Occupied,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
    StartupContext,
    StartupReport,
)
from llm_inventory.engine.serving.feature_rules import VLLM_V0_LORA
from llm_inventory.engine.serving.vllm import VllmV1, mxfp4_experts, mxfp4_moe
from llm_inventory.engine.serving.vllm_launch import PROGRAMS, parse_vllm
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB, dtype_bits

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import DraftRule, Speculative

LONG_CONTEXT = 32 * 1024  # V0 turns chunked prefill on above this max_model_len
SWAP_SPACE_GIB = 4.0


@dataclass(frozen=True)
class V0Reserve:
    """Constants of the V0 reserve estimate (an estimate), fitted on the plain launches
    among the V0 start-ups of engine-logs/other-engines.json (see the test)."""

    non_torch_single: int = int(0.12 * GIB)  # CUDA context and cuBLAS workspaces
    non_torch_tp_share: float = 0.053  # × device memory, per GPU once TP ≥ 2 (NCCL buffers)
    forward_width_factor: float = 1.35  # × the widest layer's activations per token
    forward_floor: int = int(0.3 * GIB)
    residual_widths: float = 2.0  # hidden-size activations alive beside the sampler
    sampler_bytes_per_logit: float = 37.0  # fp32 logits, their sort, probs and logprobs


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def aligned_bytes(layer: KvLayer, kv_dtype: str, model_dtype: str | None) -> int:
    """Bytes one token of `layer` costs in V0's cache: a joint latent entry padded to
    256 bytes' worth of model-dtype elements (`align_to_256bytes`), else as it is."""
    if not kinds.get(layer.kind).joint_latent or not layer.bytes_per_token:
        return layer.bytes_per_token
    kv_bytes = max(1, dtype_bits(kv_dtype) // 8)
    elements = layer.bytes_per_token // kv_bytes
    per_256 = 256 // max(1, dtype_bits(model_dtype or kv_dtype) // 8)
    return _round_up(elements, per_256) * kv_bytes


@dataclass(frozen=True, slots=True)
class V0Pool(PoolLayout):
    """V0's cache: one block spans every attention layer; a request needs ⌈L ÷ block⌉."""

    page: int  # cache_block_size, bytes
    fixed: int  # per-request state outside the blocks (allocated per max_num_seqs)
    per_token: int
    block_size: int
    max_model_len: int
    seqs: int

    def _blocks(self, pool_bytes: int) -> int:
        usable = max(0, pool_bytes) - self.fixed * self.seqs
        return max(0, usable) // self.page if self.page else 0

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        if not self.page:
            pool = max(0, pool_bytes)
            return 0, 0, (pool / self.fixed if self.fixed else 0.0)
        blocks = self._blocks(pool_bytes)
        tokens = blocks * self.block_size
        return blocks, tokens, tokens / self.max_model_len

    def capacity(self, pool_bytes: int) -> KvCapacity:
        blocks, tokens, concurrency = self.measure(pool_bytes)
        need = -(-self.max_model_len // self.block_size)
        return KvCapacity(blocks=blocks, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.per_token, groups=1 if self.page else 0,
                          request_blocks=need, page_bytes=self.page,
                          fixed_bytes_per_request=self.fixed,
                          longest_context=tokens if concurrency < 1 else None)


class VllmV0(VllmV1):
    name = "vllm"
    versions = "0.2–0.10 (V0 engine)"
    version = "0.10"
    label = "vLLM 0.10 (V0)"
    lora_rule = VLLM_V0_LORA
    mm_rule = None  # V0's multimodal profiling is not modelled
    calibrated_on = "vLLM V0 start-ups (0.7 and 0.8)"
    reserve_group = "vllm-v0"  # its own reserve model (V0Reserve)
    summary = ("KV blocks = (total × gpu_memory_utilization − weights − non-torch − profiled "
               "peak) ÷ cache block size; MLA entries padded to 256 B; blocks of 16, no "
               "hybrid groups; the smallest worker binds")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("budget: ⌊(total × gpu_memory_utilization − weights − non-torch − activation peak) ÷ "
         "cache_block_size⌋ blocks", "vllm/worker/worker.py Worker.determine_num_available_blocks"),
        ("cache_block_size = block_size × Σ attention layers × (K + V entry) × KV dtype bytes; "
         "MLA: one entry, no V", "vllm/worker/cache_engine.py CacheEngine.get_cache_block_size"),
        ("MLA entries padded to a multiple of 256 bytes of model-dtype elements (1,152 → "
         "1,280 B for DeepSeek)", "vllm/worker/cache_engine.py CacheEngine._align_cache; "
         "vllm/utils.py align_to_256bytes"),
        ("smallest block count over workers",
         "vllm/executor/executor_base.py ExecutorBase.determine_num_available_blocks"),
        ("defaults: utilization 0.90, blocks of 16, 256 sequences, 4 GiB swap space",
         "vllm/engine/arg_utils.py EngineArgs"),
        ("max_num_batched_tokens: 2048 with chunked prefill (on above 32K tokens), else "
         "max(max_model_len, 2048)", "vllm/config.py SchedulerConfig.__post_init__"),
        ("MXFP4 experts through Marlin: intermediate padded to 128, hidden size to 256 "
         "(gate_up's reduction and down's output)",
         "vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights"),
        ("CPU blocks = ⌊swap_space ÷ cache_block_size⌋",
         "vllm/worker/worker.py Worker.determine_num_available_blocks"),
        ("maximum concurrency = blocks × block_size ÷ max_model_len",
         "vllm/executor/executor_base.py ExecutorBase.initialize_cache"),
        ("stops when blocks × block_size < max_model_len",
         "vllm/worker/worker.py raise_if_cache_size_invalid"),
        ("reserve: non-torch memory and the profiling peak (estimate, calibrated on V0 "
         "start-ups)", "llm_inventory/engine/serving/vllm_v0.py V0Reserve"),
        ("0.7.1–0.7.x: MLA up-projections absorbed into W_Q_UK and W_UV_O, fp8 for fp8 "
         "weights", "vllm/attention/backends/mla/utils.py "
         "MLACommonImpl.process_weights_after_loading"),
        ("0.8–0.10 start the V1 engine unless VLLM_USE_V1=0 or a model V1 lacks falls back: "
         "this era answers for V0; a V1 start-up of those releases is nearer vllm@0.11's",
         "vllm/envs.py VLLM_USE_V1; vllm/engine/arg_utils.py EngineArgs._is_v1_supported_oracle"),
    )
    programs = PROGRAMS


    def occupied(self, device: Device, settings: EngineSettings,
                 others_bytes: int) -> Occupied:
        """V0 sizes its blocks from total × gpu_memory_utilization less its own use measured
        against a snapshot at start-up (`Worker.init_device`, vllm/worker/worker.py: no
        check of the free memory), so the pool is as without other processes; allocating
        it then runs out of memory when the others leave less free than the budget."""
        total = device.memory_bytes
        requested = total * settings.memory_fraction
        free = total - others_bytes
        if others_bytes <= 0 or free >= requested:
            return Occupied()
        return Occupied(error=(
            "torch.OutOfMemoryError: CUDA out of memory (allocating the KV cache: the budget "
            f"total × gpu_memory_utilization is {requested / GIB:.2f} GiB, other processes "
            f"leave {free / GIB:.2f} GiB of {total / GIB:.2f} GiB free)"))
    def __init__(self, reserve: V0Reserve | None = None) -> None:
        super().__init__()
        self.v0_reserve = reserve or V0Reserve()

    def draft_rule(self) -> DraftRule:
        """V0 profiles the target (scorer) worker alone, then splits its block count between
        target and proposer by their block sizes
        (vllm/spec_decode/spec_decode_worker.py SpecDecodeWorker.
        determine_num_available_blocks, split_num_cache_blocks_evenly): the drafter's KV
        shares the pool, its weights are not profiled and come on top (vllm#9995; the fix,
        vllm#14067, closed unmerged)."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=False, kv_budgeted=True, source=(
            "blocks split between target and proposer by block size, the proposer's "
            "weights not profiled (vllm/spec_decode/spec_decode_worker.py "
            "determine_num_available_blocks; vllm#9995)"))

    def speculative_settings(self, settings: EngineSettings,
                             asked: Speculative) -> EngineSettings:
        """V0 pages no fixed state with its blocks: nothing changes."""
        return settings

    def at_version(self, version: str) -> ServingEngine:
        if version == self.version:
            return self
        variant = type(f"VllmV0_{version.replace('.', '_')}", (type(self),),
                       {"version": version, "label": f"vLLM {version} (V0)"})
        engine: ServingEngine = variant(self.v0_reserve)
        return engine

    def _device_word(self) -> str:
        parts = tuple(int(p) for p in self.version.split(".") if p.isdigit())
        if parts < (0, 7):
            return "GPU"
        if parts < (0, 7, 3):
            return "CUDA"
        return "cuda"

    def takes_launch_flag(self, name: str) -> bool:
        """V0 reads swap_space; prefix caching leaves its blocks as they are."""
        return name in ("swap_space", "enable_prefix_caching")

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        flags = dict(asked.flags)
        # Prefix caching leaves V0's blocks as they are (its Mamba state is kept outside them).
        flags.pop("enable_prefix_caching", None)
        unknown = sorted(set(flags) - {"swap_space"})
        if unknown:
            raise InputError("engine_flags", f"{self.label} takes swap_space (GiB) as an "
                             "engine flag; got " + ", ".join(unknown))
        swap = flags.get("swap_space", SWAP_SPACE_GIB)
        if isinstance(swap, bool) or not isinstance(swap, (int, float, str)):
            raise InputError("engine_flags", "swap_space must be a number of GiB")
        try:
            swap_gib = float(swap)
        except ValueError as exc:
            raise InputError("engine_flags", f"swap_space must be a number of GiB, got "
                             f"{swap!r}") from exc
        if swap_gib < 0:
            raise InputError("engine_flags", f"swap_space must not be negative, got {swap}")
        chunked = asked.context > LONG_CONTEXT
        batched = asked.max_num_batched_tokens or (
            2048 if chunked else max(asked.context, 2048))
        return EngineSettings(
            max_model_len=asked.context,
            max_num_batched_tokens=batched,
            max_num_seqs=asked.max_num_seqs or 256,
            block_size=asked.block_size or 16,
            memory_fraction=0.90 if asked.memory_fraction is None else asked.memory_fraction,
            kv_dtype=asked.kv_dtype,
            flags={"swap_space": swap_gib},
            dtype=asked.dtype,
        )

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """Non-torch memory and the torch peak of the profiling pass (an estimate): a
        forward over max_num_batched_tokens, whose fused-MoE caches are freed after each
        layer, then the sampler over one row per dummy sequence (fp32 logits sorted for
        top-k/top-p) beside the surviving hidden states."""
        model = self.v0_reserve
        if shape.tp > 1:
            non_torch = int(model.non_torch_tp_share * shape.device_memory_bytes)
        else:
            non_torch = model.non_torch_single
        act_bytes = shape.activation_bits / 8
        tokens = settings.max_num_batched_tokens
        forward = 0
        if shape.has_layers:
            forward = max(model.forward_floor, int(
                tokens * shape.widest_per_token * act_bytes * model.forward_width_factor))
        sampler = 0
        if shape.last_stage and shape.vocab:
            rows = min(settings.max_num_seqs, tokens)
            sampler = int(tokens * shape.hidden * model.residual_widths * act_bytes
                          + rows * shape.vocab * model.sampler_bytes_per_logit)
        activation = max(forward, sampler)
        return ReserveEstimate(non_torch_bytes=non_torch, forward_peak_bytes=forward,
                               sampler_peak_bytes=sampler, activation_bytes=activation,
                               reserve_bytes=non_torch + activation)

    def _absorbs_matrices(self) -> bool:
        parts = tuple(int(p) for p in self.version.split(".") if p.isdigit())
        return (0, 7, 1) <= parts < (0, 8)

    def expert_padding(self, spec: ModelSpec, device: Device | None = None
                       ) -> ExpertPadding | None:
        """MXFP4 experts through Marlin, the backend of these releases on every GPU (their
        torch predates 2.8, which the Triton backend needs): `mxfp4_experts`."""
        return mxfp4_experts(self.version, device) if mxfp4_moe(spec) else None

    def mla_extra_bytes(self, spec: ModelSpec, kv_b_elements: int, stored_bits: int,
                        act_bits: int) -> int:
        """0.7.x absorbs the up-projections into two matrices per layer, W_Q_UK
        (q input × heads × kv_lora_rank) and W_UV_O (heads × kv_lora_rank × hidden),
        re-quantized to fp8 for fp8 weights (`MLACommonImpl.process_weights_after_loading`,
        vllm/attention/backends/mla/utils.py, VLLM_MLA_PERFORM_MATRIX_ABSORPTION on by
        default); later releases keep W_UK and W_UV as V1 does."""
        stack = spec.decoder
        if not self._absorbs_matrices() or stack is None or stack.mla is None:
            return super().mla_extra_bytes(spec, kv_b_elements, stored_bits, act_bits)
        m, hidden, heads = stack.mla, stack.hidden_size or 0, stack.heads or 0
        elements = heads * m.kv_lora_rank * ((m.q_lora_rank or hidden) + hidden)
        return elements * (8 if stored_bits <= 8 else act_bits) // 8

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        per_token = sum(aligned_bytes(layer, settings.kv_dtype, settings.dtype)
                        for layer in layers)
        return V0Pool(page=settings.block_size * per_token,
                      fixed=sum(layer.fixed_bytes for layer in layers), per_token=per_token,
                      block_size=settings.block_size, max_model_len=settings.max_model_len,
                      seqs=settings.max_num_seqs)

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        return parse_vllm(argv)

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """`raise_if_cache_size_invalid` (vllm/worker/worker.py), in its words and with the
        ValueError it raises."""
        if capacity.blocks <= 0:
            return ("ValueError: No available memory for the cache blocks. Try increasing "
                    "`gpu_memory_utilization` when initializing the engine.")
        if settings.max_model_len > capacity.tokens:
            return (f"ValueError: The model's max seq len ({settings.max_model_len}) is "
                    "larger than the maximum number of tokens that can be stored in KV cache "
                    f"({capacity.tokens}). Try increasing `gpu_memory_utilization` or "
                    "decreasing `max_model_len` when initializing the engine.")
        return None

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        """`ExecutorBase.initialize_cache` (vllm/executor/executor_base.py)."""
        swap = float(settings.flags.get("swap_space", SWAP_SPACE_GIB))
        cpu = int(swap * GIB // capacity.page_bytes) if capacity.page_bytes else 0
        return [
            f"# {self._device_word()} blocks: {capacity.blocks}, # CPU blocks: {cpu}",
            f"Maximum concurrency for {settings.max_model_len} tokens per request: "
            f"{capacity.max_concurrency:.2f}x",
        ]

    def startup(self, capacity: KvCapacity, pool_bytes: int, settings: EngineSettings,
                context: StartupContext) -> StartupReport:
        """The profile summary of `Worker.determine_num_available_blocks`, then the
        executor's lines."""
        total = context.device.memory_bytes
        requested = total * settings.memory_fraction
        reserve = context.reserve
        lines = [
            f"the current vLLM instance can use total_gpu_memory ({total / GIB:.2f}GiB) x "
            f"gpu_memory_utilization ({settings.memory_fraction:.2f}) = "
            f"{requested / GIB:.2f}GiB",
            f"model weights take {context.weight_bytes / GIB:.2f}GiB; non_torch_memory takes "
            f"{reserve.non_torch_bytes / GIB:.2f}GiB; PyTorch activation peak memory takes "
            f"{reserve.activation_bytes / GIB:.2f}GiB; the rest of the memory reserved for KV "
            f"Cache is {pool_bytes / GIB:.2f}GiB.",
        ]
        error = self.startup_error(capacity, pool_bytes, settings)
        if capacity.blocks > 0:
            lines += self.startup_lines(capacity, pool_bytes, settings)
        return StartupReport(lines=lines, error=error)


ENGINE = VllmV0()
