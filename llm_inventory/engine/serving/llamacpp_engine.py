"""llama.cpp as a serving engine: its settings, layer offload, compute buffers and lines.

The KV memory rules are in `llamacpp_rules.py`; each era module (`llamacpp.py`,
`llamacpp_b7000.py` …) is this engine at the first build of its era. Rules, from llama.cpp's
source (ggml-org/llama.cpp):

- Layer offload (`llama_model::load_tensors`, src/llama-model.cpp): the last
  `-ngl` layers go to the GPUs (`i_gpu_start = max(n_layer − ngl, 0)`), the output layer
  too when `-ngl` exceeds the layer count; the input embeddings always stay on the CPU;
  layer `il` goes to the GPU whose cumulative `-ts` share first exceeds
  `(il − i_gpu_start) ÷ min(ngl, n_layer + 1)` (by free memory when `-ts` is not given:
  evenly, on identical devices). A tied output duplicates the embedding table on its GPU.
  `--n-cpu-moe N` keeps the expert tensors of the first N layers on the CPU
  (common/arg.cpp, tensor buffer overrides). A layer's KV lives where the layer does.
- Splits: by layer (`-sm layer`, the default); row split and expert parallelism are not
  modelled.
- Defaults (common/common.h `common_params`): `-ub 512`, `-b 2048`, f16 cache; from b7000
  (the era of PR #17046) `-fa auto`, every layer offloaded and llama-server's 4 unified
  slots; before, flash attention off, no layer offloaded and one slot; from b7880 `-c 0`
  (the model's training context), before 4096. These defaults arrived between eras' first
  builds; each era answers as its first build does. ik_llama.cpp: `-fa` on, `-mla 3`, no
  layer offloaded (`gpt_params`, common/common.h). `--fit` (on by default from about
  b7400; modelled in the b7880 era): when the command leaves `-c` out, the context is
  lowered to the longest whose caches leave `--fit-target` (1024 MiB) free, not below
  `--fit-ctx` (4096); `-c N` and `-c 0` are kept. Its other move, layers and experts to
  the CPU, is not modelled: below `--fit-ctx` the start-up error stands.
- Compute buffers: the worst-case graph at `n_ubatch` tokens (`llama_context::graph_reserve`)
  — an estimate: the largest of the f32 logits (the device holding the output), the f32
  score matrix n_kv × n_ubatch × heads without flash attention, and the widest MLP
  activations, plus the attention output; with a CUDA context per device.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from llm_inventory.bounds import SIZE, number
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.engine.serving import llamacpp_rules as kv
from llm_inventory.engine.serving.base import (
    EngineSettings,
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
from llm_inventory.engine.serving.feature_rules import LLAMACPP_LORA
from llm_inventory.engine.serving.ggml_types import (
    FILE_TYPES,
    GGML_TYPES,
    KV_CACHE_TYPES,
    bits_per_value,
    kv_cache_type,
)
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan
from llm_inventory.engine.speculative import Speculative
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import MIB

if TYPE_CHECKING:
    from llm_inventory.engine.device_weights import WeightLayout
    from llm_inventory.engine.speculative import DraftRule

CUDA_CONTEXT = 300 * MIB  # CUDA context and cuBLAS workspace per device (an estimate)
ALL = -1  # n_gpu_layers: every layer

FLAGS = ("ctx_size", "n_gpu_layers", "cache_type_k", "cache_type_v", "parallel",
         "ubatch_size", "batch_size", "flash_attn", "swa_full", "n_cpu_moe", "tensor_split",
         "split_mode", "kv_unified", "mla_use", "fit", "fit_target", "fit_ctx",
         "context_left_out", "no_kv_offload")


def _f32(x: float) -> float:
    """`x` rounded to float32, as llama.cpp computes its split points."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def split_points(shares: Sequence[float]) -> list[float]:
    """Cumulative, normalised split points of `-ts` shares, in float32."""
    total, points = 0.0, []
    for share in shares:
        total = _f32(total + share)
        points.append(total)
    return [_f32(p / total) for p in points]


def layer_devices(n_layer: int, n_gpu_layers: int, shares: Sequence[float]) -> list[int | None]:
    """The GPU of each layer and of the output layer (index n_layer); None: the CPU."""
    ngl = n_layer + 1 if n_gpu_layers < 0 else n_gpu_layers
    start = max(n_layer - ngl, 0)
    active = min(ngl, n_layer + 1) if shares else 0
    points = split_points(shares) if shares else []
    out: list[int | None] = []
    for il in range(n_layer + 1):
        if il < start or il - start >= active:
            out.append(None)
            continue
        x = _f32((il - start) / active)
        out.append(min(next((i for i, p in enumerate(points) if p > x), len(points) - 1),
                       len(points) - 1))
    return out


def _shares(settings: EngineSettings, gpus: int) -> list[float]:
    text = str(settings.flags.get("tensor_split") or "")
    given = [float(x) for x in text.replace("/", ",").split(",") if x.strip()] if text else []
    if not given or not any(given):
        return [1.0] * gpus
    return (given + [0.0] * gpus)[:gpus]


