"""Serving features inside a placement's fit: LoRA adapter buffers and the vision encoder's
reserve, each as the engine's own rule says (`ServingEngine.lora_rule`, `.mm_rule`).

LoRA buffers sit beside the weights on every device of a stage; an engine whose rule has
them inside its budget (vLLM V1, SGLang, llama.cpp) sizes its KV pool after them, one that
does not (vLLM V0, vllm#14450) sizes it as if they were absent. The encoder's profiling pass
adds to the first stage's reserve (vLLM V1); SGLang scales its default memory fraction.
With neither asked for nor a vision encoder, nothing here changes a figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_inventory.engine.dtypes import activation_dtype
from llm_inventory.engine.lora import (
    LoraFigures,
    LoraRule,
    adapter_bytes,
    lora_dtype,
    slot_bytes,
    target_modules,
    uncounted,
)
from llm_inventory.engine.mm_budget import MmFigures, MmRule, MultimodalRequest, mm_budget
from llm_inventory.engine.serving.base import EngineSettings, ReserveEstimate, ServingEngine
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec

if TYPE_CHECKING:
    from llm_inventory.engine.placement.facts import ModelFacts
    from llm_inventory.engine.placement.models import PlacementRequest


def _has_vision(spec: ModelSpec) -> bool:
    encoder = spec.encoder
    return encoder is not None and encoder.kind == "vision" and spec.family.decodes


def feature_rules(spec: ModelSpec, request: PlacementRequest, engine: ServingEngine,
                  settings: EngineSettings
                  ) -> tuple[LoraRule | None, MmRule | None, EngineSettings]:
    """The engine's LoRA and encoder rules for this request (None: not in play), and the
    settings they change; InputError for a feature the engine's era does not model or a
    setting it refuses."""
    lora_rule = None
    if request.lora is not None:
        lora_rule = engine.lora_rule
        if lora_rule is None:
            raise InputError("lora", f"LoRA buffers are not modelled for {engine.label}; "
                             "LoRA is modelled for vLLM, SGLang and llama.cpp")
        asked = request.lora
        if asked.fully_sharded and not lora_rule.fully_sharded:
            raise InputError("fully_sharded_loras", f"{engine.label} has no fully sharded "
                             "LoRA layers (a vLLM option)")
        if spec.decoder is None:
            raise InputError("lora", "LoRA adapts a decoder's layers; this model has none")
        if lora_rule.from_files and asked.adapter_bytes:
            pass
        elif asked.max_lora_rank is None and lora_rule.default_rank is None:
            raise InputError("lora_rank", f"{engine.label} reads the rank from the adapters' "
                             "files; give the largest adapter's rank (--lora-rank; on its "
                             "own command line --max-lora-rank)")
        rank = asked.max_lora_rank
        if rank is not None and lora_rule.ranks is not None and rank not in lora_rule.ranks:
            raise InputError("lora_rank", f"{engine.label} takes a max_lora_rank of "
                             + ", ".join(map(str, lora_rule.ranks)) + f", not {rank}")
        slots = asked.max_loras or lora_rule.default_slots
        if lora_rule.host_cache and asked.max_cpu_loras is not None \
                and asked.max_cpu_loras < slots:
            raise InputError("max_cpu_loras", f"{engine.label} needs max_cpu_loras "
                             f"({asked.max_cpu_loras}) ≥ max_loras ({slots})")
        target_modules(asked.target_modules)  # refuses an unknown module name
        lora_dtype(asked, activation_dtype(spec))
    mm_rule = None
    if _has_vision(spec):
        mm_rule = engine.mm_rule
        if mm_rule is not None and mm_rule.fraction_scale:
            from llm_inventory.engine.mm_budget import vision_factor

            assert spec.encoder is not None
            width = spec.decoder.hidden_size if spec.decoder is not None else None
            settings = engine.with_vision_factor(
                settings, vision_factor(spec.encoder, spec.model_type, width))
    if request.multimodal is not None and mm_rule is None and _has_vision(spec) \
            and request.multimodal.limit_per_prompt.get("image", 1) != 0:
        raise InputError("limit_mm_per_prompt", f"the encoder budget is not modelled for "
                         f"{engine.label}; it is for vLLM's V1 engine and SGLang")
    return lora_rule, mm_rule, settings


def lora_stage_bytes(facts: ModelFacts, tp: int, pp: int, ep: int, stage: int) -> int:
    """Bytes of adapter buffers one device of `stage` holds (0: LoRA off)."""
    asked, rule, stack = facts.request.lora, facts.lora_rule, facts.stack
    if asked is None or rule is None or stack is None:
        return 0
    key = (tp, pp, ep, stage)
    if key in facts._lora:
        return facts._lora[key]
    layers = facts.ranges(pp)[stage]
    if rule.from_files and asked.adapter_bytes:
        # an adapter's tensors sit with the layers they adapt: a stage's share of each file
        share = len(layers) / max(1, facts.layers)
        found = int(sum(asked.adapter_bytes) * share)
    else:
        slots = asked.max_loras or rule.default_slots
        rank = asked.max_lora_rank or rule.default_rank or 0
        dtype = lora_dtype(asked, activation_dtype(facts.spec))
        modules = target_modules(asked.target_modules)
        moe = stack.moe
        on_rank = (max(facts.expert_counts(ep)) if ep > 1 and facts.experts
                   else moe.experts if moe is not None else 0)
        found = slot_bytes(stack, range(stack.layers) if rule.all_layers else layers,
                           modules, rank, slots, dtype, tp, sharded=asked.fully_sharded,
                           experts=rule.experts, experts_on_rank=on_rank,
                           expert_tp=1 if ep > 1 else tp)
        if rule.from_files:  # no file: one adapter of that rank, the stage's layers
            found = found if not rule.all_layers else int(
                found * len(layers) / max(1, facts.layers))
    facts._lora[key] = found
    return found


def lora_figures(facts: ModelFacts, device_bytes: int) -> LoraFigures | None:
    """What LoRA costs the binding device and the host (None: LoRA off)."""
    asked, rule, stack = facts.request.lora, facts.lora_rule, facts.stack
    if asked is None or rule is None or stack is None:
        return None
    dtype = lora_dtype(asked, activation_dtype(facts.spec))
    modules = target_modules(asked.target_modules)
    rank = asked.max_lora_rank or rule.default_rank
    host = 0
    if rule.host_cache and rank:
        slots = asked.max_cpu_loras or asked.max_loras or rule.default_slots
        host = slots * adapter_bytes(stack, modules, rank, dtype)
    return LoraFigures(
        max_loras=asked.max_loras or rule.default_slots, max_lora_rank=rank,
        lora_dtype=dtype, modules=list(modules), uncounted=uncounted(stack, rule),
        device_bytes=device_bytes, in_budget=rule.in_budget, host_bytes=host,
        source=rule.source)


def mm_figures(facts: ModelFacts, tp: int, forward_peak: int) -> MmFigures | None:
    """What the engine reserves for the vision encoder on a first-stage device."""
    if facts.mm_rule is None:
        return None
    key = (tp, forward_peak)
    if key not in facts._mm:
        facts._mm[key] = mm_budget(
            facts.spec, facts.request.multimodal or MultimodalRequest(), facts.mm_rule,
            max_num_batched_tokens=facts.settings.max_num_batched_tokens,
            max_num_seqs=facts.settings.max_num_seqs, tp=tp,
            activation=activation_dtype(facts.spec), forward_peak=forward_peak,
            max_model_len=facts.settings.max_model_len)
    return facts._mm[key]


def with_encoder(facts: ModelFacts, reserve: ReserveEstimate, tp: int) -> ReserveEstimate:
    """The first stage's reserve with the encoder's profiling pass added, where the engine
    profiles it."""
    figures = mm_figures(facts, tp, reserve.activation_bytes)
    if figures is None or not figures.profile_bytes:
        return reserve
    extra = figures.profile_bytes
    return reserve.model_copy(update={"encoder_bytes": extra,
                                      "reserve_bytes": reserve.reserve_bytes + extra})


def feature_notes(facts: ModelFacts) -> list[str]:
    """What the features' figures rest on, once per result."""
    notes = []
    if facts.mm_rule is not None and facts.mm_rule.profiles_encoder:
        asked = facts.request.multimodal or MultimodalRequest()
        if asked.limit_per_prompt.get("image", 1) != 0 and not asked.skip_profiling:
            notes.append(
                "the reserve holds the encoder's profiling pass: its image outputs by "
                f"{facts.engine.label}'s budget rule, the tower's activations an estimate; "
                "images only (a longer dummy video or audio item is not modelled: "
                "--limit-mm-per-prompt video=0 matches it)")
    if facts.lora_rule is not None and facts.request.lora is not None \
            and facts.stack is not None:
        left = uncounted(facts.stack, facts.lora_rule)
        if left:
            notes.append("LoRA slots not counted for " + ", ".join(left))
    return notes
