"""TensorRT-LLM (1.0 onward; `trtllm_engine_path.py` before): its KV cache from free
memory, on either backend.

Rules, each from TensorRT-LLM's source (NVIDIA/TensorRT-LLM):
- TensorRT-engine path (`BaseKVCacheManager::calculateFreeMemBytes` /
  `calculateMaxNumBlocks`, cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp): after the
  engine, its execution context, the runtime buffers and the decoder are allocated, the
  KV pool is `free_gpu_memory_fraction` (default 0.9, `KvCacheConfig::kDefaultGpuMemFraction`)
  × the free memory it prints as "available"; max tokens = ⌊pool ÷ bytes per token⌋, capped
  by `max_tokens`; blocks = ⌈max tokens ÷ tokens_per_block⌉.
- PyTorch backend (`KvCacheCreator.configure_kv_cache_capacity` and `_cal_max_memory`,
  tensorrt_llm/_torch/pyexecutor/_util.py): a profiling run of `max_num_tokens` tokens,
  then KV memory = (total − peak + the temporary KV of the run) × fraction — the peak
  holds the weights, the activations and the non-torch memory; capped by `max_tokens` ×
  bytes per token and by `max_gpu_total_bytes` when set; then `KVCacheManager`
  (tensorrt_llm/_torch/pyexecutor/resource_manager.py, `calculate_max_num_blocks`) keeps
  ⌊tokens ÷ tokens_per_block⌋ blocks.
- Bytes per token (`get_cache_size_per_token`, resource_manager.py): 2 × layers of the
  rank × ⌈kv_heads ÷ tp⌉ × head_dim × the KV dtype; MLA one latent (kv_lora_rank + rope),
  whole on every rank.
- One sequence that does not fit does not stop it: the attention window and max_seq_len
  shrink to what the blocks hold (`KVCacheManager._validate_and_adjust_attention_windows`
  and `get_max_atten_window_upper_bound`; on the engine path
  `TrtGptModelInflightBatching::clampWindowSizesToFitAtLeastOneSequence`), unless
  `fail_fast_on_attention_window_too_large`.
- Defaults (`BuildConfig`, `KvCacheConfig`, tensorrt_llm/llmapi/llm_args.py; trtllm-serve,
  tensorrt_llm/commands/serve.py): max_batch_size 2048, max_num_tokens 8192, beam width 1,
  tokens_per_block 32, fraction 0.9, the PyTorch backend.
- The non-KV memory is an estimate. Engine path: a fixed runtime share (CUDA context,
  cuBLAS, TensorRT: fitted on the documented start-up whose allocations are all printed),
  the execution context (activations ∝ max_num_tokens) and the runtime and decoder buffers
  (∝ max_batch_size × beam × vocabulary), fitted on the RTX 5090 Llama-3.1-8B start-up.
  PyTorch path: vLLM 0.19's calibrated profiling-forward model (`vllm_reserve.py`) — no
  PyTorch-backend start-up with a known model was found to fit it on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from llm_inventory.bounds import SIZE, number
from llm_inventory.engine.serving.base import (
    EngineSettings,
    FlagValue,
    KvCapacity,
    KvLayer,
    LaunchCommand,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
    StartupContext,
    StartupReport,
)
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan
from llm_inventory.engine.serving.vllm_reserve import ReserveModel, estimate_reserve
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB

# The engine path's non-KV memory (an estimate; see the module rules).
RUNTIME_BYTES = int(0.757 * GIB)  # CUDA context, cuBLAS, TensorRT runtime
ACTIVATION_FACTOR = 1.76  # execution context: × max_num_tokens × widest layer × act bytes
BUFFER_FACTOR = 4.72  # runtime + decoder: × max_batch_size × beam × vocab × 4 bytes

BACKENDS = ("pytorch", "tensorrt")
FLAGS = ("backend", "max_batch_size", "max_num_tokens", "max_beam_width", "tokens_per_block",
         "free_gpu_memory_fraction", "max_tokens", "max_gpu_total_bytes", "max_input_len",
         "fail_fast_on_attention_window_too_large", "extra_llm_api_options")


if TYPE_CHECKING:
    from llm_inventory.engine.speculative import DraftRule


@dataclass(frozen=True, slots=True)
class TokenPool(PoolLayout):
    """A pool of `tokens_per_block`-token blocks, every layer of the rank in each block."""

    page: int  # bytes of one block
    fixed: int
    per_token: int
    tokens_per_block: int
    max_seq_len: int
    beam: int
    ceil_blocks: bool  # the engine path rounds the block count up, the PyTorch path down
    max_tokens: int | None
    max_input_len: int = 1024  # the engine path's prompt bound (its shrink rule reads it)
    round_up: bool | None = None  # blocks = ⌈tokens ÷ block⌉ (None: as `ceil_blocks`)

    def blocks(self, pool_bytes: int) -> int:
        if not self.per_token:
            return 0
        tokens = max(0, pool_bytes) // self.per_token
        if self.max_tokens is not None:
            tokens = min(tokens, self.max_tokens)
        if self.ceil_blocks if self.round_up is None else self.round_up:
            return -(-tokens // self.tokens_per_block)
        return tokens // self.tokens_per_block

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        blocks = self.blocks(pool_bytes)
        need = -(-self.max_seq_len // self.tokens_per_block) * self.beam
        return blocks, blocks * self.tokens_per_block, blocks / need if need else 0.0

    def capacity(self, pool_bytes: int) -> KvCapacity:
        blocks, tokens, concurrency = self.measure(pool_bytes)
        return KvCapacity(blocks=blocks, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.per_token, groups=1,
                          request_blocks=-(-self.max_seq_len // self.tokens_per_block),
                          page_bytes=self.page, fixed_bytes_per_request=self.fixed,
                          kv_bytes=blocks * self.page,
                          longest_context=self.shrunk(blocks) if concurrency < 1 else None)

    def shrunk(self, blocks: int) -> int:
        """What max_seq_len shrinks to when one sequence does not fit `blocks` (the engine
        starts with it rather than failing), by the backend's rule."""
        if self.ceil_blocks:
            prompt = min(self.max_input_len, self.max_seq_len - 1)
            return engine_window(prompt, self.max_seq_len - prompt, blocks, self.beam,
                                 self.tokens_per_block)
        return self.window_bound(blocks)

    def allocated(self, pool_bytes: int) -> int:
        """What the pools take: whole blocks (`KVCacheManager::allocatePools`)."""
        return self.blocks(pool_bytes) * self.page

    def window_bound(self, blocks: int) -> int:
        """The longest attention window the blocks hold for one sequence (PyTorch path:
        `get_max_atten_window_upper_bound`)."""
        bound = blocks // self.beam * self.tokens_per_block
        if self.max_seq_len > bound and self.beam > 1:
            bound -= self.tokens_per_block
        return max(0, bound)


