"""SGLang's KV accounting, shared by its era modules (`sglang*.py`); each era sets its rules.

Read from SGLang's own source (the released `sglang` wheels, python/sglang/srt/...):
- Free memory: `ModelRunner.init_torch_distributed` records the free memory after the
  distributed init, the minimum over ranks (`get_available_gpu_memory(distributed=True)`).
  `ModelRunner.profile_max_num_token` (model_executor/model_runner.py; from 0.5.15
  `MemoryPoolConfigurator`, model_executor/pool_configurator.py) measures the free memory
  again after the weights: rest = free after weights − free at init × (1 − mem_fraction_static);
  max_total_num_tokens = rest ÷ cell size, capped by --max-total-tokens, floored to the page
  size, the minimum over pipeline ranks (`init_memory_pool`).
- Cell size: per layer on one rank, K and V of kv_heads ÷ tp (at least one) heads × head_dim
  × the KV dtype; an MLA cell is one latent (kv_lora_rank + qk_rope_head_dim) per layer, no ×2
  and not divided by tp. The K and V buffers each hold #tokens + page size slots
  (`MHATokenToKVPool._create_buffers`, `MLATokenToKVPool`, mem_cache/memory_pool.py), and
  "KV Cache is allocated" prints their sizes in GiB labelled GB.
- Hybrid sliding window (from 0.4.10): full and sliding layers get their own pools;
  full_tokens = rest ÷ (full cell + swa_full_tokens_ratio × sliding cell), swa_tokens =
  full_tokens × ratio (default 0.8), each floored to the page (`set_num_token_hybrid`,
  `HybridSWAPoolConfigurator`).
- Mamba / linear attention: the state pool is taken from rest first, max_mamba_cache_size
  slots of one request's state each: --max-mamba-cache-size, else --max-running-requests, else
  512 (0.5.3, `init_memory_pool`); from 0.5.6 with the radix cache on, rest ×
  mamba_full_memory_ratio ÷ (1 + ratio) (default 0.9) (`handle_max_mamba_cache`).
- max_running_requests: min(--max-running-requests or max_total_num_tokens ÷ 2, the request
  pool), the pool being min(max(⌊max_total ÷ context_len × 512⌋, 2048), 4096) slots (+1 up to
  0.4.6) (`TpModelWorker.__init__`, managers/tp_worker.py; `resolve_max_num_reqs`).
- The default mem_fraction_static is each era's (see `default_fraction`), from the GPU's
  nvidia-smi total in MiB (`get_nvgpu_memory_capacity`) and the TP·PP size.
- `--quantization fp8` quantizes a 16-bit checkpoint's linear weights to FP8 as they load
  (`Fp8Config`, layers/quantization/fp8.py); other schemes are the checkpoint's own.

Estimates (not SGLang's rules; labelled and bounded by the tests against real start-ups):
the free memory at init is the runtime total less a CUDA context and the distributed init;
weight loading costs a little beyond the tensors; nvidia-smi's total is the runtime's plus
about 460 MiB (see `InitModel`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from llm_inventory.bounds import RAW_NUMBER, number
from llm_inventory.engine.offload import OffloadRules
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
)
from llm_inventory.engine.serving.feature_rules import SGLANG_LORA, SGLANG_MM
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan
from llm_inventory.engine.serving.sglang_offload import SglangOffload
from llm_inventory.engine.serving.speculative_launch import SGLANG_FLAGS, sglang_read
from llm_inventory.engine.speculative import Speculative
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device, MemoryBasis
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import GIB, MIB

FractionRule = Literal["tp", "tp_large", "parallel", "gpu_table", "reserve"]
TierRule = Literal["v04", "v047", "v048", "v053", "v0520"]
MambaRule = Literal["slots", "ratio"]

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import DraftRule


class InitModel(BaseModel):
    """What start-up costs beyond the tensors, per worker (estimates, from SGLang logs).

    The CUDA context before "Init torch distributed" (0.27 GiB on an L4, about 0.5 GiB on
    H100/H200), the distributed init ("Init torch distributed ends. mem usage": 0.09 GiB on one
    GPU, 0.13 GiB over PCIe at TP 4, 2.01 GiB over NVSwitch at TP 8, NCCL and custom
    all-reduce buffers), and what "Load weight end. mem usage" adds to the tensors (0.02–0.15
    GiB on one GPU, 0.28 GiB at TP 4: kernels and the first collectives).
    """

    model_config = ConfigDict(frozen=True)

    context: int = int(0.30 * GIB)
    dist_single: int = int(0.05 * GIB)
    dist_pcie: int = int(0.13 * GIB)
    dist_fabric: int = int(2.0 * GIB)
    load_single: int = int(0.10 * GIB)
    load_parallel: int = int(0.25 * GIB)
    driver_extra_mib: int = 460  # nvidia-smi minus runtime total: H100 469, RTX 4090 357


def switched_fabric(device: Device) -> bool:
    """Whether every GPU of a node reaches every other through a switch (NVSwitch, NVLink
    Switch trays) or a full mesh (Infinity Fabric), where NCCL and all-reduce buffers grow."""
    link = (device.intra_node_link or "").lower()
    return "switch" in link or "infinity fabric" in link


class SglangSettings(EngineSettings):
    """SGLang's settings on one device: the device facts its rules read, resolved once.

    `memory_fraction` is the asked --mem-fraction-static, or the default at TP 1, PP 1 (the
    default depends on the split; `SglangEngine.fraction` resolves it per shape).
    """

    total_bytes: int
    gpu_mem_mib: float  # nvidia-smi's total, as SGLang reads it (estimated from the runtime's)
    fabric: bool
    fraction_asked: bool
    chunked_prefill_size: int
    max_prefill_tokens: int = 16384
    page_size: int = 1
    max_total_tokens: int | None = None
    max_running_requests: int | None = None
    cuda_graph_max_bs: int | None = None
    swa_full_tokens_ratio: float = 0.8
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    disable_radix_cache: bool = False
    # speculative decoding: the tokens each request slot adds to the profiled pool for its
    # drafts and verification (speculative_num_steps × eagle_topk + num_draft_tokens)
    speculative_tokens_per_request: int = 0
    # a multimodal model's scale of the default fraction (`ServerArgs.adjust_mem_fraction_for_vlm`)
    vision_factor: float = 1.0


class SglangCapacity(KvCapacity):
    """What one worker's SGLang pool holds, with the figures its start-up lines print."""

    latent: bool
    k_bytes: int
    v_bytes: int
    swa_tokens: int = 0
    swa_k_bytes: int = 0
    swa_v_bytes: int = 0
    mamba_slots: int = 0
    max_running_requests: int = 0


