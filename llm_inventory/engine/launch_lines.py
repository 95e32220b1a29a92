"""The launch lines of a placement plan, in each engine's own flags.

The model is named as the engine loads it: a preset by the Hugging Face id it stands for
(an engine knows no preset names), a GGUF file by its path, anything else as given. The
split, the disaggregation and the settings come from the plan; the engine's writer
(`ServingEngine.launch_lines`) spells them.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from llm_inventory.engine.serving import ServingEngine
from llm_inventory.engine.serving.launch_line import LaunchLine, LaunchPlan

if TYPE_CHECKING:
    from llm_inventory.engine.lora import LoraRequest
    from llm_inventory.engine.mm_budget import MultimodalRequest
    from llm_inventory.engine.offload import Offload
    from llm_inventory.engine.placement import PlacementRequest, PlacementResult
    from llm_inventory.engine.speculative import Speculative


def model_path(reference: str) -> tuple[str, bool]:
    """The model as an engine's command line takes it, and whether it is a GGUF file."""
    if PurePath(reference).suffix.lower() == ".gguf":
        return reference, True
    if "/" not in reference:
        from llm_inventory.spec.presets import hub_id

        found = hub_id(reference)
        if found is not None:
            return found, False
    return reference, False


def plan_lines(engine: ServingEngine, reference: str, *, tp: int, pp: int, ep: int,
               context: int, max_num_seqs: int | None, max_num_batched_tokens: int,
               disaggregation: str | None = None, memory_fraction: float | None = None,
               kv_dtype: str | None = None, quantization: str | None = None,
               flags: dict[str, object] | None = None,
               speculative: Speculative | None = None, lora: LoraRequest | None = None,
               multimodal: MultimodalRequest | None = None,
               offload: Offload | None = None) -> list[LaunchLine]:
    """The lines that start one replica of the plan on `engine` ([] when its command line
    cannot say it). `max_num_seqs` (None: the engine's default) and
    `max_num_batched_tokens` are per engine instance;
    `flags` are placement's engine flags (llama.cpp's n_gpu_layers and n_cpu_moe);
    `speculative` the drafter asked for, its draft named as the engine loads it."""
    if not engine.programs:
        return []
    model, gguf = model_path(reference)
    own = flags or {}
    ngl, cpu_moe = own.get("n_gpu_layers"), own.get("n_cpu_moe")
    plan = LaunchPlan(
        model=model, tp=tp, pp=pp, ep=ep, context=context,
        max_num_seqs=None if max_num_seqs is None else max(1, max_num_seqs),
        max_num_batched_tokens=max_num_batched_tokens,
        memory_fraction=memory_fraction, kv_dtype=kv_dtype, quantization=quantization,
        disaggregation=disaggregation if disaggregation == "prefill/decode" else None,
        gguf=gguf, n_gpu_layers=int(str(ngl)) if ngl is not None else None,
        n_cpu_moe=int(str(cpu_moe)) if cpu_moe else None,
        offload=tuple(offload_argv(engine, offload)),
        no_kv_offload=bool(own.get("no_kv_offload")),
        lora=lora, multimodal=multimodal,
        speculative=None if speculative is None else speculative.model_copy(update={
            "draft_spec": None, "acceptance": None,
            "draft": model_path(speculative.draft)[0] if speculative.draft else None}))
    lines = engine.launch_lines(plan)
    # a line `inventory launch` would read as another engine (ik_llama.cpp shares
    # llama-server with llama.cpp) is not this engine's: none rather than a wrong one
    if any(line.server and _reads_as(line) != engine.name for line in lines):
        return []
    return lines


def offload_argv(engine: ServingEngine, offload: Offload | None) -> list[str]:
    """The engine's own flags for `offload` (none when nothing is asked)."""
    if offload is None or not offload.active:
        return []
    rules = engine.offload_rules()
    return rules.argv(offload) if rules is not None else []


def _reads_as(line: LaunchLine) -> str | None:
    """The engine `inventory launch` picks for a server line (None: none)."""
    from llm_inventory.engine.launch import match_program
    from llm_inventory.errors import InputError

    try:
        return match_program(list(line.argv))[0].name
    except InputError:
        return None


def with_launch_lines(result: PlacementResult, request: PlacementRequest,
                      reference: str) -> PlacementResult:
    """`result` with every legal plan's launch lines: its split at the result's context,
    the settings the request asked for (the engine's resolved ones for the rest, so each
    line reads back to the figures the plan shows)."""
    from llm_inventory.engine.serving import get

    engine = get(f"{result.engine}@{result.engine_version}")
    plans = []
    for plan in result.plans:
        if not plan.legal:
            plans.append(plan)
            continue
        lines = plan_lines(
            engine, reference, tp=plan.tp, pp=plan.pp, ep=plan.ep, context=result.context,
            max_num_seqs=request.max_num_seqs,
            max_num_batched_tokens=result.max_num_batched_tokens,
            disaggregation=plan.disaggregation,
            memory_fraction=request.gpu_memory_utilization,
            kv_dtype=request.kv_dtype, quantization="fp8" if request.dtype == "fp8" else None,
            flags=dict(request.engine_flags), speculative=request.speculative,
            lora=request.lora, multimodal=request.multimodal,
            offload=request.offload)
        plans.append(plan.model_copy(update={"launch": [line.text() for line in lines]}))
    return result.model_copy(update={"plans": plans})
