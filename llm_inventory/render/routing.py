"""Tables for routing results: the shown step, EP ranks, the spread over steps, weight reads."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.routing import RoutingResult
from llm_inventory.units import UnitSystem, format_bytes

# Above this many experts the step table lists only the busiest ones.
_LISTED_EXPERTS = 32
_BUSIEST_SHOWN = 10
_BAR_WIDTH = 24


def _number(value: float) -> str:
    """A mean or ratio for people: at most three decimals, trailing zeros dropped."""
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _times(value: float) -> str:
    return f"{_number(value)}×"


def _signed_percent(fraction: float) -> str:
    return f"{fraction * 100:+.2f} %"


def _step_table(result: RoutingResult) -> Table:
    step = result.step
    owner: list[int] = []
    if step.devices is not None:
        owner = [d.rank for d in step.devices for _ in range(d.experts)]
    listed = list(range(result.experts))
    if result.experts > _LISTED_EXPERTS:
        listed = sorted(listed, key=lambda e: (-step.loads[e], e))[:_BUSIEST_SHOWN]
    table = Table()
    table.add_column("expert", justify="right")
    if owner:
        table.add_column("rank", justify="right")
    table.add_column("load", justify="right")
    table.add_column("share", justify="right")
    table.add_column("", justify="left", min_width=_BAR_WIDTH)
    peak = max(step.busiest, 1)
    for expert in listed:
        load = step.loads[expert]
        bar = "█" * round(load / peak * _BAR_WIDTH)
        row = [f"{expert}"]
        if owner:
            row.append(f"{owner[expert]}")
        row += [f"{load:,}", f"{load / step.assignments:.1%}", bar]
        table.add_row(*row)
    if len(listed) < result.experts:
        rest = result.experts - len(listed)
        filler = [f"… {rest:,} others"] + [""] * (len(table.columns) - 1)
        table.add_row(*filler)
    return table


def _devices_table(result: RoutingResult, units: UnitSystem) -> Table:
    assert result.step.devices is not None
    table = Table()
    # two-line headers: on one line they held the table at 96 columns
    for name in ("rank", "experts", "tokens", "load", "dispatch\nsend", "dispatch\nrecv",
                 "combine\nsend", "combine\nrecv"):
        table.add_column(name, justify="right")
    for d in result.step.devices:
        last = d.first_expert + d.experts - 1
        span = f"{d.first_expert}" if d.experts == 1 else f"{d.first_expert}–{last}"
        table.add_row(
            f"{d.rank}",
            span,
            f"{d.tokens:,}",
            f"{d.load:,}",
            format_bytes(d.dispatch_send_bytes, units),
            format_bytes(d.dispatch_recv_bytes, units),
            format_bytes(d.combine_send_bytes, units),
            format_bytes(d.combine_recv_bytes, units),
        )
    return table


def _spread_table(result: RoutingResult) -> Table:
    table = Table()
    table.add_column("")
    for name in ("mean", "p50", "p99", "max"):
        table.add_column(name, justify="right")
    b = result.busiest
    table.add_row("busiest expert's load", _number(b.mean), f"{b.p50:,}", f"{b.p99:,}",
                  f"{b.max:,}")
    s = result.straggler
    table.add_row("straggler (busiest / mean)", _times(s.mean), _times(s.p50), _times(s.p99),
                  _times(s.max))
    if result.device_straggler is not None:
        d = result.device_straggler
        table.add_row("busiest rank / mean rank", _times(d.mean), _times(d.p50),
                      _times(d.p99), _times(d.max))
    x = result.distinct_experts
    table.add_row("distinct experts touched", _number(x.simulated), f"{x.p50:,}",
                  f"{x.p99:,}", f"{x.max:,}")
    return table


def _weights_table(result: RoutingResult, units: UnitSystem) -> Table:
    weights = result.expert_weights
    assert weights is not None
    layers = f"{weights.moe_layers:,} MoE layer{'' if weights.moe_layers == 1 else 's'}"
    table = Table()
    table.add_column("expert weights per decode step", overflow="fold")  # prose labels wrap
    table.add_column("bytes", justify="right")
    table.add_column("size", justify="right")
    table.add_column("of resident", justify="right")
    rows = (
        (f"active: top-{result.top_k} × {layers}", weights.active_bytes),
        (f"read: {_number(weights.distinct_experts)} distinct × {layers}", weights.read_bytes),
        (f"resident: {result.experts:,} experts × {layers}", weights.resident_bytes),
    )
    for label, value in rows:
        table.add_row(label, f"{value:,} B", format_bytes(value, units),
                      f"{value / weights.resident_bytes:.1%}")
    return table


def routing_tables(result: RoutingResult, units: UnitSystem) -> list[Table | Text]:
    """The shown step (loads, busiest, straggler), EP ranks, the spread over steps, the
    distinct-expert closed form beside the simulation, weight reads, then the assumptions."""
    step = result.step
    popularity = "uniform" if result.skew == 0 else f"Zipf-like, skew {result.skew:g}"
    title = (
        f"Routing · {result.experts:,} experts · top-{result.top_k} · "
        f"{result.tokens:,} tokens · {popularity} · seed {result.seed}"
    )
    parts: list[Table | Text] = [
        Text(title, style="bold"),
        Text(f"One step: {step.assignments:,} assignments "
             f"({result.tokens:,} tokens × {result.top_k})"
             + (f"; the {_BUSIEST_SHOWN} busiest of {result.experts:,} experts"
                if result.experts > _LISTED_EXPERTS else "")),
        _step_table(result),
        Text(
            f"busiest: expert {step.busiest_expert} with {step.busiest:,} · mean "
            f"{_number(step.mean_load)} · straggler {_times(step.straggler)} · "
            f"{step.distinct_experts:,} of {result.experts:,} experts touched"
        ),
    ]
    if step.devices is not None:
        assert step.hidden_state_bytes is not None and step.device_straggler is not None
        assert step.dispatch_bytes is not None
        parts += [
            Text(f"EP {result.ep}: per rank, one MoE layer", style="bold"),
            _devices_table(result, units),
            Text(
                f"hidden state {format_bytes(step.hidden_state_bytes, units)} a token "
                f"({result.hidden:,} × {result.dtype}) · all ranks: dispatch "
                f"{format_bytes(step.dispatch_bytes, units)}, combine the same\n"
                f"busiest rank: {_times(step.device_straggler)} the mean rank's load"
            ),
        ]
    x = result.distinct_experts
    parts += [
        Text(f"Over {result.steps:,} steps", style="bold"),
        _spread_table(result),
        Text(
            f"distinct experts: expected {_number(x.expected)} (uniform closed form) · "
            f"simulated {_number(x.simulated)} ({_signed_percent(x.relative_difference)})"
        ),
    ]
    if result.expert_weights is not None:
        parts.append(_weights_table(result, units))
    parts.append(Text("\n".join(f"· {rule}" for rule in result.assumptions), style="dim"))
    return parts