@dataclass(frozen=True, slots=True)
class TokenPool(PoolLayout):
    """One worker's token pool: a cell per token of every layer, floored to the page."""

    page: int  # bytes of one token (full cell + ratio × sliding cell); 0: nothing per token
    fixed: int  # bytes of one request's Mamba / linear-attention state
    full_cell: int
    swa_cell: int
    swa_ratio: float
    latent: bool
    page_size: int
    context: int
    max_total_tokens: int | None
    mamba_rule: MambaRule
    mamba_slots_asked: int | None
    mamba_ratio: float
    max_running_asked: int | None
    request_extra: int
    speculative_per_request: int = 0

    def _mamba(self, rest: int) -> tuple[int, int]:
        """(slots, bytes) of the Mamba state pool taken from `rest`."""
        if not self.fixed:
            return 0, 0
        if self.mamba_slots_asked is not None:
            slots = self.mamba_slots_asked
        elif self.mamba_rule == "ratio":
            budget = rest * self.mamba_ratio / (1 + self.mamba_ratio)
            slots = int(budget // self.fixed)
        else:
            slots = self.max_running_asked or 512
        return max(0, slots), max(0, slots) * self.fixed

    def _figures(self, pool_bytes: int) -> tuple[int, int, int]:
        """(full tokens, sliding tokens, Mamba slots) of a pool of `pool_bytes`."""
        rest = max(0, pool_bytes)
        slots, state = self._mamba(rest)
        rest = max(0, rest - state)
        if not self.page:
            return 0, 0, slots
        tokens = int(rest // self.page)
        if self.speculative_per_request:
            # draft and verify tokens of every request slot, and 100 more, on top of the
            # profiled pool (model_runner.py init_memory_pool: draft_runner_cache_size)
            requests = self.max_running_asked or min(max(
                int(tokens / self.context * 512), 2048), 4096)
            tokens += requests * self.speculative_per_request + 100
        if self.max_total_tokens is not None:
            tokens = min(tokens, self.max_total_tokens)
        tokens = tokens // self.page_size * self.page_size
        swa = 0
        if self.swa_cell:
            swa = int(tokens * self.swa_ratio) // self.page_size * self.page_size
        return tokens, swa, slots

    def running(self, tokens: int, slots: int) -> int:
        """SGLang's max_running_requests for a pool of `tokens` (see module rules)."""
        pool = min(max(int(tokens / self.context * 512), 2048), 4096) + self.request_extra
        if self.max_running_asked is not None:
            running = min(self.max_running_asked, pool)
        else:
            running = min(tokens // 2, pool)
        return min(running, slots) if self.fixed else running

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        tokens, _, slots = self._figures(pool_bytes)
        if not self.page:
            return 0, 0, float(slots)
        concurrency = tokens / self.context
        if self.fixed:
            concurrency = min(concurrency, float(slots))
        return tokens, tokens, concurrency

    def capacity(self, pool_bytes: int) -> SglangCapacity:
        tokens, swa, slots = self._figures(pool_bytes)
        _, _, concurrency = self.measure(pool_bytes)
        slots_of = tokens + self.page_size if self.page else 0
        full = slots_of * self.full_cell
        k = full if self.latent else full // 2
        swa_bytes = (swa + self.page_size) * self.swa_cell if self.swa_cell else 0
        return SglangCapacity(
            blocks=tokens, tokens=tokens, max_concurrency=concurrency,
            bytes_per_token=self.full_cell + self.swa_cell, groups=1,
            request_blocks=self.context, page_bytes=self.page,
            fixed_bytes_per_request=self.fixed, latent=self.latent, k_bytes=k,
            v_bytes=0 if self.latent else full - k, swa_tokens=swa,
            swa_k_bytes=swa_bytes // 2, swa_v_bytes=swa_bytes - swa_bytes // 2,
            mamba_slots=slots, max_running_requests=self.running(tokens, slots) if tokens else 0,
            state_slots=slots if self.fixed else 0,
            state_slot_bytes=slots * self.fixed if self.fixed else 0,
            **self._best_slots(pool_bytes),
        )

    def _best_slots(self, pool_bytes: int) -> dict[str, int | float]:
        """The --max-mamba-cache-size at which the Mamba slots and the token pool hold the
        most requests at the context: the slots take `fixed` bytes each first, the tokens
        the rest (`_figures`), so the two meet near pool ÷ (fixed + cell × context)."""
        if not self.fixed or not self.page or not self.context:
            return {}
        near = int(max(0, pool_bytes) // (self.fixed + self.page * self.context))
        held = {n: replace(self, mamba_slots_asked=n).measure(pool_bytes)[2]
                for n in (max(0, near - 1), near, near + 1)}
        best = max(held, key=lambda n: (held[n], -n))
        return {"state_slots_best": best, "state_slots_best_concurrency": held[best]}


# --- the default fraction and the GPU-size tiers ------------------------------------------

def _tp_table(size: int) -> float:
    """0.88 … 0.79 by TP size (server_args.py `ServerArgs.__post_init__`, up to 0.4.7)."""
    for low, fraction in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
        if size >= low:
            return fraction
    return 0.88


def _gpu_table_reserve(gpu: float, parallel: int) -> float:
    """MiB the 0.4.8–0.5.2 table reserves (server_args.py `ServerArgs.__post_init__`)."""
    if gpu < 35 * 1024:
        return (2.8 + parallel / 10) * 1024
    if gpu < 90 * 1024:
        return (9.5 + parallel / 2) * 1024
    if gpu < 160 * 1024:
        return (12 + parallel / 2) * 1024
    return 32 * 1024


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """Token counts the prefill (piecewise) CUDA graphs capture up to `max_tokens`
    (`_generate_piecewise_cuda_graph_tokens`; `generate_prefill_cuda_graph_batch_sizes`)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_tokens + 1, 512)))
    return [s for s in sizes if s <= max_tokens]


def tier_defaults(rule: TierRule, gpu: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for a GPU of `gpu` MiB."""
    if rule in ("v04", "v047"):
        if rule == "v047" and gpu > 180_000:
            return 16384, 160
        if gpu < 25_000:
            return 2048, 8 if tp < 4 else 80
        return 8192, 160
    if rule == "v048":
        if gpu < 35 * 1024:
            return 2048, 8 if tp < 4 else 80
        return (8192 if gpu < 160 * 1024 else 16384), 160
    small = tp < 4
    if gpu < 20 * 1024:
        return 2048, 8
    if gpu < 35 * 1024:
        if rule == "v0520":
            return 4096, 48 if small else 160
        return 2048, 16 if small else 80
    if gpu < 60 * 1024:
        return 4096, 32 if small else 160
    if gpu < 160 * 1024:
        return 8192, 256 if small else 512
    return 16384, 512


# --- flags -------------------------------------------------------------------------------

# Engine flags placement accepts (SGLang's option names, snake_case) and their types.
FLAG_TYPES: dict[str, type] = {
    "mem_fraction_static": float, "context_length": int, "chunked_prefill_size": int,
    "max_running_requests": int, "page_size": int, "max_total_tokens": int,
    "max_prefill_tokens": int, "cuda_graph_max_bs": int, "swa_full_tokens_ratio": float,
    "max_mamba_cache_size": int, "mamba_full_memory_ratio": float,
    "disable_radix_cache": bool,
}

# Command-line spellings: option → (flag name, or a LaunchCommand field after "=").
_VALUE_OPTIONS: dict[str, str] = {
    "--model-path": "=model", "--model": "=model",
    "--tp": "=tp", "--tp-size": "=tp", "--tensor-parallel-size": "=tp",
    "--pp": "=pp", "--pp-size": "=pp", "--pipeline-parallel-size": "=pp",
    "--dp": "=dp", "--dp-size": "=dp", "--data-parallel-size": "=dp",
    "--ep": "=ep", "--ep-size": "=ep", "--expert-parallel-size": "=ep",
    "--dtype": "=dtype", "--kv-cache-dtype": "=kv_dtype", "--quantization": "=quantization",
    "--mem-fraction-static": "mem_fraction_static", "--context-length": "context_length",
    "--chunked-prefill-size": "chunked_prefill_size",
    "--max-running-requests": "max_running_requests", "--page-size": "page_size",
    "--max-total-tokens": "max_total_tokens", "--max-prefill-tokens": "max_prefill_tokens",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--swa-full-tokens-ratio": "swa_full_tokens_ratio",
    "--max-mamba-cache-size": "max_mamba_cache_size",
    "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
}
_SWITCHES: dict[str, str] = {"--disable-radix-cache": "disable_radix_cache"}
_INT_FIELDS = {"tp", "pp", "dp", "ep"}
_KV_DTYPES = {"auto": None, "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16",
              "float16": "fp16", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def _number(option: str, text: str, kind: type) -> FlagValue:
    noun = "a whole number" if kind is int else "a number"
    try:  # bounded before conversion: finite, few digits (bounds.number)
        value: FlagValue = number(option, text, low=-RAW_NUMBER, integer=kind is int)
    except InputError as exc:
        raise InputError("launch", f"{option} takes {noun}: {exc.message}") from None
    if kind is int and int(value) < (-1 if option == "--chunked-prefill-size" else 1):
        raise InputError("launch", f"{option} must be at least 1, got {text}")
    if option in ("--mem-fraction-static",) and not 0 < float(value) <= 1:
        raise InputError("launch", f"{option} must be in (0, 1], got {text}")
    if option.endswith("-ratio") and float(value) < 0:
        raise InputError("launch", f"{option} must not be negative, got {text}")
    return value


def parse_sglang_argv(argv: list[str]) -> LaunchCommand:
    """SGLang's launch_server / `sglang serve` options (server_args.py
    `ServerArgs.add_cli_args`); `sglang serve MODEL` takes the model first (cli/serve.py)."""
    fields: dict[str, object] = {}
    flags: dict[str, FlagValue] = {}
    understood: list[str] = []
    ignored: list[str] = []
    dp_attention = False
    speculative: dict[str, str] = {}
    offload: dict[str, str | None] = {}  # sglang_offload.py reads them
    args = list(argv)
    if args and not args[0].startswith("-"):
        fields["model"] = args.pop(0)
        understood.append("MODEL")
    from llm_inventory.engine.serving.feature_flags import SGLANG, FeatureReader

    features = FeatureReader(SGLANG)
    i = 0
    while i < len(args):
        arg = args[i]
        option, eq, inline = arg.partition("=")
        if not arg.startswith("-") and features.take_word(arg):
            i += 1
            continue
        if features.takes(option):
            if option == SGLANG.enable and not eq:
                features.take(option, None)
                i += 1
            elif eq:
                features.take(option, inline)
                i += 1
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                features.take(option, args[i + 1])
                i += 2
            else:
                raise InputError("launch", f"{option} needs a value")
            continue
        features.take("", None)  # any other option ends a several-valued one
        if option in _SWITCHES and not eq:
            flags[_SWITCHES[option]] = True
            understood.append(option)
            i += 1
            continue
        if option == "--enable-dp-attention" and not eq:
            dp_attention = True
            understood.append(option)
            i += 1
            continue
        if option in SGLANG_FLAGS:  # speculative decoding, read together at the end
            if eq:
                value, i = inline, i + 1
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                value, i = args[i + 1], i + 2
            else:
                raise InputError("launch", f"{option} needs a value")
            speculative[option] = value
            understood.append(f"{option} {value}")
            continue
        if option in SglangOffload.options and not SglangOffload.options[option] and not eq:
            offload[option] = None
            understood.append(option)
            i += 1
            continue
        if option not in _VALUE_OPTIONS and option not in SglangOffload.options:
            if not arg.startswith("-"):
                raise InputError("launch", f"unexpected argument {arg!r} (SGLang takes the "
                                 "model as --model-path)")
            takes = not eq and i + 1 < len(args) and not args[i + 1].startswith("--")
            ignored.append(f"{arg} {args[i + 1]}" if takes else arg)
            i += 2 if takes else 1
            continue
        if eq:
            value, i = inline, i + 1
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            value, i = args[i + 1], i + 2
        else:
            raise InputError("launch", f"{option} needs a value")
        if not value:
            raise InputError("launch", f"{option} needs a value")
        understood.append(f"{option} {value}")
        if option in SglangOffload.options:
            offload[option] = value
            continue
        target = _VALUE_OPTIONS[option]
        if target.startswith("="):
            name = target[1:]
            if name in _INT_FIELDS:
                fields[name] = _number(option, value, int)
            elif name == "kv_dtype":
                if value.lower() not in _KV_DTYPES:
                    raise InputError("launch", f"{option} {value!r} is not one of "
                                     + ", ".join(_KV_DTYPES))
                fields[name] = _KV_DTYPES[value.lower()]
            elif name == "dtype":
                fields[name] = None if value == "auto" else value
            elif name == "quantization":
                if value.lower() != "fp8":
                    # a checkpoint's own scheme is read from the checkpoint
                    understood.pop()
                    ignored.append(f"{option} {value}")
                    continue
                # weights quantized to FP8 as they load (`Fp8Config`,
                # python/sglang/srt/layers/quantization/fp8.py), as vLLM's flag does
                fields["dtype"] = "fp8"
            else:
                fields[name] = value
        else:
            flags[target] = _number(option, value, FLAG_TYPES[target])
    if "model" not in fields:
        raise InputError("launch", "an SGLang command needs --model-path")
    common = {"mem_fraction_static": "memory_fraction", "context_length": "context",
              "chunked_prefill_size": "max_num_batched_tokens",
              "max_running_requests": "max_num_seqs", "page_size": "block_size"}
    for flag, name in common.items():
        if flag in flags:
            fields[name] = flags.pop(flag)
    if dp_attention:
        _dp_attention(fields)
    if speculative:
        fields["speculative"] = sglang_read(speculative)
    fields.update(features.fields())
    understood += features.texts
    if offload:
        fields["offload"] = SglangOffload().read(offload, int(str(fields.get("tp", 1)))
                                                 * int(str(fields.get("pp", 1))))
    return LaunchCommand.model_validate({"engine": "sglang", **fields, "flags": flags,
                                         "understood": understood, "ignored": ignored})


def _dp_attention(fields: dict[str, object]) -> None:
    """--enable-dp-attention read as SGLang runs it (server_args.py
    `_handle_data_parallelism`): --tp-size is every device of the instance, split into
    --dp-size attention ranks of tp ÷ dp devices each (tp_size % dp_size == 0 asserted);
    the MoE layers span all tp-size devices; --chunked-prefill-size and
    --max-running-requests are divided by dp_size per rank. Placement's shape for it:
    tp = tp_size ÷ dp attention-TP, ep = tp_size, dp engines (as vLLM's --data-parallel-size
    with --enable-expert-parallel reads)."""
    tp, dp = int(str(fields.get("tp", 1))), int(str(fields.get("dp", 1)))
    if dp <= 1:  # SGLang turns DP attention off at dp_size 1
        return
    if tp % dp:
        raise InputError("launch", f"--enable-dp-attention needs --tp-size ({tp}) to be a "
                         f"multiple of --dp-size ({dp}): SGLang splits the tp devices into "
                         "dp attention ranks")
    fields.update(tp=tp // dp, ep=tp)
    for name in ("max_num_seqs", "max_num_batched_tokens"):
        value = fields.get(name)
        if isinstance(value, int) and value > 0:
            fields[name] = max(1, value // dp)


COMMON_RULES: tuple[tuple[str, str], ...] = (
    ("free memory: recorded after the distributed init, the minimum over ranks",
     "srt/model_executor/model_runner.py ModelRunner.init_torch_distributed"),
    ("rest = free after weights − free at init × (1 − mem_fraction_static); tokens = rest "
     "÷ cell, capped by max_total_tokens, floored to the page, minimum over PP ranks",
     "srt/model_executor/model_runner.py profile_max_num_token, init_memory_pool"),
    ("cell: K+V of kv_heads ÷ tp heads per layer; MLA one latent, no ×2, not ÷ tp; K and V "
     "buffers hold #tokens + page size slots",
     "srt/mem_cache/memory_pool.py MHATokenToKVPool, MLATokenToKVPool"),
    ("max_running_requests = min(asked or tokens ÷ 2, request pool of "
     "clamp(tokens ÷ context × 512, 2048, 4096))", "srt/managers/tp_worker.py"),
    ("free memory at init, load overhead, nvidia-smi total: estimates calibrated on "
     "SGLang start-ups", "llm_inventory/engine/serving/sglang_rules.py InitModel"),
)


# --- the engine --------------------------------------------------------------------------

class SglangEngine(ServingEngine):
    """SGLang in one accounting era; subclasses set the era's rules (class attributes)."""

    name = "sglang"
    lora_rule = SGLANG_LORA
    mm_rule = SGLANG_MM
    state_slots_knob = "--max-mamba-cache-size"
    summary = ("KV pool = mem_fraction_static × free memory after the distributed init − "
               "weights, in cells of one token (K and V of every layer), floored to the page")
    fraction_rule: ClassVar[FractionRule]
    tier_rule: ClassVar[TierRule]
    hybrid_swa: ClassVar[bool] = True
    mamba_rule: ClassVar[MambaRule] = "ratio"
    prefill_graph_reserve: ClassVar[bool] = False
    request_extra: ClassVar[int] = 0
    calibrated_on = "the public SGLang start-ups of 0.4 to 2026 builds, 16 GB cards to ~180 GB"
    vocab_padding = 64  # DEFAULT_VOCAB_PADDING_SIZE, layers/vocab_parallel_embedding.py
    absorbs_mla = True  # w_kc / w_vc beside kv_b_proj, models/deepseek_v2.py post_load_weights
    programs = (("python", "-m", "sglang.launch_server"),
                ("python3", "-m", "sglang.launch_server"), ("sglang", "serve"))

    # the draft worker's weights and KV pool are budgeted inside mem_fraction_static (from
    # sglang#23862, merged 2026-04-27); before it the target pool was profiled before the
    # draft loaded and the draft pool (the same max_total_num_tokens) came on top, against
    # a flat reservation in server_args
    budgets_drafter: ClassVar[bool] = False

    def __init__(self, init: InitModel | None = None) -> None:
        self.init_model = init or InitModel()

    def draft_rule(self) -> DraftRule:
        """EAGLE/NEXTN/STANDALONE draft workers share the target's req_to_token and token
        indices, so the draft pool holds the target's token count
        (srt/model_executor/model_runner.py init_memory_pool: draft_runner_cache_size);
        whether its weights and KV are inside the budget is the era's `budgets_drafter`."""
        from llm_inventory.engine.speculative import DraftRule

        source = ("draft pool with the target's token count (srt/model_executor/"
                  "model_runner.py init_memory_pool, draft_runner_cache_size); ")
        if self.budgets_drafter:
            return DraftRule(weights_budgeted=True, kv_budgeted=True, draft_tps=(),
                             source=source + "draft weights and pool budgeted inside "
                             "mem_fraction_static (sglang#23862)")
        return DraftRule(weights_budgeted=False, kv_budgeted=False, draft_tps=(),
                         source=source + "profiled before the draft loaded: its weights "
                         "and pool come on top (before sglang#23862)")

    # --- settings ----------------------------------------------------------------------

    def gpu_mem_mib(self, device: Device) -> float:
        """nvidia-smi's total in MiB, as SGLang reads it (estimated from the runtime's)."""
        mib = device.memory_bytes / MIB
        if device.memory_basis != MemoryBasis.DRIVER:
            mib += self.init_model.driver_extra_mib
        return mib

    def settings(self, device: Device, asked: LaunchSettings) -> SglangSettings:
        flags = dict(asked.flags)
        for name, value in flags.items():
            if name not in FLAG_TYPES:
                raise InputError("engine_flags", f"{self.label} does not take {name!r}; known: "
                                 + ", ".join(FLAG_TYPES))
            kind = FLAG_TYPES[name]
            if kind is bool and not isinstance(value, bool) or kind is not bool and (
                    isinstance(value, bool) or not isinstance(value, int | float)):
                noun = {int: "a whole number", float: "a number"}.get(kind, "true or false")
                raise InputError("engine_flags", f"{name} takes {noun}, got {value!r}")
            if kind is not bool:  # the ranges a launch line's option is held to (_number)
                _number("--" + name.replace("_", "-"), str(value), kind)
        gpu = self.gpu_mem_mib(device)
        chunk, _ = tier_defaults(self.tier_rule, gpu, 1)
        chunk = int(flags.get("chunked_prefill_size") or asked.max_num_batched_tokens or chunk)
        fraction = flags.get("mem_fraction_static", asked.memory_fraction)
        page = int(flags.get("page_size") or asked.block_size or 1)
        running = flags.get("max_running_requests", asked.max_num_seqs)
        context = int(flags.get("context_length") or asked.context)
        prefill_budget = int(flags.get("max_prefill_tokens", 16384))
        # chunked_prefill_size -1 turns chunking off: a prefill batch then holds up to
        # max_prefill_tokens, and one prompt of any length is admitted alone (PrefillAdder,
        # srt/managers/schedule_policy.py); the step's token budget is never negative.
        step_tokens = chunk if chunk > 0 else max(prefill_budget, context)
        base = SglangSettings(
            max_model_len=context, max_num_batched_tokens=step_tokens,
            max_num_seqs=int(running) if running else 2048, block_size=page,
            memory_fraction=0.88, kv_dtype=asked.kv_dtype, flags=flags,
            total_bytes=device.memory_bytes, gpu_mem_mib=gpu, fabric=switched_fabric(device),
            fraction_asked=fraction is not None, chunked_prefill_size=chunk, page_size=page,
            max_prefill_tokens=prefill_budget,
            max_total_tokens=_opt_int(flags.get("max_total_tokens")),
            max_running_requests=int(running) if running is not None else None,
            cuda_graph_max_bs=_opt_int(flags.get("cuda_graph_max_bs")),
            swa_full_tokens_ratio=float(flags.get("swa_full_tokens_ratio", 0.8)),
            max_mamba_cache_size=_opt_int(flags.get("max_mamba_cache_size")),
            mamba_full_memory_ratio=float(flags.get("mamba_full_memory_ratio", 0.9)),
            disable_radix_cache=bool(flags.get("disable_radix_cache", False)),
        )
        resolved = float(fraction) if fraction is not None else self.fraction(base, 1, 1)
        return base.model_copy(update={"memory_fraction": resolved})

    def fraction(self, settings: SglangSettings, tp: int, pp: int, mla: bool = False) -> float:
        """mem_fraction_static for a TP × PP split: the asked one, or the era's default."""
        if settings.fraction_asked:
            return settings.memory_fraction
        # A reserve larger than the GPU (a huge chunked_prefill_size) makes the era's
        # formula negative: nothing is left for the pool, never less than nothing.
        own = max(0.0, self.default_fraction(settings, tp, pp, mla))
        return own * settings.vision_factor if settings.vision_factor != 1.0 else own

    def with_vision_factor(self, settings: EngineSettings, factor: float) -> EngineSettings:
        """The default mem_fraction_static scaled for a multimodal model's vision tower, as
        `ServerArgs.adjust_mem_fraction_for_vlm` does after the reserve formula (an asked
        fraction is kept as asked)."""
        if not isinstance(settings, SglangSettings) or settings.fraction_asked:
            return settings
        scaled = settings.model_copy(update={"vision_factor": factor})
        return scaled.model_copy(update={"memory_fraction": self.fraction(scaled, 1, 1)})

    def default_fraction(self, settings: SglangSettings, tp: int, pp: int,
                         mla: bool = False) -> float:
        """The era's default mem_fraction_static (server_args.py; see the era's rules)."""
        gpu, rule = settings.gpu_mem_mib, self.fraction_rule
        if rule == "tp":
            return _tp_table(tp)
        if rule == "tp_large":
            return _tp_table(tp) if gpu <= 81920 else (gpu - 13 * 1024) / gpu
        if rule == "parallel":
            fraction = _tp_table(tp * pp) if gpu <= 81920 else 0.88
            if gpu > 180_000:
                return 0.79
            if gpu > 96 * 1024:
                return min(fraction + 48 * 1024 * (1 - fraction) / gpu,
                           (gpu - 18 * 1024) / gpu)
            return fraction
        if rule == "gpu_table":
            return round((gpu - _gpu_table_reserve(gpu, tp * pp)) / gpu, 3)
        return round((gpu - self.reserved_mib(settings, tp, pp, mla)) / gpu, 3)

    def reserved_mib(self, settings: SglangSettings, tp: int, pp: int, mla: bool) -> float:
        """MiB the reserve formula (from 0.5.3) keeps for activations and CUDA graphs
        (server_args.py `_handle_gpu_memory_settings`; arg_groups/memory_hook.py)."""
        _, graph_bs = tier_defaults(self.tier_rule, settings.gpu_mem_mib, tp)
        graph_bs = settings.cuda_graph_max_bs or graph_bs
        reserved = 512 + max(settings.chunked_prefill_size, 2048) * 1.5
        reserved += graph_bs * 2 + tp * pp / 8 * 1024
        if self.prefill_graph_reserve:
            reserved += 1.5 * 1024 if mla else len(
                prefill_graph_sizes(settings.chunked_prefill_size)) * 8
        if settings.gpu_mem_mib > 60 * 1024:
            reserved = max(reserved, 10 * 1024)
        return reserved

    def context_limit(self, spec: ModelSpec) -> int | None:
        return spec.max_context

    def runtime_buffer_bytes(self, spec: ModelSpec, dtype: str) -> int:
        """Rotary cos/sin caches, cast to the model dtype as vLLM's (SGLang's
        layers/rotary_embedding.py `RotaryEmbedding._compute_cos_sin_cache`)."""
        from llm_inventory.engine.serving.vllm import ENGINE as VLLM

        return VLLM.runtime_buffer_bytes(spec, dtype)

    # --- memory ------------------------------------------------------------------------

    def free_at_init(self, settings: SglangSettings, tp: int, pp: int) -> int:
        """Free bytes after the distributed init (an estimate: total − context − init)."""
        m = self.init_model
        if tp * pp == 1:
            dist = m.dist_single
        else:
            dist = m.dist_fabric if settings.fabric else m.dist_pcie
        return settings.total_bytes - m.context - dist

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """Memory outside weights and KV: the init costs (estimate) and the (1 − fraction)
        share of the free memory SGLang leaves for activations and CUDA graphs."""
        s = _own(settings)
        free = self.free_at_init(s, shape.tp, shape.pp)
        load = (self.init_model.load_single if shape.tp * shape.pp == 1
                else self.init_model.load_parallel)
        headroom = int(free * (1 - self.fraction(s, shape.tp, shape.pp, shape.mla)))
        non_torch = s.total_bytes - free + load
        return ReserveEstimate(non_torch_bytes=non_torch, forward_peak_bytes=headroom,
                               sampler_peak_bytes=0, activation_bytes=headroom,
                               reserve_bytes=non_torch + headroom)

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        """rest = fraction × free at init − weights (and their load overhead)."""
        return device.memory_bytes - weight_bytes - reserve.reserve_bytes

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> TokenPool:
        s = _own(settings)
        full = swa = fixed = 0
        latent = any(layer.bytes_per_token for layer in layers) and not any(
            layer.split_kv for layer in layers if layer.bytes_per_token)
        for layer in layers:
            fixed += layer.fixed_bytes
            if self.hybrid_swa and layer.window is not None:
                swa += layer.bytes_per_token
            else:
                full += layer.bytes_per_token
        if not full and swa:  # every layer slides: one pool, no ratio
            full, swa = swa, 0
        ratio = s.swa_full_tokens_ratio if swa else 0.0
        cell = full + ratio * swa
        return TokenPool(
            page=math.ceil(cell) if cell else 0, fixed=fixed, full_cell=full, swa_cell=swa,
            swa_ratio=ratio, latent=latent, page_size=s.page_size, context=s.max_model_len,
            max_total_tokens=s.max_total_tokens, mamba_rule=self.mamba_rule,
            mamba_slots_asked=s.max_mamba_cache_size,
            mamba_ratio=s.mamba_full_memory_ratio if not s.disable_radix_cache else 0.0,
            max_running_asked=s.max_running_requests, request_extra=self.request_extra,
            speculative_per_request=s.speculative_tokens_per_request)

    def speculative_settings(self, settings: EngineSettings,
                             asked: Speculative) -> EngineSettings:
        """EAGLE, NEXTN and STANDALONE give the shared token pool headroom for every request
        slot's drafts (steps × topk) and verified tokens (num_draft_tokens), plus 100
        (python/sglang/srt/model_executor/model_runner.py ModelRunner.init_memory_pool,
        draft_runner_cache_size); N-gram drafting adds none."""
        if asked.method in ("ngram", "suffix"):
            return settings
        k = asked.num_speculative_tokens
        return settings.model_copy(update={"speculative_tokens_per_request": k + k + 1})

    # --- its own words -----------------------------------------------------------------

    def offload_rules(self) -> OffloadRules | None:
        from llm_inventory.engine.serving.sglang_offload import SglangOffload

        return SglangOffload()

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        return parse_sglang_argv(argv)

    def launch_lines(self, plan: LaunchPlan) -> list[LaunchLine]:
        from llm_inventory.engine.serving import sglang_line

        return sglang_line.write(plan)

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        """SGLang's lines (memory_pool.py `MHATokenToKVPool`, scheduler.py); GiB labelled GB."""
        if not isinstance(capacity, SglangCapacity):
            return []
        s = _own(settings)
        lines = []
        if capacity.swa_tokens:
            lines.append(f"Use Sliding window memory pool. full_layer_tokens={capacity.tokens}"
                         f", swa_layer_tokens={capacity.swa_tokens}")
            lines.append(f"KV Cache is allocated. #tokens: {capacity.swa_tokens}, "
                         f"K size: {capacity.swa_k_bytes / GIB:.2f} GB, "
                         f"V size: {capacity.swa_v_bytes / GIB:.2f} GB")
        if capacity.latent:
            lines.append(f"KV Cache is allocated. #tokens: {capacity.tokens}, "
                         f"KV size: {capacity.k_bytes / GIB:.2f} GB")
        else:
            lines.append(f"KV Cache is allocated. #tokens: {capacity.tokens}, "
                         f"K size: {capacity.k_bytes / GIB:.2f} GB, "
                         f"V size: {capacity.v_bytes / GIB:.2f} GB")
        lines.append(f"max_total_num_tokens={capacity.tokens}, "
                     f"chunked_prefill_size={s.chunked_prefill_size}, "
                     f"max_prefill_tokens={s.max_prefill_tokens}, "
                     f"max_running_requests={capacity.max_running_requests}, "
                     f"context_len={s.max_model_len}")
        return lines

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        """`init_memory_pool`'s RuntimeError when no token fits (MemoryPoolConfig from 0.5.15)."""
        if capacity.tokens > 0 or not capacity.page_bytes:
            return None
        message = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
        s = _own(settings)
        if s.fraction_asked:
            message += f" Current value: mem_fraction_static={s.memory_fraction}"
        return message


def _opt_int(value: FlagValue | None) -> int | None:
    return None if value is None else int(value)


def _own(settings: EngineSettings) -> SglangSettings:
    if not isinstance(settings, SglangSettings):
        raise TypeError("SGLang rules need the settings SGLang resolved")
    return settings
