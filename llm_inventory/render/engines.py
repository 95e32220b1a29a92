"""Tables for `inventory engines`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.engines import EngineDiff, EngineEra, EngineList
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


def engine_diff_table(diff: EngineDiff) -> list[Table | Text]:
    """Before and after side by side, what moved, and the rules that differ."""
    from llm_inventory.units import GIB

    a, b = diff.before, diff.after
    head = Text(f"{diff.model} · {diff.count} × {diff.device} · tp{diff.tp} pp{diff.pp}"
                + (f" ep{diff.ep}" if diff.ep > 1 else "")
                + f" · context {diff.context:,} · KV {diff.kv_dtype}", style="bold")
    table = Table()
    table.add_column("")
    table.add_column(a.label, justify="right")
    table.add_column(b.label, justify="right")

    def gib(value: int) -> str:
        return f"{value / GIB:.2f} GiB"

    rows = (
        ("KV tokens", f"{a.kv_tokens:,}", f"{b.kv_tokens:,}"),
        ("max concurrency", f"{a.max_concurrency:.2f}x", f"{b.max_concurrency:.2f}x"),
        ("KV pool", gib(a.kv_pool_bytes), gib(b.kv_pool_bytes)),
        ("KV bytes per token", f"{a.kv_bytes_per_token:,}", f"{b.kv_bytes_per_token:,}"),
        ("weights", gib(a.weight_bytes), gib(b.weight_bytes)),
        ("reserve~", gib(a.reserve_bytes), gib(b.reserve_bytes)),
        ("  CUDA graphs~", gib(a.cuda_graph_bytes), gib(b.cuda_graph_bytes)),
        ("memory fraction", f"{a.gpu_memory_utilization:g}", f"{b.gpu_memory_utilization:g}"),
        ("batched tokens", f"{a.max_num_batched_tokens:,}", f"{b.max_num_batched_tokens:,}"),
        ("max sequences", f"{a.max_num_seqs:,}", f"{b.max_num_seqs:,}"),
        ("block size", f"{a.block_size:,}", f"{b.block_size:,}"),
    )
    for row in rows:
        table.add_row(*row)
    ratio = (f" ({diff.kv_tokens_change_ratio:+.1%})"
             if diff.kv_tokens_change_ratio is not None else "")
    parts: list[Table | Text] = [head, table, Text(
        f"KV tokens {a.kv_tokens:,} → {b.kv_tokens:,}: {diff.kv_tokens_change:+,}{ratio}")]
    if diff.moved:
        parts.append(Text("moved: " + "; ".join(diff.moved)))
    for words, rules in (("rules only in " + b.label, diff.rules_added),
                         ("rules only in " + a.label, diff.rules_removed)):
        if rules:
            parts.append(Text(words + ":\n" + "\n".join(
                f"  {r.rule} ({r.source})" for r in rules)))
    parts.append(Text("~ estimate (the reserve is calibrated on start-ups); the rest is each "
                      "era's rule", style="dim"))
    for side in (a, b):
        if side.warning:
            parts.append(Diagnostic(side.warning))
        if side.startup_error:
            parts.append(Diagnostic(f"{side.label} would not start: {side.startup_error}"))
    return parts
