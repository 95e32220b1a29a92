"""`inventory recommend MODEL`: the plan to rent for a workload and its latency targets."""

from __future__ import annotations

import math
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
    tokens_parser,
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
    HicacheRatioOption,
    HicacheSizeOption,
    HostLinkOption,
    HostMemoryOption,
    KvDiskOption,
    KvOffloadOption,
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
from llm_inventory.render.output import OutputFormat


def _fraction(text: str) -> float:
    from llm_inventory.errors import InputError
    from llm_inventory.units import parse_fraction

    try:
        return parse_fraction(text, "gpu_memory_utilization")
    except InputError as exc:
        raise typer.BadParameter(exc.message) from exc


def _seconds(field: str, text: str | None) -> float | None:
    """`2`, `2s`, `500ms`, `0.5`: seconds (`units.parse_seconds`); None passes through."""
    from llm_inventory.units import parse_seconds

    return None if text is None else parse_seconds(text, field)


def _number(field: str, text: str | None, *, allowed: str, zero: bool = False,
            below: float | None = None) -> float | None:
    """A finite number above zero (or from zero with `zero`), below `below` when given."""
    from llm_inventory.bounds import NUMBER_TEXT
    from llm_inventory.errors import InputError

    if text is None:
        return None
    try:  # a 5,000-digit number is refused before float() reads it
        value = float(text) if len(text) <= NUMBER_TEXT else math.nan
    except ValueError:
        value = math.nan
    low_ok = value >= 0 if zero else value > 0
    if not math.isfinite(value) or not low_ok or (below is not None and value >= below):
        raise InputError(field, f"must be {allowed}, got {text!r}")
    return value


def _with_local_calibration(spec: Any, request: Any, profile: Path | None,
                            off: bool) -> Any:
    """recommend run with the local calibration profile applied, as placement applies it:
    each engine's entries for the one device asked (a profile is learned per GPU model;
    with several devices it is not applied, and a warning says so)."""
    from contextlib import ExitStack

    from llm_inventory.cli.profile_store import local_calibration, profile_trust
    from llm_inventory.engine.recommend import recommend as run
    from llm_inventory.render.output import warn

    used: list[Any] = []
    with ExitStack() as stack:
        if len(request.devices) == 1:
            for name in request.engines:
                used += stack.enter_context(local_calibration(
                    profile, off, name, request.devices[0], spec.name))
        elif profile is not None:
            warn("--profile: a calibration profile is learned per GPU model; give one "
                 "--device to apply it")
        result = run(spec, request)
    if used:
        result = result.model_copy(update={"trust": {
            **result.trust, "reserve": profile_trust(used)}})
    return result


def _histogram(path: Path) -> list[Any]:
    """Length bins from a YAML/JSON list of {isl, osl, weight} (or CSV isl,osl[,weight])."""
    from pydantic import TypeAdapter, ValidationError

    from llm_inventory.engine.recommend import LengthBin
    from llm_inventory.errors import InputError
    from llm_inventory.spec.errors import from_validation
    from llm_inventory.spec.yaml_io import parse_json, parse_yaml, read_text

    text = read_text(path)
    data: Any
    if path.suffix.lower() == ".csv":
        data = []
        first = True
        for number, line in enumerate(text.splitlines(), start=1):
            cells = [c.strip() for c in line.split(",")]
            if not line.strip():
                continue
            header, first = first and not cells[0].replace("_", "").isdigit(), False
            if header:
                continue  # only the first line that is not blank may be a header
            if len(cells) not in (2, 3):
                raise InputError(f"{path}: line {number}", "expected isl,osl[,weight]")
            data.append(dict(zip(("isl", "osl", "weight"), cells, strict=False)))
    elif path.suffix.lower() == ".json":
        data = parse_json(text, str(path))
    else:
        data = parse_yaml(text, str(path))
    if isinstance(data, dict):
        data = data.get("lengths", data.get("histogram"))
    if not isinstance(data, list) or not data:
        raise InputError(str(path), "expected a list of {isl, osl, weight} bins")
    try:
        return TypeAdapter(list[LengthBin]).validate_python(data)
    except ValidationError as exc:
        raise from_validation(exc, str(path)) from exc


