"""Tables for `inventory calibrate`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.calibrate import CalibrationRun, Row
from llm_inventory.units import UnitSystem, format_bytes

_SCALE = {"GiB": 2**30, "GB": 2**30, "MiB": 2**20, "MB": 2**20, "bytes": 1}


def _value(row: Row, value: float | None, units: UnitSystem) -> str:
    """A predicted figure as the engine would print it: its unit and decimals."""
    if value is None:
        return "—"
    number, _, unit = row.printed_text.rpartition(" ")
    if unit in _SCALE:
        places = len(number.partition(".")[2])
        return f"{value / _SCALE[unit]:.{places}f} {unit}"
    if row.unit == "bytes":
        sign = "−" if value < 0 else ""
        return sign + format_bytes(abs(value), units)
    if row.unit == "x":
        return f"{value:,.2f} x"
    text = f"{value:,.0f}" if "," in number else f"{value:.0f}"
    return f"{text} {unit}"


def calibrate_tables(run: CalibrationRun, units: UnitSystem) -> list[Table | Text]:
    parts: list[Table | Text] = []
    for report in run.reports:
        log = report.log
        layout = f"tp{log.tp or 1} pp{log.pp or 1}"
        version = log.version or "(release not printed)"
        parts.append(Text(f"{report.source}: {log.dialect} {version}, "
                          f"{report.model or 'model not named'}, {report.device}, {layout}; "
                          f"predicted as {report.engine_label}", style="bold"))
        if report.checks:
            checks = Table(title="the log's own figures, recomputed from each other")
            for name in ("figure", "printed", "recomputed", "from", "ok"):
                checks.add_column(name, overflow="fold")
            for c in report.checks:
                verdict = {True: "yes", False: "NO", None: "n/a"}[c.holds]
                checks.add_row(c.key, c.printed, c.derived, c.formula, verdict)
            parts.append(checks)
        if report.rows:
            rows = Table(title="printed beside predicted")
            for name in ("figure", "printed", "predicted", "diff", "why"):
                rows.add_column(name, overflow="fold")
            for r in report.rows:
                diff = "—" if r.relative is None else f"{r.relative:+.1%}"
                rows.add_row(r.key, r.printed_text, _value(r, r.predicted, units), diff,
                             "" if r.holds else r.rule)
            parts.append(rows)
        if report.printed_error:
            parts.append(Text(f"the engine stopped: {report.printed_error}", style="red"))
        if report.startup_error:
            parts.append(Text(f"predicted stop: {report.startup_error}", style="red"))
        if report.stop_agrees is False:
            parts.append(Text("the prediction and the log disagree on whether the engine "
                              "starts", style="yellow"))
        for note in report.notes:
            parts.append(Text(note, style="yellow"))
    if run.profile:
        parts.append(Text(f"kept in {run.profile} ({run.entries} entries); it moves only "
                          "the engine's reserve, never an exact figure"))
    if run.exported:
        parts.append(Text(f"exported to {run.exported}"))
    return parts
