"""`inventory placement MODEL --device D --count N`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from llm_inventory.cli.common import (
    ContextOption,
    DtypeOption,
    FormatOption,
    KvDtypeOption,
    UnitsOption,
    bytes_parser,
    tokens_parser,
    units_of,
)
from llm_inventory.render.output import OutputFormat, Units


def _fraction(text: str) -> float:
    from llm_inventory.errors import InputError
    from llm_inventory.units import parse_fraction

    try:
        return parse_fraction(text, "gpu_memory_utilization")
    except InputError as exc:
        raise typer.BadParameter(exc.message) from exc


def placement(
    model: Annotated[str, typer.Argument(
        metavar="MODEL",
        help="Preset, YAML model file, config.json, model or Hub cache folder, or GGUF file.")],
    device: Annotated[str | None, typer.Option(
        "--device", "-d", help="Device id or alias from `inventory devices` (h100-sxm …).")] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="Devices available (default: one node).")] = None,
    per_node: Annotated[int | None, typer.Option(
        min=1, help="Devices per node (default: the device's).")] = None,
    device_memory: Annotated[int | None, typer.Option(
        parser=bytes_parser("device_memory"), metavar="SIZE",
        help="A one-off device with this memory (80GiB …), or override --device's.")] = None,
    devices_file: Annotated[Path | None, typer.Option(
        help="A YAML file of devices to pick --device from (the catalog's schema).")] = None,
    tp: Annotated[int | None, typer.Option(min=1, help="Pin tensor parallelism.")] = None,
    pp: Annotated[int | None, typer.Option(min=1, help="Pin pipeline parallelism.")] = None,
    ep: Annotated[int | None, typer.Option(min=1, help="Pin expert parallelism.")] = None,
    context: ContextOption = "8000",  # type: ignore[assignment]
    concurrency: Annotated[int, typer.Option(
        min=1, help="Requests at --context that must fit at once.")] = 1,
    gpu_memory_utilization: Annotated[float, typer.Option(
        parser=_fraction, metavar="FRACTION",
        help="Share of device memory the engine may use (vLLM's default 0.92).")] = "0.92",  # type: ignore[assignment]
    max_num_batched_tokens: Annotated[int | None, typer.Option(
        parser=tokens_parser("max_num_batched_tokens"), metavar="TOKENS",
        help="Tokens per engine step (default as vLLM: 8192 on ≥70 GiB GPUs, else 2048).",
    )] = None,
    max_num_seqs: Annotated[int | None, typer.Option(
        min=1, help="Sequences per step (default as vLLM: 1024 on ≥70 GiB GPUs, else 256).",
    )] = None,
    block_size: Annotated[int, typer.Option(min=1, help="KV cache block size, tokens.")] = 16,
    dtype: DtypeOption = None,
    kv_dtype: KvDtypeOption = None,
    even_experts: Annotated[bool, typer.Option(
        help="Require every EP rank to hold the same number of experts.")] = False,
    allow_cross_node_tp: Annotated[bool, typer.Option(
        help="Allow tensor parallelism across nodes.")] = False,
    legal_only: Annotated[bool, typer.Option(help="Hide illegal plans.")] = False,
    require_fit: Annotated[bool, typer.Option(
        help="Exit 1 when no legal plan fits the workload (for CI).")] = False,
    limit: Annotated[int, typer.Option(
        min=0, help="Plans to show, best first (0: all).")] = 20,
    batch: Annotated[int | None, typer.Option(
        min=1, help="Decode batch for the timing estimate (default: what one engine holds).",
    )] = None,
    prompt_tokens: Annotated[int | None, typer.Option(
        parser=tokens_parser("prompt_tokens"), metavar="TOKENS",
        help="Prompt length for the time-to-first-token estimate (default 1,000).")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Every split of MODEL over the devices — legal or not and why — and whether it fits:
    weights, runtime reserve (an estimate), KV pool, KV capacity and maximum concurrency
    per device, as vLLM accounts for them.

    Example: inventory placement llama-3.1-70b --device h100-sxm --count 8 --context 8000
    """
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import custom_device, load_devices_file, resolve_device
    from llm_inventory.spec.loader import load_model

    extra = load_devices_file(devices_file) if devices_file is not None else []
    if device is None and device_memory is None:
        raise InputError("device", "give --device (see `inventory devices`) or --device-memory")
    chosen = resolve_device(device, extra) if device is not None else None
    if device_memory is not None:
        chosen = custom_device(device_memory, chosen)
    assert chosen is not None
    n = count or per_node or chosen.devices_per_node or 1
    spec = load_model(model)
    request = PlacementRequest(
        device=chosen, count=n, per_node=per_node, tp=tp, pp=pp, ep=ep, context=context,
        concurrency=concurrency, gpu_memory_utilization=gpu_memory_utilization,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        block_size=block_size, dtype=dtype, kv_dtype=kv_dtype, even_experts=even_experts,
        allow_cross_node_tp=allow_cross_node_tp, legal_only=legal_only, limit=limit,
        batch=batch, prompt_tokens=prompt_tokens,
    )
    for pin, value in (("tp", tp), ("pp", pp), ("ep", ep)):
        if value is not None and value > n:  # nothing to place; and a search of that size
            raise InputError(pin, f"{pin} {value:,} needs {value:,} devices; --count is {n:,}")
    if tp is not None and pp is not None and tp * pp > n:
        raise InputError("count", f"tp {tp} × pp {pp} needs {tp * pp} devices; --count is {n}")
    result = plan_placement(spec, request)

    def table() -> list[Any]:
        from llm_inventory.render.placement import placement_tables

        return placement_tables(result, units_of(units))

    emit(result, fmt, table)
    if require_fit and not result.fitting:
        raise CheckFailed(f"--require-fit: no legal plan of {spec.name} fits {n} × "
                          f"{chosen.id} at {result.context:,} tokens × {result.concurrency}")
