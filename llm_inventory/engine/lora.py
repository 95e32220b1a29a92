"""LoRA adapter buffers: what an engine pre-allocates on each device when LoRA is on.

vLLM and SGLang allocate, at start-up, one stack of A and B matrices per target module and
layer, wide enough for `max_loras` adapters (SGLang: `max_loras_per_batch`) of rank
`max_lora_rank`, whatever adapters are later loaded; llama.cpp loads each `--lora` file's
tensors beside the base tensors they adapt.

Per target module of a layer, on one tensor-parallel rank (L adapter slots, rank r):
- column-parallel modules (q, k, v, gate, up; each a slice of the merged qkv / gate_up
  layer): A = L × r × input (the whole input), B = L × output-per-rank × r;
- row-parallel modules (o, down): A = L × r × input-per-rank, B = L × output × r (the
  whole output);
- vLLM's `--fully-sharded-loras` splits the other side too: column A's rank and row B's
  output by tp.
vLLM: `BaseLinearLayerWithLoRA.create_lora_weights` (vllm/lora/layers/base_linear.py),
`MergedColumnParallelLinearWithLoRA` / `MergedQKVParallelLinearWithLoRA`
(vllm/lora/layers/column_parallel_linear.py), created in `LoRAModelManager._create_lora_modules`
(vllm/lora/model_manager.py) for the modules on the worker's pipeline stage.
SGLang: `LoRAMemoryPool.get_lora_A_shape` / `get_lora_B_shape` / `init_buffers`
(python/sglang/srt/lora/mem_pool.py): A = slots × r·c × input (c = 3 for qkv, 2 for
gate_up; row-parallel inputs ÷ tp), B = slots × output (÷ tp for column-parallel) × r,
for every layer of the model. The same element counts per rank as vLLM's unsharded layout.

Routed experts get slots (E experts of the rank each) only where the engine has MoE LoRA
layers (`LoraRule.experts`); MLA projections, recurrent mixers, embeddings and the output
head get none here (vLLM adds slots to the embeddings and lm_head only for adapters that
train them): the figure says which modules it counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.bounds import LORA_RANK, LORA_SLOTS
from llm_inventory.errors import InputError
from llm_inventory.spec.model import LayerKind, Stack
from llm_inventory.units import DTYPE_BITS, normalize_dtype

#: The module names a LoRA adapter targets, as PEFT and the engines spell them.
MODULES: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                            "down_proj")
#: Packed names an engine or a user may give for several of them.
PACKED: dict[str, tuple[str, ...]] = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "all": MODULES,
    "all-linear": MODULES,
}
_ATTENTION_KINDS = {LayerKind.FULL.value, LayerKind.SLIDING.value, LayerKind.CHUNKED.value}
MAX_SLOTS = LORA_SLOTS.limit
MAX_RANK = LORA_RANK.limit


class LoraRequest(BaseModel):
    """LoRA as a launch asks for it; None leaves a setting to the engine's default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_loras: int | None = Field(default=None, ge=1, le=MAX_SLOTS)  # GPU slots per batch
    max_lora_rank: int | None = Field(default=None, ge=1, le=MAX_RANK)
    max_cpu_loras: int | None = Field(default=None, ge=1, le=MAX_SLOTS)  # vLLM host cache
    lora_dtype: str | None = None  # None / "auto": the model's activation dtype
    fully_sharded: bool = False  # vLLM --fully-sharded-loras
    target_modules: tuple[str, ...] | None = None  # None: every module the engine adapts
    # llama.cpp: the adapter files' tensor bytes (their sizes), one per --lora
    adapter_bytes: tuple[int, ...] = ()
    adapters: tuple[str, ...] = ()  # the adapter paths or name=path pairs as given


@dataclass(frozen=True)
class LoraRule:
    """How one engine era holds LoRA adapters (see the module's docstring)."""

    default_slots: int  # adapter slots when the launch names none
    default_rank: int | None  # None: the engine infers it from the adapters (must be given)
    in_budget: bool  # the buffers exist before the engine measures its memory for KV
    all_layers: bool  # slots for every layer, not only the pipeline stage's
    experts: bool  # routed-expert (fused MoE) layers get slots
    fully_sharded: bool  # the engine offers --fully-sharded-loras
    host_cache: bool  # adapters also kept in host memory (vLLM's max_cpu_loras)
    source: str  # file and function it follows, with the release
    from_files: bool = False  # the adapters' own files are loaded (llama.cpp --lora)
    ranks: tuple[int, ...] | None = None  # the max_lora_rank values it accepts (None: any)


class LoraFigures(BaseModel):
    """What LoRA costs one device of the binding stage and the host, in bytes."""

    model_config = ConfigDict(frozen=True)

    max_loras: int
    max_lora_rank: int | None
    lora_dtype: str
    modules: list[str]  # the target modules counted
    uncounted: list[str] = Field(default_factory=list)  # parts of the model given no slots
    device_bytes: int  # on the binding device
    in_budget: bool  # inside what the engine measures before sizing its KV pool
    host_bytes: int = 0  # host memory the engine keeps for adapters (an upper bound)
    source: str