def _listed(values: list[str]) -> list[str]:
    """Repeated and comma-separated values alike, in order."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def recommend(
    model: Annotated[str, typer.Argument(
        metavar="MODEL",
        help="Preset, Hugging Face id, YAML model file, config.json, model folder or GGUF.")],
    use_case: Annotated[str | None, typer.Option(
        metavar="NAME", autocompletion=complete.use_cases,
        help="Named workload: chat, code-completion, summarisation or "
        "batch (its lengths and targets; flags override them).")] = None,
    isl: Annotated[int | None, typer.Option(
        parser=tokens_parser("isl"), metavar="TOKENS", help="Prompt tokens per request.")
    ] = None,
    osl: Annotated[int | None, typer.Option(
        parser=tokens_parser("osl"), metavar="TOKENS", help="Output tokens per request.")
    ] = None,
    lengths: Annotated[Path | None, typer.Option(
        help="A length histogram: YAML/JSON list of {isl, osl, weight}, or CSV "
             "isl,osl[,weight] (instead of --isl/--osl).")] = None,
    qps: Annotated[str | None, typer.Option(
        metavar="RATE", help="Requests per second to serve.")] = None,
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="Users in a closed loop (instead of --qps).")] = None,
    prefix_share: Annotated[str | None, typer.Option(
        metavar="FRACTION", help="Share of prompt tokens a prefix cache serves (0 to <1).")
    ] = None,
    ttft: Annotated[str | None, typer.Option(
        metavar="TIME", help="Time-to-first-token target: 2s, 500ms.")] = None,
    tpot: Annotated[str | None, typer.Option(
        "--tpot", "--itl", metavar="TIME", help="Time per output token target: 50ms.")
    ] = None,
    e2e: Annotated[str | None, typer.Option(
        metavar="TIME", help="End-to-end time target per request: 30s.")] = None,
    percentile: Annotated[str | None, typer.Option(
        metavar="P", help="The percentile targets hold at: p50 (default) or p95.")] = None,
    device: Annotated[list[str] | None, typer.Option(
        "--device", "-d", autocompletion=complete.devices,
        help="Device id from `inventory devices`; several: repeat it or "
        "separate them with commas.")
    ] = None,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="Most GPUs in all (default: no cap; one node per "
                                     "replica at most).")] = None,
    engine: Annotated[list[str] | None, typer.Option(
        "--engine", "-e", metavar="ENGINE[@VERSION]", autocompletion=complete.engines,
        help="Serving engine (default vllm); several: repeat it or separate them with "
        "commas, as placement takes them.")] = None,
    objective: Annotated[str, typer.Option(
        metavar="KEY", autocompletion=complete.objectives,
        help="What ranks the plans that meet the targets: cost (default), "
        "latency, gpus or throughput.")] = "cost",
    prices: Annotated[Path | None, typer.Option(
        help="A YAML price file (the catalog's schema) adding to or replacing its entries.")
    ] = None,
    provider: Annotated[str | None, typer.Option(
        help="Price at this provider only (default: the cheapest listed).")] = None,
    spot: Annotated[bool, typer.Option(help="Price at spot rates where published.")] = False,
    power_price: Annotated[str | None, typer.Option(
        metavar="PRICE", help="For owned GPUs: energy at this price in $ per kWh, with the "
        "devices' TDP.")
    ] = None,
    dtype: DtypeOption = None,
    kv_dtype: KvDtypeOption = None,
    tp: TpOption = None,
    pp: PpOption = None,
    ep: EpOption = None,
    context: Annotated[int | None, typer.Option(
        "--context", "--max-model-len", parser=tokens_parser("context"), metavar="TOKENS",
        help="The context the engine is launched with (default: the longest ISL + OSL of "
             "the workload; longer lets longer requests in).")] = None,
    disaggregation: Annotated[bool, typer.Option(
        help="Consider disaggregated plans (separate prefill and decode pools, or the "
             "encoder on its own GPU).")] = True,
    replicas: Annotated[int | None, typer.Option(
        min=1, help="Serve with exactly this many replicas: load past them queues (and "
             "misses), none are added. Prefill/decode plans are not considered.")] = None,
    requests: Annotated[int | None, typer.Option(
        min=1, help="A finite run of this many requests (a benchmark): past capacity they "
             "queue and TTFT counts the wait, instead of never catching up.")] = None,
    max_num_batched_tokens: Annotated[int | None, typer.Option(
        parser=tokens_parser("max_num_batched_tokens"), metavar="TOKENS",
        help="Tokens per engine step the plans run and launch with (default: the "
             "engine's).")] = None,
    max_num_seqs: Annotated[int | None, typer.Option(
        min=1, help="Sequences per step the plans run and launch with (default: the "
             "engine's; the launch line otherwise asks for the operating batch).")] = None,
    gpu_memory_utilization: Annotated[float | None, typer.Option(
        parser=_fraction, metavar="FRACTION",
        help="The engine's memory fraction, as it means it (default: the engine's).")] = None,
    prefill_replicas: Annotated[int | None, typer.Option(
        min=1, help="Prefill/decode plans: exactly this many prefill replicas (a rate they "
             "cannot keep up with misses).")] = None,
    decode_replicas: Annotated[int | None, typer.Option(
        min=1, help="Prefill/decode plans: exactly this many decode replicas, priced at the "
             "load each carries.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the length sample.")] = 0,
    limit: Annotated[int | None, typer.Option(
        min=0, help="Plans to keep, best first (0: all; default 10 in the table).")] = None,
    require_slo: Annotated[bool, typer.Option(
        help="Exit 1 when no plan meets the targets (for CI).")] = False,
    plot: Annotated[Path | None, typer.Option(
        metavar="FILE", help="Draw the Pareto front and the KV capacity against context "
        "into an .svg or .png file (needs the `plot` extra).")] = None,
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
    kv_offload: KvOffloadOption = None,
    kv_disk: KvDiskOption = None,
    hicache_ratio: HicacheRatioOption = None,
    hicache_size: HicacheSizeOption = None,
    reload_tokens: ReloadOption = None,
    host_memory: HostMemoryOption = None,
    host_link: HostLinkOption = None,
) -> None:
    """The plans that meet a workload's latency targets, ranked by cost: replicas, GPUs,
    $/hour, $ per million tokens, and the launch command of the best. Times are calibrated
    estimates on published measurements, with their error band.

    Example: inventory recommend llama-3.1-8b -d h100 --use-case chat --qps 5
    """
    from llm_inventory.bounds import search_lists
    from llm_inventory.engine.recommend import (
        OBJECTIVES,
        RecommendRequest,
        Targets,
        Workload,
    )
    from llm_inventory.errors import CheckFailed, InputError
    from llm_inventory.render.output import emit
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model
    from llm_inventory.spec.prices import load_prices, price_catalog
    from llm_inventory.spec.prices import use_case as named

    if plot is not None:
        from llm_inventory.render.plot import check_target

        check_target(plot)
    from llm_inventory.cli.files import check_report

    check_report(report)
    preset = named(use_case) if use_case is not None else None
    if objective not in OBJECTIVES:
        raise InputError("objective", f"unknown objective {objective!r}; use one of "
                         + ", ".join(OBJECTIVES))
    if percentile is not None and percentile.lower() not in ("p50", "p95"):
        raise InputError("percentile", f"use p50 or p95, got {percentile!r}")
    bins = _histogram(lengths) if lengths is not None else []
    first = bins[0] if bins else None
    in_len = isl or (first.isl if first else None) or (preset.isl if preset else None)
    out_len = osl or (first.osl if first else None) or (preset.osl if preset else None)
    if in_len is None or out_len is None:
        raise InputError("isl", "give --isl and --osl, --lengths FILE or --use-case NAME")
    share = _number("prefix_share", prefix_share, allowed="a fraction from 0 to below 1",
                    zero=True, below=1.0)
    rate = _number("qps", qps, allowed="a positive number of requests per second")
    targets = Targets(
        ttft_s=_seconds("ttft", ttft) or (preset.ttft_s if preset else None),
        tpot_s=_seconds("tpot", tpot) or (preset.tpot_s if preset else None),
        e2e_s=_seconds("e2e", e2e) or (preset.e2e_s if preset else None),
        percentile=(percentile.lower() if percentile else
                    preset.percentile if preset else "p50"))
    catalog = price_catalog()
    if prices is not None:
        catalog = catalog.merged(load_prices(prices))
    providers = sorted({p.provider for p in catalog.prices})
    if provider is not None and provider not in providers:
        raise InputError("provider", f"unknown provider {provider!r}; known: "
                         + ", ".join(providers))
    if not device:
        raise InputError("device", "give --device (see `inventory devices`); repeat it to "
                         "compare several")
    device_ids = list(dict.fromkeys(_listed(device)))
    # Engines × devices within bounds.SEARCHES, before any search starts.
    engines = search_lists(_listed(engine or ["vllm"]), device_ids)
    devices = list({d.id: d for d in (resolve_device(i) for i in device_ids)}.values())
    spec = load_model(model)
    request = RecommendRequest(
        model_ref=model, devices=devices, count=count, engines=engines,
        workload=Workload(isl=in_len, osl=out_len, histogram=bins, qps=rate,
                          concurrency=concurrency, prefix_share=share or 0.0),
        targets=targets, objective=objective,
        prices=catalog, provider=provider, spot=spot,
        power_price=_number("power_price", power_price, below=1e6,
                            allowed="a positive price in $ per kWh, below 1,000,000"),
        dtype=dtype,
        kv_dtype=kv_dtype, seed=seed, limit=limit, tp=tp, pp=pp, ep=ep, context=context,
        disaggregation=disaggregation, replicas=replicas, requests=requests,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        gpu_memory_utilization=gpu_memory_utilization, prefill_replicas=prefill_replicas,
        decode_replicas=decode_replicas,
        speculative=speculative_request(speculative, draft_model, num_speculative_tokens,
                                        draft_tp, acceptance),
        **feature_fields(enable_lora, lora_rank, max_loras, max_cpu_loras, lora_dtype,
                         lora_modules, fully_sharded_loras, lora_file, limit_mm_per_prompt,
                         mm_max_pixels, skip_mm_profiling),
        offload=offload_block(None, kv_offload, kv_disk, hicache_ratio, hicache_size,
                              reload_tokens, host_memory, host_link))
    result = _with_local_calibration(spec, request, profile, no_local_calibration)
    if plot is not None:
        from llm_inventory.render.plot import write_plot

        write_plot(result, plot)

    def table() -> list[Any]:
        from llm_inventory.render.recommend import recommend_tables

        return recommend_tables(result, limit)

    emit(result, fmt, table)
    if report is not None:
        from llm_inventory.cli.files import write_atomically
        from llm_inventory.render.report import recommend_page

        write_atomically(report, recommend_page(result, (
            f"{spec.name}: {request.workload.isl:,} tokens in, {request.workload.osl:,} out, "
            f"on {', '.join(d.id for d in devices)}")), "report")
    if require_slo and not result.meeting:
        best = result.chosen
        why = f" (best: {best.label} on {best.device}, {'; '.join(best.misses)})" \
            if best is not None and best.misses else ""
        raise CheckFailed(f"--require-slo: no plan of {spec.name} meets the targets{why}")
