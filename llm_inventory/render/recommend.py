"""Tables and the terminal picture for `inventory recommend`."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from llm_inventory.engine.recommend import RecommendedPlan, RecommendResult
from llm_inventory.engine.trust import MARKS

TABLE_LIMIT = 10
_STYLE = {"meets": "green", "near miss": "yellow", "misses": "red"}


def _ms(seconds: float) -> str:
    if seconds == float("inf"):
        return "∞"
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.2f}"


def _head(result: RecommendResult) -> Text:
    w, t = result.workload, result.targets
    traffic = (f"{w.qps:g} requests/s" if w.qps is not None else
               f"{w.concurrency:,} users" if w.concurrency is not None else "every request "
               "queued")
    lengths = (f"{len(w.histogram)}-bin length histogram" if w.histogram else
               f"ISL {w.isl:,} · OSL {w.osl:,}")
    wanted = [f"{name} ≤ {_ms(v)}" for name, v in (("TTFT", t.ttft_s), ("TPOT", t.tpot_s),
                                                    ("E2E", t.e2e_s)) if v is not None]
    goal = (", ".join(wanted) + f" at {t.percentile}") if wanted else "no latency target"
    share = f" · prefix cache {w.prefix_share:.0%}" if w.prefix_share else ""
    return Text(f"{result.model} · {lengths} · {traffic}{share} · {goal}", style="bold")


def _row(index: int, p: RecommendedPlan, key: str, devices: int, engines: int) -> list[str]:
    cost = p.cost
    times = f"{_ms(getattr(p.ttft, key))}/{_ms(getattr(p.tpot, key))}".replace(" ms/", "/")
    return [
        f"{index}. " + (f"{p.engine} " if engines > 1 else "")
        + (f"{p.device} " if devices > 1 else "") + p.label,
        {"near miss": "near"}.get(p.status, p.status), f"{p.gpus:,}",
        f"{p.batch:,}/{p.batch_limit:,}", times,
        _money(cost.per_hour if cost else None),
        _money(cost.per_million_output_tokens if cost else None),
        f"{p.tokens_per_s_per_gpu:,.0f}/{p.tokens_per_s_per_user:,.0f}",
    ]


def recommend_tables(result: RecommendResult, limit: int | None = None) -> list[Table | Text]:
    key = result.targets.percentile
    parts: list[Table | Text] = [_head(result)]
    keep = TABLE_LIMIT if limit is None else (limit or len(result.plans))
    shown = result.plans[:keep]
    mark = MARKS["calibrated"]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  show_edge=False)  # no vertical rules: eight columns fit 80
    devices = len({p.device for p in result.plans})
    engines = len({(p.engine, p.engine_version) for p in result.plans})
    rows = [_row(index, plan, key, devices, engines)
            for index, plan in enumerate(shown, start=1)]
    names = ("plan", "SLO", "GPUs", f"batch{MARKS['engine rule']}", f"TTFT/TPOT{mark}",
             "$/hour", f"$/M tok{mark}", f"tok/s{mark}")
    for i, name in enumerate(names):
        table.add_column(name, justify="left" if i < 2 else "right", no_wrap=i > 0,
                         min_width=12 if i == 0 else None)
    for row in rows:
        table.add_row(*row[:1], Text(row[1], style=_STYLE.get(row[1], "yellow")), *row[2:])
    parts.append(Text(f"{result.considered} plans considered, {result.meeting} meet the "
                      f"targets; showing {len(shown)}"
                      + (f" ({len(result.plans) - len(shown)} more: --limit 0 shows all)"
                         if len(result.plans) > len(shown) else "")))
    if not result.considered:
        parts.append(Text("no plan holds one request at the workload's context on the devices "
                          "and count asked: `inventory placement` shows why each split is "
                          "refused or does not fit", style="yellow"))
    else:
        parts.append(table)
    band = result.trust.get("latency")
    parts.append(Text(
        f"TTFT/TPOT at {key}; tok/s: output tokens per GPU / per user; batch: run / the KV "
        f"pool's bound per replica; near: a near miss, within 20 % of every target. trust: "
        f"GPUs and $/hour exact (dated list prices); {MARKS['engine rule']} engine rule; "
        f"{mark} " + (band.label() if band else "calibrated"), style="dim"))
    parts.append(Text(f"order ({result.objective}): {result.order}", style="dim"))
    chosen = result.chosen
    if chosen is not None:
        parts += _chosen(result, chosen)
    if result.pareto:
        from llm_inventory.render.charts import scatter

        points = [(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu,
                   "●" if p.on_front else "·") for p in result.pareto]
        parts.append(Text("Pareto front: output tokens/s per GPU against per user (● on the "
                          "front, · dominated), every plan at batches up to its bound",
                          style="bold"))
        parts.append(scatter(points, x_label="tokens/s per user",
                             y_label="tokens/s per GPU"))
    parts += [Text(f"note: {n}", style="dim") for n in result.notes]
    parts.append(Text(f"{mark} {result.estimate}", style="dim"))
    return parts


#: The start-up lines that state the pool, in each engine's words.
_POOL_LINES = ("GPU KV cache size", "Maximum concurrency", "# cuda blocks", "# GPU blocks",
               "KV Cache is allocated", "[TensorRT-LLM][INFO] [MemUsageChange]",
               "llama_kv_cache: size")


def _chosen(result: RecommendResult, p: RecommendedPlan) -> list[Table | Text]:
    key = result.targets.percentile
    lines = [f"chosen: {p.replicas} × {p.gpus_per_replica} {p.device} ({p.label}) on "
             f"{p.engine} {p.engine_version}, {p.gpus} GPUs, batch {p.batch} of "
             f"{p.batch_limit} per replica",
             f"  TTFT {_ms(p.ttft.p50)} p50 / {_ms(p.ttft.p95)} p95 · TPOT "
             f"{_ms(p.tpot.p50)} · end to end {_ms(getattr(p.e2e, key))} {key} · "
             f"{p.requests_per_s:,.2f} requests/s served"]
    if p.cost is not None:
        c = p.cost
        per_m = _money(c.per_million_output_tokens)
        lines.append(f"  cost: {_money(c.per_hour)}/hour, {_money(c.per_month)}/month, "
                     f"{per_m} per million output tokens at {_money(c.price_per_gpu_hour)}"
                     f" per GPU-hour ({c.pricing}, {c.provider}, {c.offer}; as of "
                     f"{c.as_of}: {c.source})")
    else:
        lines.append(f"  cost: no price listed for {p.device} (add one with --prices FILE)")
    if p.energy_per_hour is not None:
        lines.append(f"  energy (owned GPUs at TDP): {_money(p.energy_per_hour)}/hour")
    lines += [f"  {note}" for note in p.notes]
    lines += [f"  misses: {m}" for m in p.misses]
    parts: list[Table | Text] = [Text("\n".join(lines))]
    if result.launch and "\n" in result.launch:  # a prefill/decode pair and its router
        parts.append(Text("launch (prefill, decode, router):\n" + "\n".join(
            f"  {line}" for line in result.launch.splitlines())))
    elif result.launch:
        parts.append(Text(f"launch: {result.launch}"))
    if result.launch_startup:
        said = "; ".join(line for line in result.launch_startup if line.startswith(_POOL_LINES))
        text = f"  `inventory launch` reads it back: {said}"
        held = result.launch_max_concurrency
        if held is not None and int(held) > p.batch_limit:
            text += (f" (more than the plan's {p.batch_limit}, sized at the engine's default "
                     "sequences per step: fewer shrink its sampling and graph reserve)")
        parts.append(Text(text))
    for engine, command in result.equivalents.items():
        parts.append(Text(f"  {engine}: " + "\n    ".join(command.splitlines()), style="dim"))
    return parts