def target_modules(names: tuple[str, ...] | None) -> tuple[str, ...]:
    """The adapted modules `names` stands for (packed names unpacked, order kept);
    InputError for a name no engine adapts."""
    if names is None:
        return MODULES
    found: list[str] = []
    for name in names:
        key = name.strip().lower()
        parts = PACKED.get(key, (key,) if key in MODULES else ())
        if not parts:
            raise InputError("lora_modules", f"{name!r} is not a LoRA target module; "
                             f"use {', '.join(MODULES)}, qkv_proj, gate_up_proj or all")
        found.extend(p for p in parts if p not in found)
    return tuple(m for m in MODULES if m in found)


def lora_dtype(request: LoraRequest, activation: str) -> str:
    """The dtype of the adapter buffers: the asked one, else the model's activation dtype."""
    asked = request.lora_dtype
    if asked is None or asked.strip().lower() == "auto":
        return activation
    dtype = normalize_dtype(asked, "lora_dtype")
    if dtype not in ("bf16", "fp16", "fp32"):
        raise InputError("lora_dtype", f"{asked!r} is not a LoRA dtype; use auto, bfloat16, "
                         "float16 or float32")
    return dtype


def _module_elements(stack: Stack, index: int, module: str, rank: int, tp: int,
                     sharded: bool) -> int:
    """A and B elements of one module of layer `index` for one adapter slot on one rank
    (0 when the layer has no such module)."""
    hidden = stack.hidden_size or 0
    heads, kv = stack.heads or 0, stack.n_kv_heads
    q_out, kv_out = heads * stack.k_dim, max(1, kv // tp) * stack.k_dim if kv else 0
    v_out = max(1, kv // tp) * (stack.v_head_dim or stack.k_dim) if kv else 0
    o_in = heads * (stack.v_head_dim or stack.k_dim)
    inter = stack.intermediate_size or 0
    column_rank = -(-rank // tp) if sharded else rank
    if module in ("q_proj", "k_proj", "v_proj"):
        if stack.kind_of(index) not in _ATTENTION_KINDS or not heads:
            return 0
        out = {"q_proj": q_out // tp, "k_proj": kv_out, "v_proj": v_out}[module]
        return column_rank * hidden + out * rank
    if module == "o_proj":
        if stack.kind_of(index) not in _ATTENTION_KINDS or not heads:
            return 0
        return rank * (o_in // tp) + (hidden // tp if sharded else hidden) * rank
    moe = stack.moe
    if moe is not None and moe.is_moe_layer(index):
        # routed experts: see `_expert_elements`; shared experts are a plain MLP
        inter = moe.shared_experts * moe.shared_intermediate_size
    if stack.mlp == "none" or not inter or (module == "gate_proj" and stack.mlp != "gated"):
        return 0
    if module in ("gate_proj", "up_proj"):
        return column_rank * hidden + (inter // tp) * rank
    return rank * (inter // tp) + (hidden // tp if sharded else hidden) * rank  # down_proj


def _expert_elements(stack: Stack, index: int, modules: tuple[str, ...], rank: int, tp: int,
                     experts_on_rank: int) -> int:
    """A and B elements of one slot for the routed experts of layer `index` on one rank
    (vLLM `FusedMoEWithLoRA.create_lora_weights`, vllm/lora/layers/fused_moe.py: w13 A
    E × r × hidden, B E × 2·inter/tp × r; w2 A E × r × inter/tp, B E × hidden × r;
    SGLang's `is_moe_module` shapes alike)."""
    moe = stack.moe
    if moe is None or not moe.is_moe_layer(index):
        return 0
    hidden, inter = stack.hidden_size or 0, moe.expert_intermediate_size // tp
    total = 0
    if "gate_proj" in modules and moe.gated:
        total += rank * hidden + inter * rank
    if "up_proj" in modules:
        total += rank * hidden + inter * rank
    if "down_proj" in modules:
        total += rank * inter + hidden * rank
    return total * experts_on_rank


def slot_bytes(stack: Stack, layers: range, modules: tuple[str, ...], rank: int, slots: int,
               dtype: str, tp: int, *, sharded: bool = False, experts: bool = False,
               experts_on_rank: int = 0, expert_tp: int | None = None) -> int:
    """Bytes of the adapter buffers one rank holds for `layers` (`expert_tp`: the split of
    each expert's intermediate width, 1 under expert parallelism; default `tp`)."""
    elements = 0
    for index in layers:
        for module in modules:
            elements += _module_elements(stack, index, module, rank, tp, sharded)
        if experts:
            elements += _expert_elements(stack, index, modules, rank,
                                         tp if expert_tp is None else expert_tp,
                                         experts_on_rank)
    return slots * elements * DTYPE_BITS[dtype] // 8


def uncounted(stack: Stack, rule: LoraRule) -> list[str]:
    """Parts of the model that get no slots here, in words."""
    kinds = set(stack.kinds())
    found = []
    if kinds & {LayerKind.MLA.value}:
        found.append("MLA projections")
    if kinds - _ATTENTION_KINDS - {LayerKind.MLA.value}:
        found.append("recurrent and linear-attention mixers")
    if stack.moe is not None and not rule.experts:
        found.append("routed experts (this engine era has no MoE LoRA layers)")
    return found


def adapter_bytes(stack: Stack, modules: tuple[str, ...], rank: int, dtype: str) -> int:
    """One whole adapter of rank `rank` over every layer, unsharded (its file's tensors)."""
    experts = stack.moe.experts if stack.moe is not None else 0
    return slot_bytes(stack, range(stack.layers), modules, rank, 1, dtype, 1,
                      experts=experts > 0, experts_on_rank=experts)