class LlamaCpp(ServingEngine):
    """llama.cpp at build `build` (see the module and `llamacpp_rules.py`)."""

    name = "llamacpp"
    fork: ClassVar[str] = "upstream"
    build: ClassVar[int] = 7880
    versions = "b7880 onward"
    version = "7880"
    label = "llama.cpp b7880"
    lora_rule = LLAMACPP_LORA
    summary = ("KV = cells × Σ cached layers (K row + V row) in the cache types, no profiling; "
               "layers offloaded with -ngl, split by -ts; compute buffers estimated")
    calibrated_on = ("the compute buffers of the Qwen3-0.6B/1.7B CPU and Phi-3-mini CUDA "
                     "start-ups (KV needs none: it is exact)")
    kv_from_context = True
    rules = (
        ("KV = Σ layers ggml_row_size(type_k, n_embd_k_gqa) + ggml_row_size(type_v, …) per "
         "cell × cells × streams", "src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache"),
        ("cells: n_ctx padded to 256 (from b7000), else 256 with flash attention, 32 "
         "without; pad(n_ctx ÷ n_seq) per stream when the cache is split",
         "src/llama-context.cpp llama_context::llama_context; src/llama-model.cpp "
         "create_memory; src/llama-kv-cache.cpp get_padding"),
        ("sliding layers: pad(min(n_ctx, n_swa × n_seq + n_ubatch), 256) cells unless "
         "--swa-full", "src/llama-kv-cache-iswa.cpp llama_kv_cache_iswa"),
        ("MLA: one latent row (kv_lora_rank + rope) as K, no V from b7880, V = the "
         "kv_lora_rank latent from b5140", "src/llama-kv-cache.cpp (PR #19067, #12801)"),
        ("recurrent state: R and S rows in f32 per sequence",
         "src/llama-memory-recurrent.cpp llama_memory_recurrent"),
        ("quantized cache types by ggml blocks (q8_0: 34 bytes per 32 values)",
         "ggml/src/ggml.c type_traits"),
        ("offload: the last -ngl layers on the GPUs, split by -ts; embeddings on the CPU; "
         "--n-cpu-moe keeps the first N layers' experts on the CPU",
         "src/llama-model.cpp llama_model::load_tensors; common/arg.cpp"),
        ("compute buffers: worst-case graph at n_ubatch (estimate: logits, score matrix, "
         "MLP activations)", "src/llama-context.cpp llama_context::graph_reserve"),
        ("-nkvo: every layer's K and V in one CPU buffer, none on the GPUs",
         "src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache (offload ? dev_layer : cpu)"),
        ("--fit (on from the b7880 era): a context the command leaves out is lowered to the "
         "longest that leaves --fit-target (1024 MiB) free, not below --fit-ctx (4096); "
         "-c N and -c 0 are kept; its layer moves to the CPU are not modelled",
         "common/fit.cpp common_fit_params (earlier src/llama.cpp llama_params_fit); "
         "common/arg.cpp; common/common.h common_params fit_params*"),
    )
    disaggregates = False

    def estimate_note(self, settings: EngineSettings) -> str | None:
        nkvo = ("; with -nkvo the caches are in host memory and attention runs on the CPU, "
                "which the timing does not model") if settings.flags.get("no_kv_offload") else ""
        return ("weights and KV bytes are exact (llama.cpp allocates what the context asks); "
                "the compute buffers (worst-case graph at "
                f"{settings.flags['ubatch_size']} tokens) and the CUDA context are "
                f"estimates{nkvo}")

    programs: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("llama-server",), ("./llama-server",), ("llama-cli",), ("./llama-cli",),
        ("./build/bin/llama-server",), ("./build/bin/llama-cli",))

    # --- defaults of this build -----------------------------------------------------------

    @classmethod
    def upstream(cls, at: int) -> bool:
        return cls.fork == "upstream" and cls.build >= at

    @classmethod
    def defaults(cls) -> dict[str, FlagValue]:
        """The settings this build uses when the command line leaves them out."""
        modern = cls.upstream(7000)
        ik = cls.fork == "ik"
        return {
            "ctx_size": 0 if cls.upstream(7880) or ik else 4096,
            "n_gpu_layers": ALL if modern else 0,
            "cache_type_k": "f16", "cache_type_v": "f16",
            "parallel": 4 if modern else 1,
            "kv_unified": modern,
            "ubatch_size": 512, "batch_size": 2048,
            "flash_attn": "auto" if modern else ("on" if ik else "off"),
            "swa_full": False, "n_cpu_moe": 0, "tensor_split": "", "split_mode": "layer",
            "mla_use": 3 if ik else 0,
            # `--fit` (common/common.h `common_params`: fit_params on, fit_params_target
            # 1024 MiB a device, fit_params_min_ctx 4096), upstream from b7880's era
            "fit": cls.upstream(7880), "fit_target": 1024, "fit_ctx": 4096,
            # the command line gives no -c (set by `parse_llamacpp`): the context --fit may
            # lower; placement's --context is a -c
            "context_left_out": False,
            "no_kv_offload": False,  # -nkvo: every layer's caches in host memory
        }

    # --- settings -------------------------------------------------------------------------

    def draft_rule(self) -> DraftRule:
        """llama-server loads the draft (-md) as a second model with -ngld layers on the
        GPUs and a context of -cd cells, by default the target's per-sequence context
        for each slot (tools/server/server.cpp load_model: params_dft.n_ctx = n_ctx ÷
        n_parallel, later llama_n_ctx_seq); nothing is profiled: both are allocated as
        asked, so the device must hold both."""
        from llm_inventory.engine.speculative import DraftRule

        return DraftRule(weights_budgeted=True, kv_budgeted=True, draft_tps=(), source=(
            "draft model loaded beside the target, its context the target's cells per slot "
            "(tools/server/server.cpp load_model, params_dft.n_ctx)"))

    def draft_cache(self, flags: dict[str, FlagValue],
                    asked: Speculative) -> dict[str, object]:
        """The draft context's cache types are its own: -ctkd/-ctvd, F16 unless given,
        whatever -ctk/-ctv the target has (common/common.h common_params_speculative_draft
        cache_type_k/cache_type_v = GGML_TYPE_F16)."""
        k, v = asked.draft_cache_types or (DRAFT_CACHE_TYPE, DRAFT_CACHE_TYPE)
        return {"kv_dtype": k, "engine_flags": {**flags, "cache_type_k": k, "cache_type_v": v}}

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        unknown = sorted(set(asked.flags) - set(FLAGS))
        if unknown:
            raise InputError("engine_flags", f"{self.label} has no setting "
                             + ", ".join(unknown) + "; known: " + ", ".join(FLAGS))
        if asked.memory_fraction is not None:
            raise InputError("gpu_memory_utilization", f"{self.label} sizes its caches from "
                             "the context, not from a memory fraction; leave it out")
        flags = {**self.defaults(), **asked.flags}
        if asked.max_num_seqs is not None:
            flags["parallel"] = asked.max_num_seqs
        if "kv_unified" not in asked.flags and ("parallel" in asked.flags
                                                or asked.max_num_seqs is not None):
            # llama-server unifies the cache only when it picks the slot count itself
            flags["kv_unified"] = _integer(flags["parallel"], "parallel") == 1
        if asked.max_num_batched_tokens is not None:
            flags["batch_size"] = asked.max_num_batched_tokens
        for key in ("cache_type_k", "cache_type_v"):
            flags[key] = kv_cache_type(str(flags[key]), key)
        fa = str(flags["flash_attn"]).lower()
        fa = {"1": "on", "true": "on", "0": "off", "false": "off"}.get(fa, fa)
        if fa not in ("on", "off", "auto"):
            raise InputError("flash_attn", f"{flags['flash_attn']!r}: use on, off or auto")
        flags["flash_attn"] = fa
        for key in ("n_gpu_layers", "parallel", "ubatch_size", "batch_size", "n_cpu_moe",
                    "ctx_size", "mla_use", "fit_ctx"):
            flags[key] = _integer(flags[key], key)
        flags["fit"] = _on_off(flags["fit"], "fit")
        flags["no_kv_offload"] = _on_off(flags["no_kv_offload"], "no_kv_offload")
        flags["fit_target"] = _fit_target(flags["fit_target"])
        # --fit lowers only the context the command leaves out (`-c 0` asks for the full
        # context: fit_params_min_ctx = UINT32_MAX, common/arg.cpp)
        flags["context_left_out"] = _on_off(flags["context_left_out"], "context_left_out")
        flags["fit_context"] = bool(flags["fit"]) and bool(flags["context_left_out"]) \
            and "ctx_size" not in asked.flags
        if int(flags["parallel"]) < 1:
            raise InputError("parallel", "needs at least one sequence")
        flags["ubatch_size"] = min(int(flags["ubatch_size"]), int(flags["batch_size"]))
        if str(flags["split_mode"]) not in ("layer", "none", "row"):
            raise InputError("split_mode", "use layer, row or none")
        _shares_checked(str(flags["tensor_split"]))
        n_seq = int(flags["parallel"])
        unified = bool(flags["kv_unified"])
        if not int(flags["ctx_size"]):
            flags["ctx_size"] = asked.context if unified else asked.context * n_seq
        resolved = self.resolved(flags)
        cells, streams, n_ctx = kv.context_cells(resolved)
        return EngineSettings(
            max_model_len=cells if streams > 1 or not unified else n_ctx,
            max_num_batched_tokens=int(flags["batch_size"]), max_num_seqs=n_seq,
            block_size=kv.kv_padding(resolved), memory_fraction=1.0,
            kv_dtype=str(flags["cache_type_k"]), flags=flags)

    def resolved(self, flags: dict[str, FlagValue]) -> kv.Resolved:
        return kv.Resolved(
            build=self.build, fork=self.fork, n_ctx=int(flags["ctx_size"]),
            n_seq=int(flags["parallel"]), unified=bool(flags["kv_unified"]),
            n_ubatch=int(flags["ubatch_size"]), flash_attn=flags["flash_attn"] != "off",
            type_k=str(flags["cache_type_k"]), type_v=str(flags["cache_type_v"]),
            swa_full=bool(flags["swa_full"]), mla=int(flags["mla_use"]))

    def context_limit(self, spec: ModelSpec) -> int | None:
        return None  # llama.cpp serves past the training context (it warns)

    def launch_context(self, spec: ModelSpec, command: LaunchCommand) -> int | None:
        """`-c 0` takes the model's training context (src/llama-context.cpp: n_ctx 0 →
        n_ctx_train), and 0 is the default from b7880 (and in ik_llama.cpp); older builds
        default to 4096 (common/common.h)."""
        return int(command.flags.get("ctx_size", self.defaults()["ctx_size"])) \
            or spec.max_context

    def split_limits(self, tp: int, pp: int, ep: int) -> list[str]:
        reasons = []
        if tp > 1:
            reasons.append(f"{self.label} splits by layer (-sm layer); tensor parallelism "
                           "(-sm row) is not modelled")
        if ep > 1:
            reasons.append(f"{self.label} has no expert parallelism")
        return reasons

    # --- what it caches -------------------------------------------------------------------

    def state_layers(self, spec: ModelSpec, layers: tuple[StateLayer, ...],
                     settings: EngineSettings) -> tuple[StateLayer, ...]:
        """The layers as llama.cpp caches them: MLA as one "head" of the latent, with or
        without the V copy, or every head in full (see `llamacpp_rules.py`); sliding
        layers in full for the architectures whose window llama.cpp does not load."""
        stack = spec.decoder
        if spec.model_type in NO_WINDOW:
            layers = tuple(run.model_copy(update={"kind": "full", "window": None})
                           if run.window is not None else run for run in layers)
        if stack is None or stack.mla is None:
            return layers
        m = stack.mla
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        if self.fork == "ik":
            mode = int(settings.flags.get("mla_use", 3))
            fa = settings.flags.get("flash_attn") != "off"
            shape = ((stack.heads or 1, m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim)
                     if mode == 0 else (1, latent, m.kv_lora_rank if mode == 1 and not fa
                                        else 0))
        elif self.build >= 7880:
            shape = (1, latent, 0)
        elif self.build >= 5140:
            shape = (1, latent, m.kv_lora_rank)
        else:
            shape = (stack.heads or 1, m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim)
        heads, k_dim, v_dim = shape
        return tuple(
            StateLayer(kind="full", first=run.first, count=run.count, kv_heads=heads,
                       k_head_dim=k_dim, v_head_dim=v_dim) if run.latent_dim else run
            for run in layers)

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        pool = kv.cell_pool(layers, self.resolved(settings.flags))
        # -nkvo (`offload_kqv` false): llama_kv_cache puts every layer's K and V in a CPU
        # buffer (src/llama-kv-cache.cpp, `offload ? dev_layer(il) : cpu`), so a GPU
        # holds none of them and its room does not bound them
        return replace(pool, on_host=True) if settings.flags.get("no_kv_offload") else pool

    def host_kv_layers(self, host_layers: range, model_layers: int,
                       settings: EngineSettings) -> range:
        return range(0, model_layers) if settings.flags.get("no_kv_offload") else host_layers

    def host_pool_layout(self, layers: Sequence[KvLayer],
                         settings: EngineSettings) -> PoolLayout:
        return kv.cell_pool(layers, self.resolved(settings.flags))

    # --- where layers and tensors go ------------------------------------------------------

    def _devices(self, layers: int, pp: int, settings: EngineSettings) -> list[int | None]:
        return layer_devices(layers, int(settings.flags.get("n_gpu_layers", ALL)),
                             _shares(settings, pp))

    def stage_ranges(self, layers: int, pp: int,
                     settings: EngineSettings) -> list[range] | None:
        devices = self._devices(layers, pp, settings)[:layers]
        ranges: list[range] = []
        for gpu in range(pp):
            mine = [il for il, dev in enumerate(devices) if dev == gpu]
            at = mine[0] if mine else (ranges[-1].stop if ranges else layers)
            ranges.append(range(at, mine[-1] + 1 if mine else at))
        return ranges

    def stage_weights(self, layout: WeightLayout, ranges: Sequence[range],
                      settings: EngineSettings) -> list[int] | None:
        if layout.coarse_total is not None:
            return None
        devices = self._devices(layout.layers, len(ranges), settings)
        cpu_moe = int(settings.flags.get("n_cpu_moe", 0))
        out = [0] * len(ranges)
        for il in range(layout.layers):
            gpu = devices[il]
            if gpu is not None:
                experts = layout.expert[il] if il < cpu_moe else 0
                out[gpu] += (layout.split[il] + layout.kv[il] + layout.rep[il]
                             + layout.expert[il] - experts)
        output = devices[layout.layers]
        if output is not None:
            out[output] += _output_bytes(layout)
        return out

    def host_share(self, layout: WeightLayout, ranges: Sequence[range], shape: StageShape,
                   settings: EngineSettings) -> tuple[range, int, int] | None:
        devices = self._devices(layout.layers, len(ranges), settings)
        cpu_moe = int(settings.flags.get("n_cpu_moe", 0))
        host = [il for il in range(layout.layers) if devices[il] is None]
        weights = layout.first_vocab + layout.first_split + layout.first_rep
        for il in range(layout.layers):
            if devices[il] is None:
                weights += (layout.split[il] + layout.kv[il] + layout.rep[il]
                            + layout.expert[il])
            elif il < cpu_moe:
                weights += layout.expert[il]
        if devices[layout.layers] is None:
            weights += _output_bytes(layout)
        layers = range(0, host[-1] + 1) if host else range(0, 0)
        compute = self._compute(shape, settings, on_output=devices[layout.layers] is None,
                                host_only=not host)
        return layers, int(weights), compute

    # --- memory ---------------------------------------------------------------------------

    def _compute(self, shape: StageShape, settings: EngineSettings, on_output: bool,
                 host_only: bool = False) -> int:
        """Compute-buffer bytes of one device's share of the worst-case graph (estimate)."""
        ub = int(settings.flags["ubatch_size"])
        attn_width = max(shape.hidden, shape.heads * shape.head_dim)
        if host_only:  # inputs staged on the host for the GPUs
            return 2 * ub * shape.hidden * 4
        resolved = self.resolved(settings.flags)
        cells, streams, _ = kv.context_cells(resolved)
        logits = shape.vocab * ub * 4 if on_output else 0
        if resolved.flash_attn:
            scores = 2 * ub * shape.heads * shape.head_dim * 4
        else:
            scores = cells * streams * ub * shape.heads * 4
        mlp = ub * shape.widest_per_token * 4
        return max(logits, scores, mlp) + ub * attn_width * 4

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        """The compute buffer of a GPU stage and its CUDA context (estimates)."""
        ngl = int(settings.flags["n_gpu_layers"])
        compute = self._compute(shape, settings, on_output=shape.last_stage and (
            ngl < 0 or ngl > shape.model_layers))
        return ReserveEstimate(non_torch_bytes=CUDA_CONTEXT, forward_peak_bytes=compute,
                               sampler_peak_bytes=0, activation_bytes=compute,
                               reserve_bytes=CUDA_CONTEXT + compute)

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        """Room the device leaves for the caches (llama.cpp asks for a fixed amount); when
        `--fit` may lower the context, less the margin it keeps free on each device
        (`--fit-target`, 1024 MiB)."""
        room = device.memory_bytes - weight_bytes - reserve.reserve_bytes
        if settings.flags.get("fit_context"):
            room -= int(settings.flags["fit_target"]) * MIB
        return room

    def context_fallback(self, capacity: KvCapacity, settings: EngineSettings) -> str | None:
        """`--fit` (on by default; `common_fit_params`, common/fit.cpp, earlier
        `llama_params_fit`, src/llama.cpp): when the command leaves the context out and
        the caches do not fit with the margin kept free, n_ctx is lowered to what fits,
        not below `--fit-ctx` (4096). Below that it moves layers to the CPU instead, which
        is not modelled: the start-up error stands."""
        if not settings.flags.get("fit_context") or capacity.max_concurrency >= 1:
            return None
        longest = capacity.longest_context or 0
        if longest < int(settings.flags["fit_ctx"]):
            return None
        return (f"--fit lowers n_ctx to {longest:,} per sequence, the longest context that "
                f"leaves {settings.flags['fit_target']} MiB free (llama-server does when -c "
                "is not given)")

    def occupied(self, device: Device, settings: EngineSettings,
                 others_bytes: int) -> Occupied:
        """llama.cpp budgets no fraction: it allocates what it needs, so every byte other
        processes hold is a byte less room for the caches."""
        return Occupied(pool_loss_bytes=max(0, others_bytes))

    # --- its command line -----------------------------------------------------------------

    def parse_launch(self, argv: list[str]) -> LaunchCommand:
        return parse_llamacpp(argv, self.name)

    def kv_dtype_word(self, word: str) -> dict[str, FlagValue] | None:
        """llama.cpp's cache types (`-ctk`/`-ctv`, common/arg.cpp kv_cache_types) asked as a
        KV dtype: both caches of that type."""
        key = word.strip().lower()
        if key not in KV_CACHE_TYPES:
            return None
        return {"cache_type_k": key, "cache_type_v": key}

    def kv_bits(self, settings: EngineSettings) -> float | None:
        k, v = (str(settings.flags[f"cache_type_{x}"]) for x in "kv")
        return (bits_per_value(k) + bits_per_value(v)) / 2

    def launch_lines(self, plan: LaunchPlan) -> list[LaunchLine]:
        from llm_inventory.engine.serving import llamacpp_line

        return llamacpp_line.write(plan)

    def on_devices(self, command: LaunchCommand, count: int) -> LaunchCommand:
        """One process uses every device it sees: `-sm layer` (the default) with no `-ts`
        splits the layers by free memory (src/llama-model.cpp llama_model::load_tensors),
        so `count` devices of one kind are `count` even stages; `-sm none` keeps one."""
        if (count > 1 and not command.flags.get("tensor_split")
                and command.flags.get("split_mode", "layer") == "layer"):
            return command.model_copy(update={"pp": count})
        return command

    def at_version(self, version: str) -> ServingEngine:
        """This era answering as build `version` does (its defaults and lines)."""
        text = version.strip().lower().lstrip("vb")
        if not text.isdigit() or int(text) == self.build:
            return self
        return at_build(int(text), self.fork)

    # --- what it prints -------------------------------------------------------------------

    def startup_error(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> str | None:
        resolved = self.resolved(settings.flags)
        func = "llama_init_from_model" if self.upstream(4500) else "llama_new_context_with_model"
        if self.context_fallback(capacity, settings) is not None:
            return None
        if kv.v_quantized_without_fa(resolved):
            return f"{func}: V cache quantization requires flash_attn"
        need = capacity.kv_bytes or 0
        if need and pool_bytes < need:
            return (f"ggml_backend_cuda_buffer_type_alloc_buffer: allocating {need / MIB:.2f} "
                    "MiB on device 0: cudaMalloc failed: out of memory; "
                    f"{func}: failed to initialize the context: failed to allocate buffer "
                    "for kv cache")
        return None

    def startup_lines(self, capacity: KvCapacity, pool_bytes: int,
                      settings: EngineSettings) -> list[str]:
        return []

    def plan_startup_lines(self, capacities: Sequence[KvCapacity],
                           layouts: Sequence[PoolLayout], pools: Sequence[int], binding: int,
                           settings: EngineSettings,
                           host: PoolLayout | None = None) -> list[str]:
        devices: list[tuple[str, kv.CellPool]] = []
        if isinstance(host, kv.CellPool):
            devices.append(("CPU", host))
        for index, layout in enumerate(layouts):
            if isinstance(layout, kv.CellPool) and layout.modules and not layout.on_host:
                devices.append((f"CUDA{index}", layout))
        return kv_lines(self, devices, settings)


def kv_lines(engine: LlamaCpp, devices: Sequence[tuple[str, kv.CellPool]],
             settings: EngineSettings) -> list[str]:
    """llama.cpp's KV lines for caches spread over `devices` (buffer, then size lines)."""
    r = engine.resolved(settings.flags)
    ordered = sorted(devices, key=lambda d: d[0])
    n_seq = max(1, r.n_seq)
    lines: list[str] = []
    old = engine.fork == "ik" or engine.build < 5300
    if old:
        k = sum(c.k_bytes for _, pool in ordered for c in pool.modules if c.role in kv.ATTENTION)
        v = sum(c.v_bytes for _, pool in ordered for c in pool.modules if c.role in kv.ATTENTION)
        for dev, pool in ordered:
            size = sum(c.bytes for c in pool.modules if c.role in kv.ATTENTION)
            lines.append(f"llama_kv_cache_init: {dev:>10} KV buffer size = {size / MIB:8.2f} MiB")
        func = ("llama_new_context_with_model" if engine.fork == "ik" or engine.build < 4500
                else "llama_init_from_model")
        total = (k + v) / MIB
        if engine.fork == "ik" and r.mla and _has_mla_shape(ordered):
            vt = f"kv^T ({r.type_v}): {v / MIB:7.2f} MiB" if v else "kv^T: not used"
            lines.append(f"{func}: KV self size  = {total:7.2f} MiB, c^KV ({r.type_k}): "
                         f"{k / MIB:7.2f} MiB, {vt}")
        else:
            lines.append(f"{func}: KV self size  = {total:7.2f} MiB, K ({r.type_k}): "
                         f"{k / MIB:7.2f} MiB, V ({r.type_v}): {v / MIB:7.2f} MiB")
        return lines
    prefix = "llama_kv_cache" if engine.build >= 6240 else "llama_kv_cache_unified"
    roles = [role for role in kv.ATTENTION
             if any(c.role == role for _, pool in ordered for c in pool.modules)]
    for role in roles:
        mods = [(dev, c) for dev, pool in ordered for c in pool.modules if c.role == role]
        cells = mods[0][1].cells
        if len(roles) > 1:
            label = "non-SWA" if role == "base" else "    SWA"
            lines.append(f"{prefix}_iswa: creating {label} KV cache, size = {cells} cells")
        for dev, c in mods:
            lines.append(f"{prefix}: {dev:>10} KV buffer size = {c.bytes / MIB:8.2f} MiB")
        k = sum(c.k_bytes for _, c in mods)
        v = sum(c.v_bytes for _, c in mods)
        layers = sum(c.layers for _, c in mods)
        streams = mods[0][1].streams
        seqs = f"{n_seq:2d}/{streams}" if engine.build >= 5913 else f"{n_seq:2d}"
        lines.append(f"{prefix}: size = {(k + v) / MIB:7.2f} MiB ({cells:6d} cells, "
                     f"{layers:3d} layers, {seqs} seqs), K ({r.type_k}): {k / MIB:7.2f} MiB, "
                     f"V ({r.type_v}): {v / MIB:7.2f} MiB")
    for dev, pool in ordered:
        for c in pool.modules:
            if c.role not in kv.ATTENTION:
                lines.append(f"llama_memory_recurrent: {dev:>10} RS buffer size = "
                             f"{c.bytes / MIB:8.2f} MiB")
    return lines


def _has_mla_shape(devices: Sequence[tuple[str, kv.CellPool]]) -> bool:
    return any(c.v_bytes == 0 or c.k_bytes != c.v_bytes
               for _, pool in devices for c in pool.modules)


# Architectures whose sliding window llama.cpp leaves out: Phi-3 (`Phi SWA is currently
# disabled`, PR #13676, src/llama-model.cpp load_hparams) and those whose loader reads no
# window (LLM_ARCH_LLAMA for Mistral, Mixtral; StarCoder2; Qwen2).
NO_WINDOW = frozenset({"phi3", "mistral", "mixtral", "starcoder2", "qwen2", "qwen2_moe"})


def _output_bytes(layout: WeightLayout) -> int:
    """The output layer: final norm, lm_head, or the tied embedding's duplicate."""
    head = layout.last_vocab or layout.tied_vocab or layout.first_vocab
    return int(head + layout.last_rep)


def _integer(value: FlagValue, field: str) -> int:
    if isinstance(value, bool):
        raise InputError(field, f"{value!r} is not a whole number")
    text = str(value).strip().lower()
    if field == "n_gpu_layers" and text in ("all", "auto", "-1", "999"):
        return ALL
    # Bounded (bounds.number): finite, few digits, and at least what llama.cpp can use (it
    # stores batch sizes and slots unsigned: a 0 or -1 there is no batch at all).
    return int(number(field, value, low=_LOWEST.get(field, 0), high=SIZE.limit,
                      integer=True))


#: The least value llama.cpp can use, per flag (0 elsewhere: a count, or 0 for "default").
_LOWEST = {"batch_size": 1, "ubatch_size": 1, "parallel": 1}


def _shares_checked(text: str) -> None:
    if not text:
        return
    try:
        values = [float(x) for x in text.replace("/", ",").split(",") if x.strip()]
    except ValueError:
        raise InputError("tensor_split", f"{text!r}: give proportions such as 3,1") from None
    if any(v < 0 for v in values):
        raise InputError("tensor_split", f"{text!r}: proportions cannot be negative")


# --- the command line -----------------------------------------------------------------------

# option spellings → (setting, takes a value)
_OPTIONS: dict[str, tuple[str, bool]] = {
    "-m": ("model", True), "--model": ("model", True),
    "-hf": ("hf_repo", True), "-hfr": ("hf_repo", True), "--hf-repo": ("hf_repo", True),
    "-c": ("ctx_size", True), "--ctx-size": ("ctx_size", True),
    "-ngl": ("n_gpu_layers", True), "--gpu-layers": ("n_gpu_layers", True),
    "--n-gpu-layers": ("n_gpu_layers", True),
    "-ctk": ("cache_type_k", True), "--cache-type-k": ("cache_type_k", True),
    "-ctv": ("cache_type_v", True), "--cache-type-v": ("cache_type_v", True),
    "-np": ("parallel", True), "--parallel": ("parallel", True),
    "-ub": ("ubatch_size", True), "--ubatch-size": ("ubatch_size", True),
    "-b": ("batch_size", True), "--batch-size": ("batch_size", True),
    "-fa": ("flash_attn", False), "--flash-attn": ("flash_attn", False),
    "--swa-full": ("swa_full", False),
    "--n-cpu-moe": ("n_cpu_moe", True), "-ncmoe": ("n_cpu_moe", True),
    "--cpu-moe": ("cpu_moe", False), "-cmoe": ("cpu_moe", False),
    "-ts": ("tensor_split", True), "--tensor-split": ("tensor_split", True),
    "-sm": ("split_mode", True), "--split-mode": ("split_mode", True),
    "-kvu": ("kv_unified", False), "--kv-unified": ("kv_unified", False),
    "-no-kvu": ("no_kv_unified", False), "--no-kv-unified": ("no_kv_unified", False),
    "-mla": ("mla_use", True), "--mla-use": ("mla_use", True),
    "-fit": ("fit", True), "--fit": ("fit", True),
    "-fitt": ("fit_target", True), "--fit-target": ("fit_target", True),
    "-fitc": ("fit_ctx", True), "--fit-ctx": ("fit_ctx", True),
    # speculative decoding (engine/serving/speculative_launch.py)
    "-md": ("model_draft", True), "--model-draft": ("model_draft", True),
    "--draft-max": ("draft_max", True), "--draft": ("draft_max", True),
    "--draft-n": ("draft_max", True), "--draft-min": ("draft_min", True),
    "--draft-n-min": ("draft_min", True),
    "-ngld": ("gpu_layers_draft", True), "--gpu-layers-draft": ("gpu_layers_draft", True),
    "--n-gpu-layers-draft": ("gpu_layers_draft", True),
    "-cd": ("ctx_size_draft", True), "--ctx-size-draft": ("ctx_size_draft", True),
    "-ctkd": ("cache_type_k_draft", True), "--cache-type-k-draft": ("cache_type_k_draft", True),
    "-ctvd": ("cache_type_v_draft", True), "--cache-type-v-draft": ("cache_type_v_draft", True),
    "-nkvo": ("no_kv_offload", False), "--no-kv-offload": ("no_kv_offload", False),
}
_FA_VALUES = ("on", "off", "auto", "1", "0", "true", "false")


def _typed_flags(values: dict[str, FlagValue]) -> dict[str, FlagValue]:
    """The command's values as the engine's settings take them; InputError for a bad one."""
    flags: dict[str, FlagValue] = {}
    for key in ("ctx_size", "n_gpu_layers", "parallel", "ubatch_size", "batch_size",
                "n_cpu_moe", "mla_use", "fit_ctx"):
        if key in values:
            flags[key] = _integer(values[key], key)
    if "fit" in values:
        flags["fit"] = _on_off(values["fit"], "fit")
    if "fit_target" in values:
        flags["fit_target"] = _fit_target(values["fit_target"])
    for key in ("cache_type_k", "cache_type_v"):
        if key in values:
            flags[key] = kv_cache_type(str(values[key]), key)
    if "flash_attn" in values:
        fa = str(values["flash_attn"]).lower()
        fa = {"1": "on", "true": "on", "0": "off", "false": "off"}.get(fa, fa)
        if fa not in ("on", "off", "auto"):
            raise InputError("flash_attn", f"{values['flash_attn']!r}: use on, off or auto")
        flags["flash_attn"] = fa
    if values.get("swa_full"):
        flags["swa_full"] = True
    if values.get("no_kv_offload"):
        flags["no_kv_offload"] = True
    if values.get("cpu_moe"):
        flags["n_cpu_moe"] = 10**6
    if "tensor_split" in values:
        _shares_checked(str(values["tensor_split"]))
        flags["tensor_split"] = str(values["tensor_split"])
    if "split_mode" in values:
        mode = str(values["split_mode"]).lower()
        if mode not in ("layer", "row", "none"):
            raise InputError("split_mode", f"{mode!r}: use layer, row or none")
        flags["split_mode"] = mode
    if values.get("kv_unified"):
        flags["kv_unified"] = True
    if values.get("no_kv_unified"):
        flags["kv_unified"] = False
    return flags


def _on_off(value: FlagValue, field: str) -> bool:
    """`on`/`off` (and true/false, 1/0) as a switch; InputError for anything else."""
    text = str(value).strip().lower()
    if text in ("on", "true", "1"):
        return True
    if text in ("off", "false", "0"):
        return False
    raise InputError(field, f"{value!r}: use on or off")


def _fit_target(value: FlagValue) -> int:
    """`--fit-target` MiB: one value, or one a device (the largest margin is kept here)."""
    parts = [p.strip() for p in str(value).split(",") if p.strip()]
    if not parts:
        raise InputError("fit_target", "give the MiB to keep free on each device")
    return max(_integer(p, "fit_target") for p in parts)


def parse_llamacpp(argv: list[str], engine: str) -> LaunchCommand:
    """Read a llama-server / llama-cli command line (after the program name)."""
    values: dict[str, FlagValue] = {}
    typed: dict[str, str] = {}  # setting → the flag as written
    understood: list[str] = []
    ignored: list[str] = []
    from llm_inventory.engine.serving.feature_flags import LLAMACPP, FeatureReader

    adapters = FeatureReader(LLAMACPP)
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=")
        if name in (LLAMACPP.adapter_file, LLAMACPP.adapter_scaled):
            # --lora FILE, --lora-scaled FILE SCALE (the scale changes no memory)
            width = 2 if name == LLAMACPP.adapter_scaled else 1
            words = [inline] if eq else argv[i + 1:i + 1 + width]
            if len(words) < (1 if eq else width) or any(w.startswith("-") for w in words):
                raise InputError("launch", f"{name} needs a file"
                                 + (" and a scale" if width == 2 else ""))
            adapters.take(name, words[0])
            understood.append(" ".join([name, *words]))
            i += 1 + (0 if eq else width)
            continue
        option = _OPTIONS.get(name)
        if option is None:
            if token.startswith("-"):
                ignored.append(token)
                # a value that follows an unknown option is ignored with it
                if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                    ignored.append(argv[i + 1])
                    i += 1
            else:
                ignored.append(token)
            i += 1
            continue
        key, takes = option
        if takes or (key == "flash_attn" and (eq or (i + 1 < len(argv)
                                                      and argv[i + 1].lower() in _FA_VALUES))):
            if eq:
                value = inline
            elif i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
            else:
                raise InputError("launch", f"{name} needs a value")
            values[key] = value
            understood.append(f"{name} {value}")
        else:
            values[key] = True if key != "flash_attn" else "on"
            understood.append(name)
        typed[key] = name
        i += 1
    speculative = _draft(values, typed, understood, ignored)
    model = str(values.pop("model", "") or values.pop("hf_repo", ""))
    values.pop("hf_repo", None)
    if not model:
        raise InputError("launch", "the command names no model (-m FILE.gguf or -hf REPO)")
    try:
        flags = _typed_flags(values)
    except InputError as exc:  # name the flag as the command spelt it
        raise InputError(typed.get(exc.field, exc.field), exc.message) from None
    if "ctx_size" not in flags:
        flags["context_left_out"] = True
    n_seq = int(flags.get("parallel", 1))
    ctx = int(flags["ctx_size"]) if "ctx_size" in flags else None
    unified = bool(flags.get("kv_unified", n_seq == 1))
    context = None if not ctx else (ctx if unified else max(1, ctx // n_seq))
    shares = [x for x in str(flags.get("tensor_split", "")).replace("/", ",").split(",")
              if x.strip()]
    dtype = _quant_tag(model)
    return LaunchCommand(
        engine=engine, model=model, pp=max(1, sum(1 for x in shares if float(x) > 0)),
        context=context, dtype=dtype,
        max_num_seqs=int(flags["parallel"]) if "parallel" in flags else None,
        max_num_batched_tokens=int(flags["batch_size"]) if "batch_size" in flags else None,
        flags=flags, understood=understood, ignored=ignored, speculative=speculative,
        lora=adapters.fields().get("lora"))


def _draft(values: dict[str, FlagValue], typed: dict[str, str], understood: list[str],
           ignored: list[str]) -> Speculative | None:
    """The draft model flags, taken out of `values`: -md and --draft-max as a Speculative;
    --draft-min read (it changes no memory); -ngld below every layer and a -cd other than
    the target's cells are moved to `ignored` (the draft is placed whole on the GPUs with
    the target's cells, tools/server/server.cpp load_model)."""
    from llm_inventory.engine.serving.speculative_launch import llamacpp_read

    if "draft_min" in values:
        _integer(values.pop("draft_min"), "draft_min")
    for key in ("gpu_layers_draft", "ctx_size_draft"):
        if key in values:
            text = values.pop(key)
            word = str(text).strip().lower()
            whole = word in ("all", "auto", "-1") if key == "gpu_layers_draft" else False
            n = -1 if whole else _integer(text, key)
            keeps = (n < 0 or n >= ALL_LAYERS_DRAFT) if key == "gpu_layers_draft" else n == 0
            if not keeps:
                said = f"{typed[key]} {text}"
                understood.remove(said)
                ignored.append(said)
    types = tuple(kv_cache_type(str(values.pop(key, DRAFT_CACHE_TYPE)), key)
                  for key in ("cache_type_k_draft", "cache_type_v_draft"))
    draft = values.pop("model_draft", None)
    draft_max = values.pop("draft_max", None)
    found = llamacpp_read(None if draft is None else str(draft),
                          None if draft_max is None else str(draft_max))
    if found is None or types == (DRAFT_CACHE_TYPE, DRAFT_CACHE_TYPE):
        return found
    return found.model_copy(update={"draft_cache_types": types})


ALL_LAYERS_DRAFT = 99  # -ngld at or past every layer of any draft: the whole draft on GPUs
DRAFT_CACHE_TYPE = "f16"  # a draft context's K and V without -ctkd/-ctvd (common/common.h)


def _quant_tag(model: str) -> str | None:
    """The weight type a GGUF's name or a `-hf repo:TYPE` tag states (None: not stated)."""
    tail = model.rsplit(":", 1)[1] if ":" in model and not model.endswith(".gguf") else model
    stem = tail.rsplit("/", 1)[-1].lower().removesuffix(".gguf")
    for name in sorted({*FILE_TYPES, *GGML_TYPES}, key=len, reverse=True):
        if stem.endswith(name) or stem.endswith(name.replace("_", "-")):
            return name
    return None


def at_build(build: int, fork: str = "upstream") -> LlamaCpp:
    """llama.cpp (or ik_llama.cpp) answering as build `build` does."""
    attrs = {"build": build, "fork": fork, "version": str(build),
             "label": f"{'ik_llama.cpp' if fork == 'ik' else 'llama.cpp'} b{build}"}
    if fork == "ik":
        attrs["name"] = "ik_llama"
    engine: LlamaCpp = type(f"LlamaCppB{build}", (LlamaCpp,), attrs)()
    return engine
