"""Tables for `inventory engines`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.engines import EngineEra, EngineList
from llm_inventory.render.fit import Diagnostic


def _range(era: EngineEra) -> str:
    """The releases an era covers; the newest era up to the newest release read (a newer
    one is answered by it, with a warning)."""
    if era.below:
        return f"{era.lowest}–below {era.below}"
    return f"{era.lowest}+ (read to {era.version})"


def engines_table(listing: EngineList) -> list[Table | Text]:
    table = Table(title=f"Serving engines · {len(listing.engines)} accounting eras")
    for name in ("engine", "releases", "answers as", "what decides the KV pool"):
        prose = name == "what decides the KV pool"
        table.add_column(name, no_wrap=not prose, overflow="fold" if prose else "ellipsis")
    for era in listing.engines:
        name = era.engine + (" (default)" if era.default else "")
        table.add_row(name, _range(era), era.label, era.summary)
    return [table, Text("--engine NAME picks the default era, NAME@VERSION the era whose "
                        "range holds VERSION; `inventory engines NAME@VERSION` lists its "
                        "rules and their sources", style="dim")]


def engine_detail_table(era: EngineEra) -> list[Table | Text]:
    head = Text(f"{era.label} · {era.engine}@{era.lowest} up to "
                + (f"below {era.below}" if era.below
                   else "the newest release (later ones answered by it, with a warning)")
                + f" · {era.versions}", style="bold")
    table = Table()
    table.add_column("rule", overflow="fold")
    table.add_column("source", overflow="fold")
    for rule in era.rules:
        table.add_row(rule.rule, rule.source)
    parts: list[Table | Text] = [head, Text(era.summary), table]
    if era.warning:
        parts.append(Diagnostic(era.warning))
    if era.programs:
        parts.append(Text("inventory launch reads: " + "; ".join(era.programs), style="dim"))
    return parts
