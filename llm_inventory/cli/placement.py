"""`inventory placement MODEL --device D --count N`."""

# No `from __future__ import annotations`: Typer reads the option annotations on every run,
# and objects built at import cost it less than strings it must evaluate (see `cli/kv.py`).

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import (
    DtypeOption,
    EpOption,
    FormatOption,
    KvDtypeOption,
    NoLocalCalibrationOption,
    PpOption,
    ProfileOption,
    ReportOption,
    TpOption,
    UnitsOption,
    bytes_parser,
    tokens_parser,
    units_of,
)
from llm_inventory.cli.feature_options import (
    EnableLoraOption,
    FullyShardedOption,
    LimitMmOption,
    LoraDtypeOption,
    LoraFileOption,
    LoraModulesOption,
    LoraRankOption,
    MaxCpuLorasOption,
    MaxLorasOption,
    MaxPixelsOption,
    SkipMmProfilingOption,
    feature_fields,
)
from llm_inventory.cli.offload_options import (
    CpuOffloadOption,
    HicacheRatioOption,
    HicacheSizeOption,
    HostLinkOption,
    HostMemoryOption,
    KvDiskOption,
    KvOffloadOption,
    NoKvOffloadOption,
    ReloadOption,
    offload_block,
)
from llm_inventory.cli.speculative_options import (
    AcceptanceOption,
    DraftModelOption,
    DraftTpOption,
    NumSpeculativeTokensOption,
    SpeculativeOption,
    speculative_request,
)
from llm_inventory.render.output import OutputFormat, Units


def _fraction(text: str) -> float:
    from llm_inventory.errors import InputError
    from llm_inventory.units import parse_fraction

    try:
        return parse_fraction(text, "gpu_memory_utilization")
    except InputError as exc:
        raise typer.BadParameter(exc.message) from exc


