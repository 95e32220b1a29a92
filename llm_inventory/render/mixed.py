"""`placement --devices`: pipeline stages over several device types, as tables."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.placement.mixed import MixedResult
from llm_inventory.units import format_bytes


def mixed_tables(result: MixedResult, shown: int = 8) -> list[Table | Text]:
    groups = " + ".join(f"{g['count']} × {g['device']}" for g in result.groups)
    parts: list[Table | Text] = [Text(
        f"{result.model} on {groups} · {result.context:,} tokens × {result.concurrency:,} · "
        f"{result.engine} {result.engine_version}", style="bold")]
    table = Table(title="one instance, its stages over the types (best first)")
    table.add_column("#", justify="right")
    table.add_column("split")
    table.add_column("layers per stage, by device", overflow="fold")
    table.add_column("KV tokens", justify="right")
    table.add_column("conc.", justify="right")
    table.add_column("verdict", overflow="fold")
    for index, plan in enumerate(result.plans[:shown], start=1):
        runs: list[tuple[str, list[int]]] = []  # (device, layers of each stage in a row)
        for stage in plan.stages:
            if runs and runs[-1][0] == stage.device:
                runs[-1][1].append(stage.layers)
            else:
                runs.append((stage.device, [stage.layers]))
        layout = " · ".join(f"{d}: {','.join(map(str, n))}" for d, n in runs)
        table.add_row(str(index), f"tp{plan.tp} pp{plan.pp}", layout,
                      f"{plan.kv_capacity_tokens:,}",
                      "—" if plan.max_concurrency is None else f"{plan.max_concurrency:,.1f}",
                      "fits" if plan.fits else plan.why or "does not fit")
    parts.append(table)
    if result.plans:
        best = result.plans[0]
        env = " ".join(f"{k}={v}" for k, v in best.env.items())
        parts.append(Text(f"best: {env}", style="bold"))
        for stage in best.stages:
            if stage.stage == best.binding_stage:
                parts.append(Text(
                    f"binding stage {stage.stage} ({stage.device}): weights "
                    f"{format_bytes(stage.weight_bytes)}, reserve "
                    f"{format_bytes(stage.reserve_bytes)}, KV pool "
                    f"{format_bytes(stage.kv_pool_bytes)}; every worker keeps its "
                    f"{stage.kv_blocks:,} blocks"))
    if result.disaggregated:
        pd = Table(title="or prefill on one type, decode on another")
        for name in ("prefill pool", "decode pool", "decode conc.", "verdict"):
            pd.add_column(name, justify="right" if name == "decode conc." else "left",
                          overflow="fold")
        for pair in result.disaggregated:
            p, d = pair.prefill, pair.decode
            why = p.why if not p.fits else d.why
            pd.add_row(f"{p.count} × {p.device} (tp{p.tp} pp{p.pp} ×{p.dp})",
                       f"{d.count} × {d.device} (tp{d.tp} pp{d.pp} ×{d.dp})",
                       "—" if d.total_concurrency is None else f"{d.total_concurrency:,.1f}",
                       "fits" if pair.fits else why or "does not fit")
        parts.append(pd)
    parts.append(Text("trust: " + "; ".join(f"{group.replace('_', ' ')} {t.label()}"
                                            for group, t in result.trust.items()),
                      style="dim"))
    return parts
