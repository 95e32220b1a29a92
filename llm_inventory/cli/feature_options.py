"""Options for the serving features placement and recommend fit: LoRA adapter buffers and
the vision-language budget (`engine/lora.py`, `engine/mm_budget.py`)."""

# No `from __future__ import annotations`: Typer reads the option annotations on every run.

from pathlib import Path
from typing import Annotated, Any

import typer

EnableLoraOption = Annotated[bool, typer.Option(
    "--enable-lora", help="Serve LoRA adapters: the engine's adapter buffers at its "
    "defaults (vLLM 1 slot of rank 16; SGLang 8 slots, give --lora-rank).")]
LoraRankOption = Annotated[int | None, typer.Option(
    "--lora-rank", metavar="R",
    help="Largest adapter rank (vLLM --max-lora-rank); turns LoRA on.")]
MaxLorasOption = Annotated[int | None, typer.Option(
    "--max-loras", metavar="N",
    help="Adapters in one batch (vLLM --max-loras, SGLang --max-loras-per-batch); turns "
    "LoRA on.")]
MaxCpuLorasOption = Annotated[int | None, typer.Option(
    "--max-cpu-loras", metavar="N",
    help="Adapters vLLM keeps in host memory (default --max-loras).")]
LoraDtypeOption = Annotated[str | None, typer.Option(
    "--lora-dtype", metavar="DTYPE", help="Adapter buffer dtype (auto: the model's).")]
LoraModulesOption = Annotated[str | None, typer.Option(
    "--lora-modules", metavar="LIST", help="Target modules, comma-separated (q_proj,v_proj; "
    "qkv_proj, gate_up_proj, all); default every one the engine adapts.")]
FullyShardedOption = Annotated[bool, typer.Option(
    "--fully-sharded-loras", help="vLLM: shard both adapter matrices over TP.")]
LoraFileOption = Annotated[list[Path] | None, typer.Option(
    "--lora-file", metavar="FILE", help="llama.cpp: an adapter file (--lora), sized by its "
    "bytes; repeatable.")]
LimitMmOption = Annotated[str | None, typer.Option(
    "--limit-mm-per-prompt", metavar="MOD=N", help="Items per prompt by modality "
    "(image=4,video=0; image=0 turns the encoder budget off).")]
MaxPixelsOption = Annotated[int | None, typer.Option(
    "--mm-max-pixels", metavar="PX", help="The image processor's max_pixels "
    "(Qwen-VL; default its checkpoints', 16,384 tokens an image).")]
SkipMmProfilingOption = Annotated[bool, typer.Option(
    "--skip-mm-profiling", help="vLLM: skip the encoder's profiling pass.")]


def feature_fields(enable_lora: bool = False, lora_rank: int | None = None,
                   max_loras: int | None = None, max_cpu_loras: int | None = None,
                   lora_dtype: str | None = None, lora_modules: str | None = None,
                   fully_sharded_loras: bool = False, lora_file: list[Path] | None = None,
                   limit_mm_per_prompt: str | None = None, mm_max_pixels: int | None = None,
                   skip_mm_profiling: bool = False) -> dict[str, Any]:
    """The placement request's `lora` and `multimodal` fields from these options (each
    None when none of its options is given)."""
    from llm_inventory.errors import InputError

    found: dict[str, Any] = {}
    files = lora_file or []
    if enable_lora or any(v is not None for v in (lora_rank, max_loras, max_cpu_loras,
                                                  lora_dtype, lora_modules)) \
            or fully_sharded_loras or files:
        from llm_inventory.engine.lora import LoraRequest

        sizes = []
        for path in files:
            try:
                sizes.append(path.stat().st_size)
            except OSError as exc:
                raise InputError("lora_file", f"cannot read {path.name}: "
                                 f"{exc.strerror or exc}") from exc
        modules = (tuple(m.strip() for m in lora_modules.split(",") if m.strip())
                   if lora_modules else None)
        found["lora"] = LoraRequest(
            max_loras=max_loras, max_lora_rank=lora_rank, max_cpu_loras=max_cpu_loras,
            lora_dtype=lora_dtype, fully_sharded=fully_sharded_loras,
            target_modules=modules, adapter_bytes=tuple(sizes),
            adapters=tuple(str(p) for p in files))
    if limit_mm_per_prompt is not None or mm_max_pixels is not None or skip_mm_profiling:
        from llm_inventory.engine.mm_budget import MultimodalRequest, parse_limits

        found["multimodal"] = MultimodalRequest(
            limit_per_prompt=parse_limits(limit_mm_per_prompt) if limit_mm_per_prompt
            else {}, max_pixels=mm_max_pixels, skip_profiling=skip_mm_profiling)
    return found