def engine_window(prompt: int, output: int, blocks: int, beam: int, block: int) -> int:
    """The window the engine path shrinks to (`KVCacheManager::calculateMaxAttentionWindow`,
    beam-width-1 and wider cases as the source writes them)."""
    def blocks_for(length: int) -> int:
        return -(-length // block)

    out_blocks = blocks_for(output) * beam if beam > 1 else blocks_for(output)
    if out_blocks > blocks:
        return blocks // beam * block
    return min(output + (blocks - out_blocks) * block, prompt + output)


class TensorRtLlm(ServingEngine):
    name = "trtllm"
    versions = "1.0 (the PyTorch backend by default, the TensorRT-engine path asked)"
    version = "1.0"
    label = "TensorRT-LLM 1.0"
    summary = ("KV pool = free_gpu_memory_fraction × memory free after the engine and buffers "
               "or a profiling run, in blocks of tokens_per_block; max_seq_len shrinks to fit")
    rules: ClassVar[tuple[tuple[str, str], ...]] = (
        ("engine path: pool = fraction (0.9) × free memory after engine, execution context, "
         "runtime buffers and decoder; blocks = ⌈⌊pool ÷ bytes per token⌋ ÷ tokens_per_block⌉",
         "cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp "
         "BaseKVCacheManager::calculateMaxNumBlocks"),
        ("PyTorch: pool = (total − profiling peak + temporary KV) × fraction, capped by "
         "max_tokens and max_gpu_total_bytes; blocks = ⌊tokens ÷ tokens_per_block⌋",
         "tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator.configure_kv_cache_capacity; "
         "resource_manager.py KVCacheManager.calculate_max_num_blocks"),
        ("bytes per token: 2 × layers × ⌈kv_heads ÷ tp⌉ × head_dim × dtype; MLA one latent",
         "tensorrt_llm/_torch/pyexecutor/resource_manager.py get_cache_size_per_token"),
        ("one sequence that does not fit shrinks max_seq_len to what the blocks hold",
         "resource_manager.py _validate_and_adjust_attention_windows; "
         "trtGptModelInflightBatcher.cpp clampWindowSizesToFitAtLeastOneSequence"),
        ("defaults: max_batch_size 2048, max_num_tokens 8192, tokens_per_block 32, fraction "
         "0.9, PyTorch backend", "tensorrt_llm/llmapi/llm_args.py; tensorrt_llm/commands/"
         "serve.py"),
        ("non-KV memory (estimate): engine path runtime share, execution context, runtime and "
         "decoder buffers; PyTorch path vLLM 0.19's profiling model",
         "llm_inventory/engine/serving/trtllm.py; vllm_reserve.py"),
    )
    calibrated_on = ("the RTX 5090 Llama-3.1-8B FP8 start-up and the documented 80 GB start-up "
                     "(TensorRT-engine path); vLLM 0.19 start-ups (PyTorch backend)")
    programs: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("trtllm-serve", "serve"), ("trtllm-serve",))
    default_backend: ClassVar[str] = "pytorch"  # what --backend is when not given
    # the PyTorch backend's block count: ⌈tokens ÷ tokens_per_block⌉ from 1.1 (trtllm_v11.py)
    pytorch_rounds_up: ClassVar[bool] = False

    def __init__(self, reserve: ReserveModel | None = None) -> None:
        self.reserve_model = reserve or ReserveModel()

    def estimate_note(self, settings: EngineSettings) -> str | None:
        if settings.flags["backend"] == "tensorrt":
            return ("weights and KV bytes are exact; the memory the engine, its execution "
                    f"context (max_num_tokens {settings.max_num_batched_tokens:,}) and its "
                    f"runtime and decoder buffers (max_batch_size {settings.max_num_seqs:,}) "
                    "leave free is an estimate, fitted on TensorRT-engine start-ups")
        return ("weights and KV bytes are exact; the profiling peak (a forward pass over "
                f"{settings.max_num_batched_tokens:,} tokens, plus non-torch memory) is an "
                "estimate, vLLM 0.19's calibrated model reused")

    # --- settings -------------------------------------------------------------------------

    def draft_rule(self) -> DraftRule:
        """PyTorch backend: the draft model or one-model EAGLE-3/MTP layers load with the
        target before the KV estimation, and the draft's KV bytes per token join the
        target's when the token budget is cut (tensorrt_llm/_torch/pyexecutor/_util.py
        KvCacheCreator._get_cache_size_per_token, TensorRT-LLM#3497; the draft KV on the
        last PP rank only, #12188). TensorRT-LLM#9279: AutoDeploy's separate drafter
        cache copies the target's KvCacheConfig (not modelled)."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=True, kv_budgeted=True, draft_tps=(), source=(
            "draft KV per token added to the target's when the pool is cut "
            "(tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator, TensorRT-LLM#3497)"))

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        unknown = sorted(set(asked.flags) - set(FLAGS))
        if unknown:
            raise InputError("engine_flags", f"{self.label} has no setting "
                             + ", ".join(unknown) + "; known: " + ", ".join(FLAGS))
        flags: dict[str, FlagValue] = {
            "backend": self.default_backend, "max_beam_width": 1, "max_input_len": 1024,
            "fail_fast_on_attention_window_too_large": False, **asked.flags}
        backend = str(flags["backend"]).lower()
        backend = {"trt": "tensorrt"}.get(backend, backend)
        if backend not in BACKENDS:
            raise InputError("backend", f"{flags['backend']!r}: use pytorch or tensorrt")
        flags["backend"] = backend
        # Counts the engine divides by: at least 1 (TensorRT-LLM asserts the same).
        batch = asked.max_num_seqs or _int(flags.get("max_batch_size", 2048), "max_batch_size",
                                           low=1)
        tokens = asked.max_num_batched_tokens or _int(flags.get("max_num_tokens", 8192),
                                                      "max_num_tokens", low=1)
        block = asked.block_size or _int(flags.get("tokens_per_block", 32), "tokens_per_block",
                                         low=1)
        fraction = asked.memory_fraction
        field = "gpu_memory_utilization"
        if fraction is None:
            field = "engine_flags"
            fraction = float(number("free_gpu_memory_fraction",
                                    flags.get("free_gpu_memory_fraction", 0.9), low=0, high=1))
        if not 0 < fraction < 1:
            raise InputError(field, f"free_gpu_memory_fraction {fraction} must be above 0 and "
                             "below 1 (TensorRT-LLM checks freeMemFraction < 1)")
        flags.update(max_batch_size=batch, max_num_tokens=tokens, tokens_per_block=block,
                     free_gpu_memory_fraction=fraction)
        for key in ("max_beam_width", "max_input_len", "max_gpu_total_bytes", "max_tokens"):
            if key in flags:
                flags[key] = _int(flags[key], key)
        return EngineSettings(max_model_len=asked.context, max_num_batched_tokens=tokens,
                              max_num_seqs=batch, block_size=block, memory_fraction=fraction,
                              kv_dtype=asked.kv_dtype, flags=flags)

    def context_limit(self, spec: ModelSpec) -> int | None:
        return spec.max_context

    # --- memory ---------------------------------------------------------------------------

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """Non-KV memory beside the weights (an estimate; see the module rules)."""
        flags = settings.flags
        tokens = settings.max_num_batched_tokens
        if flags["backend"] == "tensorrt":
            act = shape.activation_bits / 8
            forward = int(ACTIVATION_FACTOR * tokens * shape.widest_per_token * act)
            rows = settings.max_num_seqs * int(flags["max_beam_width"])
            buffers = int(BUFFER_FACTOR * rows * shape.vocab * 4) if shape.last_stage else 0
            return ReserveEstimate(non_torch_bytes=RUNTIME_BYTES, forward_peak_bytes=forward,
                                   sampler_peak_bytes=buffers,
                                   activation_bytes=forward + buffers,
                                   reserve_bytes=RUNTIME_BYTES + forward + buffers)
        # PyTorch: dummy context requests of min(max_num_tokens, max_seq_len - 1) tokens
        # fill max_num_tokens; each samples its last token.
        per_request = max(1, min(tokens, settings.max_model_len - 1))
        return estimate_reserve(
            self.reserve_model, tp=shape.tp, pp=shape.pp, last_stage=shape.last_stage,
            has_layers=shape.has_layers, tokens=tokens, logit_rows=-(-tokens // per_request),
            vocab=shape.vocab, hidden=shape.hidden, widest_per_token=shape.widest_per_token,
            activation_bits=shape.activation_bits,
            moe_workspace_per_token=shape.moe_workspace_per_token)

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        """fraction × (total − weights − non-KV memory), capped by max_gpu_total_bytes."""
        free = device.memory_bytes - weight_bytes - reserve.reserve_bytes
        pool = int(free * settings.memory_fraction)
        cap = int(settings.flags.get("max_gpu_total_bytes", 0) or 0)
        if cap > 0 and settings.flags["backend"] == "pytorch":
            pool = min(pool, cap)
        return pool

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        per_token = sum(layer.bytes_per_token for layer in layers)
        block = settings.block_size
        max_tokens = settings.flags.get("max_tokens")
        return TokenPool(page=per_token * block,
                         fixed=sum(layer.fixed_bytes for layer in layers),
                         per_token=per_token, tokens_per_block=block,
                         max_seq_len=settings.max_model_len,
                         beam=int(settings.flags["max_beam_width"]),
                         ceil_blocks=settings.flags["backend"] == "tensorrt",
                         max_tokens=int(max_tokens) if max_tokens is not None else None,
                         max_input_len=int(settings.flags["max_input_len"]),
                         round_up=settings.flags["backend"] == "tensorrt"
                         or self.pytorch_rounds_up)

    # --- its command line -----------------------------------------------------------------

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        return parse_trtllm_serve(argv)

    def options_file(self, command: LaunchCommand) -> str | None:
        """`--extra_llm_api_options FILE` (alias `--config`): a YAML of LLM API options
        that trtllm-serve reads and lays over its command line
        (tensorrt_llm/commands/serve.py `serve`, `update_llm_args_with_extra_options`)."""
        value = command.flags.get("extra_llm_api_options")
        return str(value) if value is not None else None

    def with_options(self, command: LaunchCommand, options: object) -> LaunchCommand:
        if options is None:  # an empty YAML file: nothing to apply
            options = {}
        if not isinstance(options, dict):
            raise InputError("extra_llm_api_options", "must be a mapping of LLM API options")
        return extra_options(command, options)

    def launch_lines(self, plan: LaunchPlan) -> list[LaunchLine]:
        from llm_inventory.engine.serving import trtllm_line

        return trtllm_line.write(plan)

    # --- what it prints -------------------------------------------------------------------

    def _shrink(self, capacity: KvCapacity, settings: EngineSettings) -> int | None:
        """The window max_seq_len shrinks to, when one sequence does not fit (else None)."""
        layout = TokenPool(page=capacity.page_bytes, fixed=0, per_token=capacity.bytes_per_token,
                           tokens_per_block=settings.block_size,
                           max_seq_len=settings.max_model_len,
                           beam=int(settings.flags["max_beam_width"]),
                           ceil_blocks=settings.flags["backend"] == "tensorrt", max_tokens=None,
                           max_input_len=int(settings.flags["max_input_len"]))
        if capacity.blocks >= capacity.request_blocks * layout.beam:
            return None
        return layout.shrunk(capacity.blocks)

    def context_fallback(self, capacity: KvCapacity, settings: EngineSettings) -> str | None:
        new = self._shrink(capacity, settings)
        if (new is None or new <= 0
                or settings.flags.get("fail_fast_on_attention_window_too_large")):
            return None
        return (f"{self.label} starts anyway: max_seq_len shrinks to {new:,} (one sequence at "
                f"{settings.max_model_len:,} tokens does not fit its KV blocks)")

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        new = self._shrink(capacity, settings)
        if new is None:
            return None
        old = settings.max_model_len
        if new <= 0:
            return "RuntimeError: Impossible to fit in any sequence in kvCache"
        if settings.flags.get("fail_fast_on_attention_window_too_large"):
            return ("RuntimeError: Attention window too large to fit even a single sequence in "
                    "the KV cache. Failing fast rather than attempting an adjustment of the "
                    f"window sizes. Old: [{old}], New: [{new}]")
        return None

    def startup(self, capacity: KvCapacity, pool_bytes: int, settings: EngineSettings,
                context: StartupContext) -> StartupReport:
        """The lines, with the device's total as the engine path prints it."""
        return StartupReport(
            lines=self.lines(capacity, pool_bytes, settings, context.device.memory_bytes),
            error=self.startup_error(capacity, pool_bytes, settings))

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        return self.lines(capacity, pool_bytes, settings, None)

    def lines(self, capacity: KvCapacity, pool_bytes: int, settings: EngineSettings,
              total_bytes: int | None) -> list[str]:
        """TensorRT-LLM's lines (`KVCacheManager::allocatePools`, kvCacheManager.cpp; the
        PyTorch backend's `KvCacheCreator` and `create_py_executor_instance`); the engine
        path's memory line needs the device's total."""
        flags = settings.flags
        allocated = capacity.blocks * capacity.page_bytes / GIB
        info, trt = "[TensorRT-LLM][INFO]", "[TRT-LLM]"
        lines = []
        new = self._shrink(capacity, settings)
        max_seq_len = settings.max_model_len if new is None else new
        if flags["backend"] == "tensorrt":
            available = pool_bytes / settings.memory_fraction / GIB
            if total_bytes is not None:
                lines.append(f"{info} Memory usage when calculating max tokens in paged kv "
                             f"cache: total: {total_bytes / GIB:.2f} GiB, available: "
                             f"{available:.2f} GiB")
            lines.append(f"{info} Number of blocks in KV cache primary pool: {capacity.blocks}")
            if new is not None:
                lines += [f"[TensorRT-LLM][WARNING] maxAttentionWindowVec too large to fit at "
                          f"least one sequence in kvCache. Old: [{settings.max_model_len}], "
                          f"New: [{new}]",
                          f"[TensorRT-LLM][WARNING] maxSequenceLen is reduced to "
                          f"maxAttentionWindow: {new}"]
        else:
            lines.append(f"{trt} [I] Estimated max memory in KV cache : "
                         f"{max(0, pool_bytes) / GIB:.2f} GiB")
            if new is not None:
                lines += [f"{trt} [W] Attention window size {settings.max_model_len} exceeds "
                          f"upper bound {new} for available blocks. Reducing to {new}.",
                          f"{trt} [W] Adjusted max_seq_len to {new}"]
        lines += [f"{info} Number of tokens per block: {settings.block_size}.",
                  f"{info} [MemUsageChange] Allocated {allocated:.2f} GiB for max tokens in "
                  f"paged KV cache ({capacity.tokens})."]
        if flags["backend"] == "pytorch":
            lines.append(f"{trt} [I] max_seq_len={max_seq_len}, "
                         f"max_num_requests={settings.max_num_seqs}, "
                         f"max_num_tokens={settings.max_num_batched_tokens}, "
                         f"max_batch_size={settings.max_num_seqs}")
        return lines


