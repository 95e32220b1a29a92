"""A report people open: one self-contained HTML file (no network, no external scripts or
fonts; pictures as inline SVG drawn here), readable on a phone and printable.

The page puts the question first, then the answer, the pictures (memory bars, the envelope as
a heat map, the Pareto front), the launch commands with a copy button, every figure's trust
label, and the tool's version with the engine eras used. Figures that come from the result
carry `data-json` (their path in the command's JSON) so a test can hold the page to the JSON.
Every string from the user or a model file is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from llm_inventory import __version__

STYLE = """
:root{--ok:#1a7f37;--no:#cf222e;--w:#4c6ef5;--r:#f59f00;--kv:#37b24d;--free:#dee2e6}
*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;
margin:0 auto;max-width:60rem;padding:1rem;color:#1f2328;overflow-wrap:break-word}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.4rem 0 .4rem}
.answer{font-size:1.15rem;padding:.6rem .8rem;border-left:.3rem solid var(--ok);
background:#f6f8fa}.answer.no{border-color:var(--no)}
table{border-collapse:collapse;width:100%;font-size:.8rem}
[data-json]{white-space:nowrap}
th,td{border-bottom:1px solid #d0d7de;padding:.25rem .3rem;text-align:left;
vertical-align:top;overflow-wrap:break-word}td.n{text-align:right}
svg{width:100%;height:auto;display:block}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:.5rem;margin:0}
.cmd{position:relative;margin:.4rem 0}.cmd button{float:right;font-size:.75rem}
.ok{color:var(--ok)}.no{color:var(--no)}small,.dim{color:#57606a}
footer{margin-top:2rem;font-size:.8rem;color:#57606a}
@media print{button{display:none}body{max-width:none}}
"""

COPY = ("document.querySelectorAll('.cmd button').forEach(function(b){b.addEventListener("
        "'click',function(){var t=b.parentNode.querySelector('pre').textContent;"
        "if(navigator.clipboard){navigator.clipboard.writeText(t).catch(function(){});}});});")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _num(value: float | int | None, path: str, digits: int = 0, unit: str = "") -> str:
    """A figure with its JSON path (None: a dash)."""
    if value is None:
        return "—"
    shown = f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"
    return f'<span data-json="{_e(path)}" data-value="{_e(value)}">{shown}</span>{unit}'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _commands(lines: Sequence[str]) -> str:
    return "".join(f'<div class="cmd"><button type="button">copy</button><pre>{_e(line)}'
                   "</pre></div>" for line in lines)


def _trust(trust: dict[str, Any]) -> str:
    rows = []
    for group, t in trust.items():
        label = t.label() if hasattr(t, "label") else str(t)
        basis = getattr(t, "basis", "")
        rows.append([_e(group.replace("_", " ")), _e(label), f"<small>{_e(basis)}</small>"])
    return "<h2>How each figure was obtained</h2>" + _table(["figures", "trust", "basis"], rows)


def memory_bars(rows: Sequence[tuple[str, Sequence[int], int]]) -> str:
    """Horizontal bars per device: weights, reserve, KV pool and free, to scale."""
    colors = ("var(--w)", "var(--r)", "var(--kv)", "var(--free)")
    height = 22 * len(rows) + 28
    parts = [f'<svg viewBox="0 0 400 {height}" role="img" aria-label="memory per device">']
    for i, (label, values, total) in enumerate(rows):
        y, x = 22 * i + 4, 120.0
        parts.append(f'<text x="0" y="{y + 12}" font-size="10">{_e(label[:22])}</text>')
        for value, color in zip(values, colors, strict=True):
            width = 270 * max(0, value) / total if total else 0
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="14" '
                         f'fill="{color}"/>')
            x += width
    legend = ("weights", "reserve", "KV pool", "free")
    for i, (name, color) in enumerate(zip(legend, colors, strict=True)):
        x = 120 + 70 * i
        parts.append(f'<rect x="{x}" y="{height - 16}" width="10" height="10" '
                     f'fill="{color}"/><text x="{x + 13}" y="{height - 7}" '
                     f'font-size="9">{name}</text>')
    return "".join(parts) + "</svg>"


def bars(rows: Sequence[tuple[str, float, bool]]) -> str:
    """One horizontal bar per row, to scale, green where it fits."""
    top = max((value for _, value, _ in rows), default=0.0) or 1.0
    height = 22 * len(rows) + 6
    parts = [f'<svg viewBox="0 0 400 {height}" role="img" aria-label="requests held">']
    for i, (label, value, fits) in enumerate(rows):
        y = 22 * i + 4
        width = 230 * max(0.0, value) / top
        parts.append(f'<text x="0" y="{y + 12}" font-size="10">{_e(label[:22])}</text>'
                     f'<rect x="120" y="{y}" width="{width:.1f}" height="14" '
                     f'fill="{"#b7e4c7" if fits else "#ffc9c9"}"/>'
                     f'<text x="{124 + width:.1f}" y="{y + 12}" font-size="10">'
                     f'{value:,.1f}</text>')
    return "".join(parts) + "</svg>"


def heat_map(labels: Sequence[str], columns: Sequence[str],
             cells: Sequence[Sequence[tuple[bool, float | None]]]) -> str:
    """Rows × columns, green where it fits, red where not, each with the requests held."""
    width = 400
    col = (width - 110) / max(1, len(columns))
    height = 24 * (len(labels) + 1)
    parts = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="envelope">']
    for j, name in enumerate(columns):
        parts.append(f'<text x="{110 + col * j + col / 2:.1f}" y="14" font-size="10" '
                     f'text-anchor="middle">{_e(name)}</text>')
    for i, label in enumerate(labels):
        y = 24 * (i + 1)
        parts.append(f'<text x="0" y="{y + 15}" font-size="10">{_e(label[:20])}</text>')
        for j, (fits, held) in enumerate(cells[i]):
            color = "#b7e4c7" if fits else "#ffc9c9"
            x = 110 + col * j
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{col - 2:.1f}" height="20" '
                         f'fill="{color}"/><text x="{x + col / 2:.1f}" y="{y + 14}" '
                         f'font-size="10" text-anchor="middle">'
                         f'{"—" if held is None else f"{held:,.0f}"}</text>')
    return "".join(parts) + "</svg>"


def scatter(points: Sequence[tuple[float, float, bool]], x_name: str, y_name: str) -> str:
    """Points (x, y, highlighted) on zero-based axes."""
    width, height, pad = 400, 240, 34
    xs = [p[0] for p in points] or [1.0]
    ys = [p[1] for p in points] or [1.0]
    top_x, top_y = max(xs) * 1.1 or 1.0, max(ys) * 1.1 or 1.0
    parts = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="Pareto front">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - 4}" y2="{height - pad}" '
             'stroke="#57606a"/>',
             f'<line x1="{pad}" y1="4" x2="{pad}" y2="{height - pad}" stroke="#57606a"/>',
             f'<text x="{width / 2}" y="{height - 8}" font-size="10" text-anchor="middle">'
             f'{_e(x_name)}</text>',
             f'<text x="10" y="{height / 2}" font-size="10" transform="rotate(-90 10 '
             f'{height / 2})" text-anchor="middle">{_e(y_name)}</text>']
    for x, y, hot in points:
        cx = pad + (width - pad - 8) * x / top_x
        cy = height - pad - (height - pad - 8) * y / top_y
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{4 if hot else 2.5}" '
                     f'fill="{"var(--no)" if hot else "#8c959f"}"/>')
    return "".join(parts) + "</svg>"


def page(title: str, question: str, answer: str, fits: bool, body: str,
         eras: Sequence[str], data: Any) -> str:
    """The whole document; `data` (the command's JSON) travels inside it, inert."""
    # < > & as \u escapes: no text inside the data block can close it or open markup
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c") \
        .replace(">", "\\u003e").replace("&", "\\u0026")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class=\"dim\">{_e(question)}</p>"
            f"<p class=\"answer{'' if fits else ' no'}\">{answer}</p>{body}"
            f"<footer>llm-inventory {_e(__version__)} · engine eras: "
            f"{_e(', '.join(eras) or '—')}</footer>"
            f"<script type=\"application/json\" id=\"result\">{blob}</script>"
            f"<script>{COPY}</script></body></html>\n")


def _dump(result: Any) -> Any:
    if isinstance(result, list):
        return [r.model_dump(mode="json") for r in result]
    return result.model_dump(mode="json")


def placement_page(result: Any, question: str, launch: Sequence[str] = ()) -> str:
    """`placement --report`: the best plan, the memory bars, the plans, and `launch`, the
    best plan's lines."""
    from llm_inventory.render.plot import memory_rows
    from llm_inventory.units import format_bytes

    plans = result.plans
    best = plans[0] if plans else None
    fits = best is not None and best.fits
    if best is None:
        answer = "No legal split: " + _e(result.refused[0].reason if result.refused else "—")
    else:
        verb = "fits" if fits else "does not fit"
        answer = (f"{_e(result.model)} {verb} on {result.count:,} × {_e(result.device)}: "
                  f"best plan tp{best.tp} pp{best.pp} ×{best.dp}, holding "
                  f"{_num(best.total_concurrency, 'plans/0/total_concurrency', 1)} requests "
                  f"at {_num(result.context, 'context')} tokens"
                  + ("" if fits else f" ({_e(best.why or '')})"))
    rows = []
    for i, plan in enumerate(plans[:12]):
        d = plan.per_device
        rows.append([
            _e(f"tp{plan.tp} pp{plan.pp}" + (f" ep{plan.ep}" if plan.ep > 1 else "")
               + f" ×{plan.dp}" + (f" {plan.disaggregation}" if plan.disaggregation else "")),
            '<span class="ok">fits</span>' if plan.fits else
            f'<span class="no">{_e(plan.why or "no")}</span>',
            _e(format_bytes(d.weight_bytes)) if d else "—",
            _num(d.kv_capacity_tokens if d else None, f"plans/{i}/per_device/kv_capacity_tokens"),
            _num(plan.total_concurrency, f"plans/{i}/total_concurrency", 1),
        ])
    body = ("<h2>Memory per device</h2>" + memory_bars(memory_rows([result], 8))
            + "<h2>Plans, best first</h2>"
            + _table(["plan", "verdict", "weights", "KV tokens", "requests held"], rows))
    lines = list(launch) or (best.launch if best is not None else [])
    if lines:
        body += "<h2>Launch</h2>" + _commands(lines)
    body += _trust(result.trust)
    return page(f"Placement · {result.model}", question, answer, fits, body,
                [f"{result.engine} {result.engine_version}"], _dump(result))


def recommend_page(result: Any, question: str) -> str:
    """`recommend --report`: the chosen plan, the Pareto front, the plans, the launch."""
    chosen = result.chosen
    fits = chosen is not None and result.meeting > 0
    if chosen is None:
        answer = "No plan serves this workload."
    else:
        cost = chosen.cost.per_hour if chosen.cost is not None else None
        answer = (f"{_e(chosen.label)} on {_num(chosen.gpus, 'chosen/gpus')} × "
                  f"{_e(chosen.device)} ({_e(chosen.engine)}): "
                  f"{_num(chosen.tokens_per_s_per_gpu, 'chosen/tokens_per_s_per_gpu', 0)} "
                  "tokens/s per GPU"
                  + (f", ${_num(cost, 'chosen/cost/per_hour', 2)} an hour" if cost else "")
                  + ("" if fits else " (misses: " + _e("; ".join(chosen.misses)) + ")"))
    points = [(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu, p.on_front)
              for p in result.pareto]
    rows = [[_e(p.label), _e(p.device), _e(p.engine),
             _num(p.tokens_per_s_per_gpu, f"plans/{i}/tokens_per_s_per_gpu", 0),
             '<span class="ok">meets</span>' if not p.misses else
             f'<span class="no">{_e("; ".join(p.misses))}</span>']
            for i, p in enumerate(result.plans[:12])]
    body = ("<h2>Pareto front</h2>"
            + scatter(points, "tokens/s per user", "tokens/s per GPU")
            + "<h2>Plans, best first</h2>"
            + _table(["plan", "device", "engine", "tokens/s per GPU", "targets"], rows))
    if result.launch:
        body += "<h2>Launch</h2>" + _commands(result.launch.splitlines())
    body += _trust(result.trust)
    eras = sorted({f"{p.engine} {p.engine_version}" for p in result.plans})
    return page(f"Recommendation · {result.model}", question, answer, fits, body, eras,
                _dump(result))


def compare_page(fits: Sequence[Any], question: str) -> str:
    """`compare -d -n --report`: each model on the devices, its launch line."""
    every = all(f.fits for f in fits)
    answer = (f"{sum(1 for f in fits if f.fits)} of {len(fits)} models fit on "
              f"{fits[0].count:,} × {_e(fits[0].device)}" if fits else "No model.")
    rows = [[_e(f.model), '<span class="ok">yes</span>' if f.fits else
             f'<span class="no">{_e(f.why or "no")}</span>',
             _e(f.plan or "—"),
             _num(f.longest_context, f"{i}/longest_context"),
             _num(f.max_concurrency, f"{i}/max_concurrency", 1)]
            for i, f in enumerate(fits)]
    held = [(f.model, f.max_concurrency or 0.0, f.fits) for f in fits]
    body = "<h2>Requests held at the context</h2>" + bars(held) + \
        "<h2>Models side by side</h2>" + _table(
        ["model", "fits", "plan", "longest context", "requests held"], rows)
    for f in fits:
        if f.launch:
            body += f"<h2>Launch · {_e(f.model)}</h2>" + _commands(f.launch)
    if fits:
        body += _trust(fits[0].trust)
    return page("Comparison", question, answer, every, body,
                sorted({f.engine for f in fits}), _dump(list(fits)))


def sweep_page(result: Any, question: str) -> str:
    """`sweep --report`: the envelope as a heat map, each point's best plan."""
    cells = result.cells
    fitting = sum(1 for c in cells if c.fits)
    answer = (f"{_num(fitting, 'fitting')} of {len(cells):,} points fit "
              f"{_e(result.model)} on {result.count:,} × {_e(result.device)}")
    rows: dict[str, list[tuple[bool, float | None]]] = {}
    for c in cells:
        label = f"{c.context:,}" + (f" {c.kv_dtype}" if len(result.kv_dtypes) > 1 else "") \
            + (f" {c.engine}" if len(result.engines) > 1 else "") \
            + (f" {c.dtype}" if len(result.dtypes) > 1 else "")
        rows.setdefault(label, []).append((c.fits, c.total_concurrency))
    detail = [[_e(f"{c.context:,} × {c.concurrency:,} · {c.kv_dtype}"), _e(c.plan or "—"),
               '<span class="ok">fits</span>' if c.fits else '<span class="no">no</span>',
               _num(c.kv_tokens, f"cells/{i}/kv_tokens"),
               _num(c.total_concurrency, f"cells/{i}/total_concurrency", 1)]
              for i, c in enumerate(cells)]
    body = ("<h2>Envelope: requests held, green where the workload fits</h2>"
            + heat_map(list(rows), [f"{n:,} users" for n in result.concurrencies],
                       list(rows.values()))
            + "<h2>Each point</h2>"
            + _table(["point", "plan", "fits", "KV tokens", "requests held"], detail))
    best = next((c for c in cells if c.fits and c.launch), None)
    if best is not None:
        body += (f"<h2>Launch · {best.context:,} tokens × {best.concurrency:,}</h2>"
                 + _commands(best.launch))
    if cells:
        body += _trust(cells[0].trust)
    data = _dump(result)
    data["fitting"] = fitting
    return page(f"Envelope · {result.model}", question, answer, fitting > 0, body,
                result.engines, data)
