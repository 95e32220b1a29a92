"""Tables for `inventory placement`."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table as RichTable
from rich.text import Text

from llm_inventory.engine.placement import DeviceFit, PlacementResult, Plan
from llm_inventory.engine.placement.models import WouldFit
from llm_inventory.render.fit import Diagnostic, Footnote, Table
from llm_inventory.render.tiers import tier_bars, tiers_note
from llm_inventory.units import UnitSystem, format_bytes


def _split(plan: Plan) -> str:
    text = f"tp{plan.tp} pp{plan.pp}" + (f" ep{plan.ep}" if plan.ep > 1 else "")
    text += f" ×{plan.dp}"
    mode = {"encoder": " enc", "prefill/decode": " P/D"}.get(plan.disaggregation or "", "")
    return text + mode


def _engine(result: PlacementResult) -> str:
    from llm_inventory.engine.serving import get

    return get(f"{result.engine}@{result.engine_version}").label


def _splits(splits: list[str], most: int = 4) -> str:
    if len(splits) <= most:
        return ", ".join(splits)
    return ", ".join(splits[:most]) + f" and {len(splits) - most} more"


def _seconds(value: float) -> str:
    return f"{value * 1000:,.0f} ms" if value >= 0.01 else f"{value * 1000:.2f} ms"


def _times(plan: Plan) -> tuple[str, str, str]:
    t = plan.timing
    if t is None:
        return "—", "—", "—"
    return _seconds(t.ttft_s), _seconds(t.tpot_s), f"{t.tokens_per_s_per_device:,.0f}"


TABLE_LIMIT = 20  # plans a table shows unless --limit says otherwise


def _verdict(plan: Plan) -> Text:
    if not plan.legal:
        return Text("illegal", style="red")
    if plan.fits:
        return Text("fits", style="green")
    if plan.why and "refuses" in plan.why:
        return Text("refused", style="red")
    if plan.per_device is not None and plan.per_device.kv_pool_bytes <= 0:
        return Text("no room", style="yellow")
    return Text("too small", style="yellow")


def placement_tables(result: PlacementResult, units: UnitSystem,
                     limit: int | None = None) -> list[RichTable | Text]:
    """The widths table, the plans (the first 20 unless `limit` says otherwise), the lines
    that explain them; warnings (a context past the model's positions, uneven stages, idle
    devices) go to stderr as Diagnostics."""
    head = Text(
        f"{result.model} on {result.count} × {result.device} "
        f"({format_bytes(result.device_memory_bytes, units)} each, "
        f"{result.gpu_memory_utilization:g} usable) · {result.context:,} tokens × "
        f"{result.concurrency} · weights {result.weights.label}, KV {result.kv_dtype}",
        style="bold",
    )
    keep = TABLE_LIMIT if limit is None else (limit or len(result.plans))
    shown = result.plans[:keep]
    hidden = len(result.plans) - len(shown)
    summary = Text(f"{result.candidates} candidate splits: {result.legal} legal, "
                   f"{result.fitting} fit; showing {len(shown)}"
                   + (f" ({hidden} more: --limit 0 shows all)" if hidden else "")
                   + " (×N: replicas; P/D: separate prefill and decode pools; enc: encoder on "
                   "its own device; conc.: requests at the context one engine holds; "
                   "total: every engine of the deployment, replicas × attention-DP ranks)")
    # the estimates give way first, then the pool whose tokens the next column counts
    table = Table(optional=("time†", "reserve*", "KV pool"))
    for name in ("plan", "verdict", "weights", "reserve*", "KV pool", "KV tokens", "conc.",
                 "total", "time†"):
        table.add_column(name, justify="left" if name in ("plan", "verdict") else "right",
                         no_wrap=name in ("plan", "conc.", "total"))
    notes: list[str] = []
    warnings: list[str] = []
    launches: list[str] = []
    misses: dict[str, list[int]] = {}  # why a plan does not fit → the plans it stops
    for index, plan in enumerate(shown, start=1):
        d = plan.per_device
        size = (lambda n: format_bytes(n, units)) if d else None
        table.add_row(
            f"{index}. {_split(plan)}",
            _verdict(plan),
            size(d.weight_bytes) if size and d else "—",
            size(d.reserve_bytes) if size and d else "—",
            size(d.kv_pool_bytes) if size and d else "—",
            f"{d.kv_capacity_tokens:,}" if d and d.kv_capacity_tokens else "—",
            f"{plan.max_concurrency:,.1f}" if plan.max_concurrency is not None else "—",
            _total(plan),
            "/".join(_times(plan)[:2]).replace(" ms/", "/") if plan.timing else "—",
        )
        if plan.why and not plan.fits:
            misses.setdefault(plan.why, []).append(index)
        for warning in plan.warnings:
            warnings.append(f"plan {index} ({_split(plan)}): {warning}")
        if plan.legal and plan.fits_context is False and plan.longest_context:
            notes.append(f"{index}. one request at {result.context:,} tokens does not fit; "
                         f"the longest that does is {plan.longest_context:,}")
        if plan.host is not None and plan.host.total_bytes:
            h = plan.host
            layers = f"{h.layers} layer{'' if h.layers == 1 else 's'}, " if h.layers else ""
            notes.append(f"{index}. host RAM {format_bytes(h.total_bytes, units)}: {layers}"
                         f"weights {format_bytes(h.weight_bytes, units)}, KV "
                         f"{format_bytes(h.kv_bytes, units)}, compute "
                         f"{format_bytes(h.compute_bytes, units)}")
        tiers = tiers_note(index, plan, units)
        if tiers is not None:
            notes.append(tiers)
        if d is not None and d.state_slots is not None:
            notes.append(f"{index}. " + state_slots_note(d, plan.max_concurrency,
                                                         result.context, units))
        if plan.launch:
            launches.append(f"{index}. " + "\n   ".join(plan.launch))
        elif plan.legal and any(p.launch for p in shown):
            launches.append(f"{index}. {_engine(result)}'s command line cannot say this plan")
        if plan.kv_handover_bytes:
            handed = format_bytes(plan.kv_handover_bytes, units)
            notes.append(f"{index}. each request hands {handed} of KV from the prefill pool "
                         "to the decode pool")
    widths = RichTable(title=None)
    # two-line headers: on one line they held the table past 80 columns
    for name in ("tp\n(pp 1)", "weights/\ndevice", "state/seq/\ndevice", "sequences",
                 "verdict"):
        widths.add_column(name, justify="left" if name == "verdict" else "right",
                          overflow="fold" if name == "verdict" else "ellipsis")
    for w in result.widths:
        verdict = "fits" if w.fits else ("illegal: " if not w.legal else "") + (w.why or "")
        widths.add_row(f"{w.tp}", format_bytes(w.weight_bytes, units),
                       format_bytes(w.state_bytes_per_sequence, units),
                       f"{w.max_concurrency:,.2f}" if w.max_concurrency is not None else "—",
                       verdict)
    weights_line = Text(
        f"weights {format_bytes(result.model_weight_bytes, units)} for one replica; "
        f"{format_bytes(result.usable_bytes, units)} usable per device, as "
        f"{_engine(result)} accounts for it")
    parts: list[RichTable | Text] = [head, weights_line]
    if result.estimated:
        parts.append(Text(result.estimated, style="bold"))
    parts += [Diagnostic(note) for note in result.notes]
    if result.widths:
        parts.append(widths)
    parts += [summary, table]
    parts.append(Text(f"order ({result.sort}): {result.order}", style="dim"))
    if result.smallest is not None:
        small = result.smallest
        split = f"tp{small.tp} pp{small.pp}" + (f" ep{small.ep}" if small.ep > 1 else "")
        parts.append(Text(f"smallest fit: {small.devices:,} device"
                          f"{'' if small.devices == 1 else 's'} ({split} ×{small.replicas}) "
                          f"serve {result.concurrency:,} request"
                          f"{'' if result.concurrency == 1 else 's'} at "
                          f"{result.context:,} tokens"))
    if result.refused:
        lines = [f"  {r.reason} ({_splits(r.splits)})" for r in result.refused]
        parts.append(Text("refused splits:\n" + "\n".join(lines)))
    parts.append(Footnote("* reserve is an estimate: " + result.estimate, column="reserve*",
                          style="dim"))
    timed = next((p.timing for p in shown if p.timing is not None), None)
    if timed is not None:
        parts.append(Footnote(
            f"† time to first token / time per output token: {timed.estimate}; prefill of "
            f"{timed.prompt_tokens:,} tokens, decode at the batch one engine holds (or "
            "--batch); bounds and tokens/s in JSON", column="time†", style="dim"))
    notes = [f"{_numbers(at)} {'does' if len(at) == 1 else 'do'} not fit: {why}"
             for why, at in misses.items()] + notes
    if notes:
        parts.append(Text("\n".join(notes)))
    if result.would_fit is not None:
        parts.append(Text(would_fit_line(result, units), style="yellow"))
    if launches:
        parts.append(Text("launch (one replica each):\n" + "\n".join(launches)))
    if shown and shown[0].speculative is not None:
        from llm_inventory.render.speculative import speculative_text

        parts.append(speculative_text(shown[0], units, "plan 1"))
    best = shown[0].per_device if shown else None
    if best is not None and (best.lora is not None or best.multimodal is not None):
        from llm_inventory.render.features import feature_lines

        parts.append(Text("\n".join(feature_lines(best, units))))
    bars = _memory(result, shown)
    if bars is not None:
        parts.append(bars)
    tier_table = tier_bars([(f"{i}. {_split(p)}", p) for i, p in enumerate(shown, start=1)])
    if tier_table is not None:
        parts.append(tier_table)
    if result.trust:
        parts.append(Text("trust: " + "; ".join(f"{group.replace('_', ' ')} {t.label()}"
                                                for group, t in result.trust.items()),
                          style="dim"))
    parts += [Diagnostic(warning) for warning in warnings]
    return parts


def _best(result: PlacementResult) -> Plan | None:
    return result.plans[0] if result.plans else None


def engines_side_by_side(results: list[PlacementResult], units: UnitSystem,
                         limit: int | None = None) -> list[RichTable | Text]:
    """One model across engines: a column per engine for its best plan, then each engine's
    own block."""
    first = results[0]
    head = Text(f"{first.model} on {first.count} × {first.device} · {first.context:,} "
                f"tokens × {first.concurrency} · {len(results)} engines side by side",
                style="bold")
    table = Table(title="best plan of each engine")
    table.add_column("")
    for r in results:
        table.add_column(_engine(r), justify="right")

    def row(name: str, cell: Callable[[PlacementResult, Plan, DeviceFit], str]) -> None:
        values = []
        for r in results:
            plan = _best(r)
            d = plan.per_device if plan is not None else None
            values.append(cell(r, plan, d) if plan is not None and d is not None else "—")
        table.add_row(name, *values)

    row("plan", lambda r, p, d: _split(p))
    row("verdict", lambda r, p, d: _verdict(p).plain)
    row("usable/device", lambda r, p, d: format_bytes(d.usable_bytes, units))
    row("weights/device", lambda r, p, d: format_bytes(d.weight_bytes, units))
    row("reserve*/device", lambda r, p, d: format_bytes(d.reserve_bytes, units))
    row("KV pool/device", lambda r, p, d: format_bytes(d.kv_pool_bytes, units))
    row("KV tokens", lambda r, p, d: f"{d.kv_capacity_tokens:,}")
    row("conc.", lambda r, p, d: f"{p.max_concurrency:,.2f}"
        if p.max_concurrency is not None else "—")
    row("total conc.", lambda r, p, d: _total(p, 2))
    parts: list[RichTable | Text] = [head, table]
    for r in results:
        parts.append(Text(f"── {_engine(r)} ──", style="bold"))
        parts += placement_tables(r, units, limit)
    return parts


def would_fit_line(result: PlacementResult, units: UnitSystem) -> str:
    """What would fit when nothing does, each change alone."""
    assert result.would_fit is not None
    return would_fit_text(result.would_fit, result.device, result.count, units)


def would_fit_text(w: WouldFit, device: str, count: int, units: UnitSystem = "iec") -> str:
    """`w` as one line: the fewest devices of this type, the longest context, the dtypes and
    the catalog device that would fit (placement's and compare's)."""
    if not w.searched:
        return (f"what would fit is sought for up to 64 devices, not {w.devices_searched:,} "
                "(ask for fewer)")
    found = []
    if w.devices is not None:
        s = w.devices
        split = f"tp{s.tp} pp{s.pp}" + (f" ep{s.ep}" if s.ep > 1 else "")
        found.append(f"{s.devices:,} × {device} ({split})")
    else:
        found.append(f"no count of {device} up to {w.devices_searched:,}")
    if w.longest_context:
        found.append(f"a context of {w.longest_context:,} tokens")
    if w.dtypes:
        found.append("weights at " + " or ".join(w.dtypes))
    if w.kv_dtypes:
        found.append("a KV cache at " + " or ".join(w.kv_dtypes))
    if w.device is not None and w.device_memory_bytes is not None:
        found.append(f"{count:,} × {w.device} "
                     f"({format_bytes(w.device_memory_bytes, units)} each)")
    return "would fit with: " + "; ".join(found)


def _numbers(at: list[int]) -> str:
    """Plan numbers as a reader takes them: "3.", "1–6.", "1, 3, 5."."""
    if len(at) == 1:
        return f"{at[0]}."
    if at == list(range(at[0], at[-1] + 1)):
        return f"{at[0]}–{at[-1]}."
    return ", ".join(str(i) for i in at) + "."


def state_slots_note(d: DeviceFit, held: float | None, context: int,
                     units: UnitSystem) -> str:
    """The state slots as their own part of the KV pool, and the knob that moves them."""
    slots = d.state_slots or 0
    text = (f"state slots: {slots:,} requests' fixed state, "
            f"{format_bytes(d.state_slot_bytes or 0, units)} of the "
            f"{format_bytes(d.kv_pool_bytes, units)} KV pool, apart from the tokens")
    best, reach = d.state_slots_best, d.state_slots_best_concurrency
    if (d.state_slots_knob and best is not None and reach is not None
            and (held is None or reach > held + 0.005)):
        now = f" (now {held:,.2f})" if held is not None else ""
        text += (f"; {d.state_slots_knob} {best:,} would hold {reach:,.2f} requests at "
                 f"{context:,} tokens{now}")
    return text


def _total(plan: Plan, places: int = 1) -> str:
    """Every engine's concurrency together, with the engine count when it is more than one
    ("×8 103.5")."""
    if plan.total_concurrency is None:
        return "—"
    text = f"{plan.total_concurrency:,.{places}f}"
    return f"×{plan.engines} {text}" if plan.engines > 1 else text


def _memory(result: PlacementResult, shown: list[Plan]) -> RichTable | None:
    """A bar per plan of the binding device: weights | reserve | KV pool | free."""
    from llm_inventory.render.charts import memory_bars
    from llm_inventory.render.speculative import drafter_bytes

    rows = []
    drafter = any(drafter_bytes(plan) for plan in shown)
    for index, plan in enumerate(shown, start=1):
        d = plan.per_device
        if d is None:
            continue
        # LoRA adapter buffers sit with the weights; the encoder's reserve is in the reserve
        loaded = d.weight_bytes + (d.lora.device_bytes if d.lora is not None else 0)
        free = d.memory_bytes - loaded - d.reserve_bytes - max(0, d.kv_pool_bytes)
        own = drafter_bytes(plan)
        weights = [loaded - own, own] if drafter else [loaded]
        rows.append((f"{index}. {_split(plan)}",
                     [*weights, d.reserve_bytes, max(0, d.kv_pool_bytes), max(0, free)],
                     d.memory_bytes))
    return memory_bars(rows, drafter=drafter) if rows else None