# What float() or int() would read as a number, non-finite spellings included.
_NUMERIC = re.compile(r"[+-]?(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][+-]?\d+)?"
                      r"|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def _engine_args(items: list[str]) -> dict[str, str | int | float | bool]:
    """`--engine-arg KEY=VALUE` pairs as engine flags: true/false, numbers, else text."""
    from llm_inventory.bounds import RAW_NUMBER, number
    from llm_inventory.errors import InputError

    flags: dict[str, str | int | float | bool] = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip().lstrip("-").replace("-", "_")
        if not eq or not key:
            raise InputError("engine_arg", f"expected KEY=VALUE, got {item!r}")
        value: str | int | float | bool = text.strip()
        if text.strip().lower() in ("true", "false"):
            value = text.strip().lower() == "true"
        elif _NUMERIC.fullmatch(text.strip()):
            # A number, bounded before it is converted: finite, at most NUMBER_TEXT
            # characters, within RAW_NUMBER (each engine then checks its own range).
            integer = text.strip().lstrip("+-").isdigit()
            value = number(f"--engine-arg {key}", text, low=-RAW_NUMBER, integer=integer)
        flags[key] = value
    return flags


def occupied_memory(used: str | None, free: str | None, memory_bytes: int,
                    count: int) -> list[int]:
    """`--used 30GiB,20GiB` (memory other processes hold, device by device) or `--free
    50GiB,60GiB` (what they leave free) as bytes used per device; devices not listed hold
    nothing. InputError names the flag."""
    from llm_inventory.errors import InputError
    from llm_inventory.units import format_bytes, parse_bytes

    if used is not None and free is not None:
        raise InputError("used", "give --used or --free, not both")
    text, field = (used, "used") if used is not None else (free, "free")
    if text is None:
        return []
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        raise InputError(field, f"expected sizes separated by commas (30GiB,20GiB), got "
                         f"{text[:60]!r}")
    if len(items) > count:
        raise InputError(field, f"{len(items):,} devices listed; --count is {count:,}")
    sizes = [parse_bytes(item, field) for item in items]
    for size in sizes:
        if size > memory_bytes:
            raise InputError(field, f"{format_bytes(size)} is more than the device's "
                             f"{format_bytes(memory_bytes)}")
    return sizes if field == "used" else [memory_bytes - size for size in sizes]


def _groups(text: str, extra: list[Any]) -> list[Any]:
    """`h100:4,a100-80gb:4` as device groups."""
    from llm_inventory.engine.placement.mixed import DeviceGroup
    from llm_inventory.errors import InputError
    from llm_inventory.spec.devices import resolve_device

    groups = []
    for part in text.split(","):
        name, colon, number = part.strip().rpartition(":")
        if not colon or not name or not number.isdigit() or not 1 <= int(number) <= 65_536:
            raise InputError("devices", f"expected TYPE:COUNT pairs such as "
                             f"h100:4,a100-80gb:4, got {part.strip()[:60]!r}")
        groups.append(DeviceGroup(device=resolve_device(name, extra), count=int(number)))
    return groups


def _mixed(model: str, devices: str, extra: list[Any], device: str | None,
           context: int | None, concurrency: int, utilization: float | None, engine: str,
           dtype: str | None, kv_dtype: str | None, fmt: OutputFormat) -> None:
    """`placement --devices`: one instance's stages over several device types."""
    from llm_inventory.engine.placement import PlacementRequest
    from llm_inventory.engine.placement.mixed import plan_mixed
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.loader import load_model

    if device is not None:
        raise InputError("devices", "give --device or --devices, not both")
    groups = _groups(devices, extra)
    engines = engine_list(engine)
    if len(engines) != 1:
        raise InputError("engine", "one engine for a plan over several device types")
    spec = load_model(model)
    request = PlacementRequest(
        device=groups[0].device, count=sum(g.count for g in groups), context=context,
        concurrency=concurrency, gpu_memory_utilization=utilization, dtype=dtype,
        kv_dtype=kv_dtype, engine=engines[0], limit=0)
    result = plan_mixed(spec, groups, request)

    def table() -> list[Any]:
        from llm_inventory.render.mixed import mixed_tables

        return mixed_tables(result)

    emit(result, fmt, table)


def engine_list(text: str) -> list[str]:
    """`--engine a,b@1.2` as engine names; InputError for an unknown engine or version."""
    from llm_inventory.bounds import search_lists
    from llm_inventory.engine.serving import get
    from llm_inventory.errors import InputError

    wanted = [part.strip() for part in text.split(",") if part.strip()]
    if not wanted:
        raise InputError("engine", "name an engine (see `inventory engines`)")
    wanted = search_lists(wanted)  # repeats dropped; at most bounds.ENGINES
    for name in wanted:
        get(name)
    return wanted


def placement(
    model: Annotated[str, typer.Argument(
        metavar="MODEL", autocompletion=complete.models,
        help="Preset, Hugging Face id (org/name[@revision]), YAML model file, config.json, "
             "model or Hub cache folder, or GGUF file.")],
    device: Annotated[str | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Device id or alias from `inventory devices` (h100-sxm …).")] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="Devices available (default: one node).")] = None,
    per_node: Annotated[int | None, typer.Option(
        min=1, help="Devices per node (default: the device's).")] = None,
    device_memory: Annotated[int | None, typer.Option(
        parser=bytes_parser("device_memory"), metavar="SIZE",
        help="A one-off device with this memory (80GiB …), or override --device's.")] = None,
    devices_file: Annotated[Path | None, typer.Option(
        help="A YAML file of devices to pick --device from (the catalog's schema).")] = None,
    devices: Annotated[str | None, typer.Option(
        "--devices", metavar="TYPE:N,…", help="Pipeline stages over several device types, "
        "with the layer partition vLLM is told (VLLM_PP_LAYER_PARTITION): "
        "h100:4,a100-80gb:4.")] = None,
    used: Annotated[str | None, typer.Option(
        metavar="SIZES", help="Memory other processes already hold, device by device: "
        "30GiB,20GiB (each engine meets it its own way: vLLM refuses to start below its "
        "budget, SGLang and TensorRT-LLM shrink the pool).")] = None,
    free: Annotated[str | None, typer.Option(
        metavar="SIZES", help="Or the memory each device has free: 50GiB,60GiB.")] = None,
    tp: TpOption = None,
    pp: PpOption = None,
    ep: EpOption = None,
    context: Annotated[int | None, typer.Option(
        "--context", "--max-model-len", parser=tokens_parser("context"), metavar="TOKENS",
        help="Positions per sequence: 8000, 8k, 32K … (default 8,000, or the model's "
             "limit if lower).")] = None,
    concurrency: Annotated[int, typer.Option(
        min=1, help="Requests at --context that must fit at once.")] = 1,
    gpu_memory_utilization: Annotated[float | None, typer.Option(
        parser=_fraction, metavar="FRACTION",
        help="The engine's memory fraction, as it means it (default: the engine's): vLLM's "
             "share of the total (0.92), SGLang's --mem-fraction-static, TensorRT-LLM's "
             "share of the memory left free.")] = None,
    max_num_batched_tokens: Annotated[int | None, typer.Option(
        parser=tokens_parser("max_num_batched_tokens"), metavar="TOKENS",
        help="Tokens per engine step (default as vLLM: 8192 on ≥70 GiB GPUs, else 2048).",
    )] = None,
    max_num_seqs: Annotated[int | None, typer.Option(
        min=1, help="Sequences per step (default as vLLM: 1024 on ≥70 GiB GPUs, else 256).",
    )] = None,
    block_size: Annotated[int | None, typer.Option(
        min=1, help="KV cache block size, tokens (default: the engine's; vLLM 16).")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", "-e", metavar="ENGINE[@VERSION]", autocompletion=complete.engines,
        help="Serving engine whose accounting to follow (see `inventory engines`); several, "
             "comma-separated, side by side: vllm@0.10,vllm@0.19,vllm.",
    )] = "vllm",
    engine_arg: Annotated[list[str] | None, typer.Option(
        "--engine-arg", metavar="KEY=VALUE",
        help="An engine-native setting by the engine's own name, repeatable (each engine "
             "checks its own): --engine-arg swap_space=8 for vLLM V0, "
             "--engine-arg enforce_eager=true for vLLM 0.21.")] = None,
    dtype: DtypeOption = None,
    kv_dtype: KvDtypeOption = None,
    even_experts: Annotated[bool, typer.Option(
        help="Require every EP rank to hold the same number of experts.")] = False,
    allow_cross_node_tp: Annotated[bool, typer.Option(
        help="Allow tensor parallelism across nodes.")] = False,
    legal_only: Annotated[bool, typer.Option(
        hidden=True, help="Kept for old scripts: plans are always legal splits now.")] = False,
    allow_long_context: Annotated[bool, typer.Option(
        help="Let the engine serve past the model's positions (as vLLM's "
             "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 does; that variable is honoured too).")] = False,
    sort: Annotated[str, typer.Option(
        metavar="KEY", autocompletion=complete.sort_keys,
        help="Order plans by throughput (default, estimated), concurrency, devices, kv or "
             "cost; plans that fit always come first.")] = "throughput",
    require_fit: Annotated[bool, typer.Option(
        help="Exit 1 when no legal plan fits the workload (for CI).")] = False,
    limit: Annotated[int | None, typer.Option(
        min=0, help="Plans to keep, best first (0: all). Default: every plan in JSON and "
                    "YAML, the first 20 in the table.")] = None,
    batch: Annotated[int | None, typer.Option(
        min=1, help="Decode batch for the timing estimate (default: what one engine holds).",
    )] = None,
    prompt_tokens: Annotated[int | None, typer.Option(
        parser=tokens_parser("prompt_tokens"), metavar="TOKENS",
        help="Prompt length for the time-to-first-token estimate (default 1,000).")] = None,
    plot: Annotated[Path | None, typer.Option(
        metavar="FILE", help="Draw the memory bars and the best plan's KV capacity and "
        "maximum concurrency against context into an .svg or .png file (needs the `plot` "
        "extra).")] = None,
    launch: Annotated[bool, typer.Option(
        "--launch", help="Give each plan's launch command in its engine's own flags (a "
        "prefill/decode plan: both servers and the router).")] = False,
    report: ReportOption = None,
    profile: ProfileOption = None,
    no_local_calibration: NoLocalCalibrationOption = False,
    speculative: SpeculativeOption = None,
    draft_model: DraftModelOption = None,
    num_speculative_tokens: NumSpeculativeTokensOption = None,
    draft_tp: DraftTpOption = None,
    acceptance: AcceptanceOption = None,
    enable_lora: EnableLoraOption = False,
    lora_rank: LoraRankOption = None,
    max_loras: MaxLorasOption = None,
    max_cpu_loras: MaxCpuLorasOption = None,
    lora_dtype: LoraDtypeOption = None,
    lora_modules: LoraModulesOption = None,
    fully_sharded_loras: FullyShardedOption = False,
    lora_file: LoraFileOption = None,
    limit_mm_per_prompt: LimitMmOption = None,
    mm_max_pixels: MaxPixelsOption = None,
    skip_mm_profiling: SkipMmProfilingOption = False,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
    cpu_offload_gb: CpuOffloadOption = None,
    kv_offload: KvOffloadOption = None,
    kv_disk: KvDiskOption = None,
    hicache_ratio: HicacheRatioOption = None,
    hicache_size: HicacheSizeOption = None,
    reload_tokens: ReloadOption = None,
    host_memory: HostMemoryOption = None,
    host_link: HostLinkOption = None,
    no_kv_offload: NoKvOffloadOption = False,
) -> None:
    """Every split of MODEL over the devices — legal or not and why — and whether it fits:
    weights, runtime reserve (an estimate), KV pool, KV capacity and maximum concurrency
    per device, as the serving engine accounts for them (vLLM by default; --engine
    a,b shows each engine's result, one block each; JSON is then a list of results).

    Example: inventory placement llama-3.1-70b -d h100 -n 8 --context 8000
    """
    import os

    from llm_inventory.cli.profile_store import local_calibration, profile_trust
    from llm_inventory.engine.placement import ORDERS, PlacementRequest, plan_placement
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import custom_device, load_devices_file, resolve_device
    from llm_inventory.spec.loader import load_model

    if plot is not None:
        from llm_inventory.render.plot import check_target

        check_target(plot)
    from llm_inventory.cli.files import check_report

    check_report(report)
    extra = load_devices_file(devices_file) if devices_file is not None else []
    features = feature_fields(enable_lora, lora_rank, max_loras, max_cpu_loras, lora_dtype,
                              lora_modules, fully_sharded_loras, lora_file,
                              limit_mm_per_prompt, mm_max_pixels, skip_mm_profiling)
    if devices is not None:
        if speculative is not None:  # mixed device types place one target, no drafter
            raise InputError("speculative", "not with --devices; plan the drafter on one "
                             "device type (--device)")
        if features:  # the stages of several device types show no feature figures yet
            raise InputError("devices", "LoRA and multimodal options are fitted on one "
                             "device type (--device), not over --devices")
        return _mixed(model, devices, extra, device, context, concurrency,
                      gpu_memory_utilization, engine, dtype, kv_dtype, fmt)
    if device is None and device_memory is None:
        raise InputError("device", "give --device (see `inventory devices`) or --device-memory")
    chosen = resolve_device(device, extra) if device is not None else None
    if device_memory is not None:
        chosen = custom_device(device_memory, chosen)
    assert chosen is not None
    n = count or per_node or chosen.devices_per_node or 1
    occupied = occupied_memory(used, free, chosen.memory_bytes, n)
    if sort not in ORDERS:
        raise InputError("sort", f"unknown sort key {sort!r}; use one of {', '.join(ORDERS)}")
    engines = engine_list(engine)
    flags = _engine_args(engine_arg or [])
    if no_kv_offload:  # llama.cpp's own setting; other engines refuse it by name
        flags["no_kv_offload"] = True
    spec = load_model(model)
    long_ok = allow_long_context or os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1"
    request = PlacementRequest(
        device=chosen, count=n, per_node=per_node, tp=tp, pp=pp, ep=ep, context=context,
        concurrency=concurrency, gpu_memory_utilization=gpu_memory_utilization,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        block_size=block_size, dtype=dtype, kv_dtype=kv_dtype, even_experts=even_experts,
        allow_cross_node_tp=allow_cross_node_tp, allow_long_context=long_ok, limit=limit,
        batch=batch, prompt_tokens=prompt_tokens, engine=engines[0], sort=sort,
        engine_flags=flags, used_bytes=occupied, **features,
        speculative=speculative_request(speculative, draft_model, num_speculative_tokens,
                                        draft_tp, acceptance),
        offload=offload_block(cpu_offload_gb, kv_offload, kv_disk, hicache_ratio, hicache_size,
                              reload_tokens, host_memory, host_link),
    )
    for pin, value in (("tp", tp), ("pp", pp), ("ep", ep)):
        if value is not None and value > n:  # nothing to place; and a search of that size
            raise InputError(pin, f"{pin} {value:,} needs {value:,} devices; --count is {n:,}")
    results = []
    for name in engines:
        with local_calibration(profile, no_local_calibration, name, chosen, spec.name) as (
                entries):
            found = plan_placement(spec, request.model_copy(update={"engine": name}))
        if entries:
            found = found.model_copy(update={"trust": {
                **found.trust, "reserve": profile_trust(entries)}})
        results.append(found)
    if any(r.fitting == 0 for r in results):
        from llm_inventory.engine.would_fit import would_fit
        from llm_inventory.spec.devices import list_devices

        catalog = [*list_devices(), *extra]
        results = [r if r.fitting else r.model_copy(update={"would_fit": would_fit(
            spec, request.model_copy(update={"engine": f"{r.engine}@{r.engine_version}"}),
            r, catalog)}) for r in results]
    if launch:
        from llm_inventory.engine.launch_lines import with_launch_lines

        results = [with_launch_lines(r, request, model) for r in results]
    result = results[0]
    if plot is not None:
        from llm_inventory.engine.capacity import plan_capacity
        from llm_inventory.render.plot import write_placement_plot

        curves = [plan_capacity(spec, request, r, r.plans[0]) if r.plans else []
                  for r in results]
        write_placement_plot(results, curves, plot, 20 if limit is None else limit)

    def table() -> list[Any]:
        from llm_inventory.render.placement import engines_side_by_side, placement_tables

        if len(results) == 1:
            return placement_tables(result, units_of(units), limit)
        return engines_side_by_side(results, units_of(units), limit)

    emit(result if len(results) == 1 else results, fmt, table)
    if report is not None:
        from llm_inventory.cli.files import write_atomically
        from llm_inventory.engine.launch_lines import with_launch_lines
        from llm_inventory.render.report import placement_page

        best = with_launch_lines(result.model_copy(update={"plans": result.plans[:1]}),
                                 request, model).plans
        write_atomically(report, placement_page(result, (
            f"{spec.name} on {n:,} × {chosen.id}, {result.context:,} tokens × "
            f"{result.concurrency:,} requests, as {result.engine} {result.engine_version} "
            "accounts for it"), best[0].launch if best else []), "report")
    if require_fit and not any(r.fitting for r in results):
        refused = next((p.why for p in result.plans if p.why and "refuses" in p.why), None)
        raise CheckFailed(f"--require-fit: no legal plan of {spec.name} fits {n} × "
                          f"{chosen.id} at {result.context:,} tokens × {result.concurrency}"
                          + (f" ({refused})" if refused else ""))
