"""The table of `compare A B C --device D --count N`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.compare_fit import ModelFit
from llm_inventory.render.placement import would_fit_text


def compare_fit_tables(fits: list[ModelFit]) -> list[Table | Text]:
    first = fits[0]
    head = Text(f"on {first.count} × {first.device} · {first.context:,} tokens · "
                f"{first.engine}", style="bold")
    table = Table()
    for name in ("model", "fits", "smallest fit", "longest context", "conc.", "plan"):
        table.add_column(name, justify="left" if name in ("model", "fits", "plan")
                         else "right", no_wrap=name in ("model", "conc."))
    notes: list[str] = []
    for f in fits:
        small = f.smallest_fit
        table.add_row(
            f.model, "yes" if f.fits else "no",
            f"{small.devices:,} device{'' if small.devices == 1 else 's'}"
            if small is not None else "—",
            f"{f.longest_context:,}" if f.longest_context else "—",
            f"{f.max_concurrency:,.1f}" if f.max_concurrency is not None else "—",
            f.plan or "—")
        if not f.fits and f.why:
            notes.append(f"{f.model}: does not fit: {f.why}")
        if f.would_fit is not None:
            notes.append(f"{f.model}: {would_fit_text(f.would_fit, f.device, f.count)}")
        if f.launch:
            notes.append(f"{f.model}: " + "\n   ".join(f.launch))
    parts: list[Table | Text] = [head, table,
                                 Text("conc.: requests at the context every engine holds "
                                      "together, on the plan that holds the most; longest "
                                      "context: one request, on any plan", style="dim")]
    if notes:
        parts.append(Text("\n".join(notes)))
    return parts

