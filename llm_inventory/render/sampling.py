"""Tables for the sampling processor chain: one column per stage, one row per token."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.sampling import SampleResult


def _probability(p: float) -> str:
    """Four decimals; a live token too small to show as anything but zero says so."""
    if 0.0 < p < 0.00005:
        return "<0.0001"
    return f"{p:.4f}"


def sampling_tables(result: SampleResult) -> list[Table | Text]:
    """Title, the stage-by-stage table, top-p's boundary notes, then the candidate set."""
    count = len(result.tokens)
    title = (
        f"Sampling chain · {count:,} token{'' if count == 1 else 's'} · "
        f"{len(result.stages)} processor{'' if len(result.stages) == 1 else 's'} in order · "
        f"top-p boundary {result.top_p_boundary.value}"
    )
    table = Table()
    table.add_column("token")
    table.add_column("input", justify="right")
    for number, stage in enumerate(result.stages, start=1):
        table.add_column(f"{number}. {stage.processor.label}", justify="right")
    for token in result.tokens:
        cells = [_probability(result.input.probs[token])]
        for stage in result.stages:
            if token in stage.removed:
                cells.append("removed")
            else:
                cells.append(_probability(stage.probs[token]))
        table.add_row(token, *cells)
    parts: list[Table | Text] = [Text(title, style="bold"), table]
    for number, stage in enumerate(result.stages, start=1):
        if stage.note:
            parts.append(Text(f"{number}. {stage.processor.label}: {stage.note}", style="dim"))
    parts.append(
        Text(f"candidates (most probable first): {', '.join(result.candidates)}")
    )
    return parts