def _int(value: FlagValue, field: str, low: int = 0) -> int:
    """A whole-number flag, bounded (bounds.number): finite, few digits, at least `low`."""
    return int(number(field, value, low=low, high=SIZE.limit, integer=True))


# --- the command line -----------------------------------------------------------------------

# trtllm-serve's options (click, tensorrt_llm/commands/serve.py); dashes read as underscores.
_VALUED: dict[str, str] = {
    "backend": "backend", "max_batch_size": "max_batch_size",
    "max_num_tokens": "max_num_tokens", "max_seq_len": "max_seq_len",
    "max_beam_width": "max_beam_width", "tp_size": "tp", "tensor_parallel_size": "tp",
    "pp_size": "pp", "pipeline_parallel_size": "pp", "ep_size": "ep",
    "moe_expert_parallel_size": "ep", "free_gpu_memory_fraction": "free_gpu_memory_fraction",
    "kv_cache_free_gpu_memory_fraction": "free_gpu_memory_fraction",
    "tokens_per_block": "tokens_per_block", "extra_llm_api_options": "extra_llm_api_options",
    "config": "extra_llm_api_options",
}
_SWITCHES = {"fail_fast_on_attention_window_too_large": "fail_fast_on_attention_window_too_large"}


def parse_trtllm_serve(argv: list[str]) -> LaunchCommand:
    """Read a `trtllm-serve [serve] MODEL …` command line (after the program name)."""
    model = ""
    values: dict[str, str] = {}
    switches: set[str] = set()
    understood: list[str] = []
    ignored: list[str] = []
    i = 1 if argv[:1] == ["serve"] else 0  # `trtllm-serve serve MODEL` or `trtllm-serve MODEL`
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-"):
            if model:
                ignored.append(token)
            else:
                model = token
            i += 1
            continue
        name, eq, inline = token.partition("=")
        key = name.lstrip("-").replace("-", "_")
        if key in _VALUED:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
            else:
                raise InputError("launch", f"{name} needs a value")
            values[_VALUED[key]] = value
            understood.append(f"{name} {value}")
        elif key in _SWITCHES:
            switches.add(_SWITCHES[key])
            understood.append(name)
        else:
            ignored.append(token)
            if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                ignored.append(argv[i + 1])
                i += 1
        i += 1
    if not model:
        raise InputError("launch", "trtllm-serve needs a MODEL (a name, checkpoint or engine "
                         "directory)")
    flags: dict[str, FlagValue] = {}
    if "backend" in values:
        backend = {"trt": "tensorrt"}.get(values["backend"].lower(), values["backend"].lower())
        if backend not in BACKENDS:
            raise InputError("backend", f"{values['backend']!r}: use pytorch or tensorrt")
        flags["backend"] = backend
    for key in ("max_beam_width", "tokens_per_block"):
        if key in values:
            flags[key] = _int(values[key], key)
    fraction = None
    if "free_gpu_memory_fraction" in values:
        try:
            fraction = float(values["free_gpu_memory_fraction"])
        except ValueError:
            raise InputError("free_gpu_memory_fraction",
                             f"{values['free_gpu_memory_fraction']!r} is not a number") from None
        if not 0 < fraction < 1:
            raise InputError("free_gpu_memory_fraction", f"{fraction} must be above 0 and "
                             "below 1")
    if "extra_llm_api_options" in values:
        flags["extra_llm_api_options"] = values["extra_llm_api_options"]
    if switches:
        flags["fail_fast_on_attention_window_too_large"] = True
    ints = {key: _int(values[key], key) for key in
            ("max_batch_size", "max_num_tokens", "max_seq_len", "tp", "pp", "ep")
            if key in values}
    return LaunchCommand(
        engine="trtllm", model=model, tp=ints.get("tp", 1) or 1, pp=ints.get("pp", 1) or 1,
        ep=ints.get("ep"), context=ints.get("max_seq_len"),
        max_num_seqs=ints.get("max_batch_size"), max_num_batched_tokens=ints.get("max_num_tokens"),
        memory_fraction=fraction, flags=flags, understood=understood, ignored=ignored)


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(field, f"{value!r} is not a number")
    try:
        return float(value)
    except ValueError:
        raise InputError(field, f"{value!r} is not a number") from None


