"""Tables for `inventory engines`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.engines import EngineEra, EngineList


def _range(era: EngineEra) -> str:
    return f"{era.lowest}–" + (f"below {era.below}" if era.below else "newest")


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
                + (f"below {era.below}" if era.below else "the newest release")
                + f" · {era.versions}", style="bold")
    table = Table()
    table.add_column("rule", overflow="fold")
    table.add_column("source", overflow="fold")
    for rule in era.rules:
        table.add_row(rule.rule, rule.source)
    parts: list[Table | Text] = [head, Text(era.summary), table]
    if era.programs:
        parts.append(Text("inventory launch reads: " + "; ".join(era.programs), style="dim"))
    return parts