def extra_options(command: LaunchCommand, options: dict[str, Any]) -> LaunchCommand:
    """`command` with the settings of its `--extra_llm_api_options` YAML applied (the YAML
    read by the caller): `kv_cache_config` (free_gpu_memory_fraction, tokens_per_block,
    max_tokens, max_gpu_total_bytes, dtype), `max_batch_size`, `max_num_tokens`,
    `max_seq_len`, `tensor_parallel_size`, `pipeline_parallel_size`, `backend`. The YAML
    overrides the command line, as `update_llm_args_with_extra_dict` does."""
    if not isinstance(options, dict):
        raise InputError("extra_llm_api_options", "must be a mapping of LLM API options")
    update: dict[str, Any] = {}
    flags = dict(command.flags)
    flags.pop("extra_llm_api_options", None)
    understood = list(command.understood)
    kv = options.get("kv_cache_config") or {}
    if not isinstance(kv, dict):
        raise InputError("kv_cache_config", "must be a mapping")
    if "free_gpu_memory_fraction" in kv:
        update["memory_fraction"] = _number(kv["free_gpu_memory_fraction"],
                                            "free_gpu_memory_fraction")
        understood.append("kv_cache_config.free_gpu_memory_fraction")
    elif "kv_cache_free_gpu_memory_fraction" in options:  # the command-line option's name
        update["memory_fraction"] = _number(options["kv_cache_free_gpu_memory_fraction"],
                                            "kv_cache_free_gpu_memory_fraction")
        understood.append("kv_cache_free_gpu_memory_fraction")
    if not 0 < update.get("memory_fraction", 0.5) < 1:
        raise InputError("free_gpu_memory_fraction", f"{update['memory_fraction']} must be "
                         "above 0 and below 1")
    if "tokens_per_block" in kv:
        flags["tokens_per_block"] = _int(kv["tokens_per_block"], "tokens_per_block")
        understood.append("kv_cache_config.tokens_per_block")
    for key in ("max_tokens", "max_gpu_total_bytes"):
        if kv.get(key) is not None:
            flags[key] = _int(kv[key], key)
            understood.append(f"kv_cache_config.{key}")
    if kv.get("dtype") not in (None, "auto"):
        update["kv_dtype"] = str(kv["dtype"])
        understood.append("kv_cache_config.dtype")
    for key, field in (("max_batch_size", "max_num_seqs"),
                       ("max_num_tokens", "max_num_batched_tokens"),
                       ("max_seq_len", "context"), ("tensor_parallel_size", "tp"),
                       ("pipeline_parallel_size", "pp")):
        if options.get(key) is not None:
            update[field] = _int(options[key], key)
            understood.append(key)
    if "backend" in options:
        backend = str(options["backend"]).lower()
        backend = {"trt": "tensorrt"}.get(backend, backend)
        if backend not in BACKENDS:
            raise InputError("backend", f"{options['backend']!r}: use pytorch or tensorrt")
        flags["backend"] = backend
        understood.append("backend")
    if options.get("speculative_config") is not None:  # speculative_launch.py
        from llm_inventory.engine.serving.speculative_launch import trtllm_read

        update["speculative"] = trtllm_read(options["speculative_config"])
        understood.append("speculative_config")
    return command.model_copy(update={**update, "flags": flags, "understood": understood})


ENGINE = TensorRtLlm()
