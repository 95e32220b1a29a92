"""Tables for `inventory inventory` and `inventory compare`."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text

from llm_inventory.engine import kinds
from llm_inventory.engine.inventory import Inventory, InventoryRequest
from llm_inventory.engine.shapes import PhaseWork
from llm_inventory.render.fit import Diagnostic
from llm_inventory.render.fit import Table as FitTable
from llm_inventory.spec.model import Family
from llm_inventory.units import UnitSystem, format_bytes, format_count

Part = Table | Text


def _flops(n: int | float) -> str:
    value = float(n)
    for scale, name in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if value >= scale:
            return f"{value / scale:.3g} {name}"
    return f"{value:.3g} FLOP"


def _count(n: int, given: bool = False) -> str:
    return f"{format_count(n)} ({n:,})" + (" given" if given else "")


def _heading(text: str) -> Text:
    return Text(text, style="bold")


def _parameters(inv: Inventory, units: UnitSystem) -> list[Part]:
    p = inv.parameters
    label = inv.weights.label
    table = Table()
    for name in ("component", "parameters", "active per token", "bytes"):
        table.add_column(name, justify="left" if name == "component" else "right")
    for row in p.by_component:
        table.add_row(row.component.value, format_count(row.parameters),
                      format_count(row.active), format_bytes(row.weight_bytes, units))
    total_given = p.given and "total" not in p.derived
    human = format_bytes(p.weight_bytes, units)
    # The exact figures go on a line of their own: one line held the table past 80 columns.
    table.add_row(Text("total", style="bold"),
                  f"{format_count(p.total)}\n({p.total:,})" + (" given" if total_given else ""),
                  f"{format_count(p.active)}\n({p.active:,})", f"{p.weight_bytes:,} B\n({human})")
    parts: list[Part] = [_heading(f"1. Parameter bytes ({label})"), table]
    if p.experts:
        parts.append(Text(
            f"experts: {p.experts} routed, top-{p.top_k}"
            + (f", {p.moe_layers} MoE layers, {p.parameters_per_expert:,} parameters per "
               f"expert per layer" if p.moe_layers and p.parameters_per_expert else "")
            + " — memory must hold the resident count; compute scales with the active one",
            style="dim"))
    if p.active_max is not None and p.active_min is not None:
        parts.append(Text(
            f"active per token is a range (zero-computation experts): minimum "
            f"{_count(p.active_min)} when every pick is a zero expert, expected "
            f"{_count(p.active_expected or 0)} if picks spread evenly over all experts, "
            f"maximum {_count(p.active_max)} (the active column)", style="dim"))
    if p.phantom_parameters:
        parts.append(Text(
            f"transformers also allocates {_count(p.phantom_parameters)} for the zero "
            f"experts' gate_up_proj rows (its total: {_count(p.transformers_total or 0)}); no "
            "checkpoint holds them and no engine loads them", style="dim"))
    if p.mtp_parameters:
        parts.append(Text(
            f"multi-token prediction: {_count(p.mtp_parameters)} more in the checkpoint, not "
            f"in the total (transformers builds none); with them "
            f"{_count(p.total_with_mtp or 0)}, loaded only for speculative decoding",
            style="dim"))
    if p.derived:
        parts.append(Text(f"derived from given totals: {', '.join(p.derived)}", style="dim"))
    return parts


def _state(inv: Inventory, units: UnitSystem) -> list[Part]:
    s = inv.state
    if s is None:
        why = ("no decode loop: every request is one pass over complete inputs"
               if inv.family is Family.ENCODER else
               "no KV: the step loop refines one latent of fixed shape"
               if inv.family is Family.DIFFUSION else "no per-sequence state described")
        return [_heading("2. Persistent state"), Text(why)]
    table = Table()
    # Headers on two lines and kind labels that wrap: on one line they held the table
    # past 80 columns (88 for gemma-2 at 128K).
    for name in ("kind", "layers", "per token", "held at\ncontext", "per\nsequence",
                 "release"):
        figure = name not in ("kind", "release")
        table.add_column(name, justify="right" if figure else "left",
                         overflow="ellipsis" if figure else "fold")
    for k in s.kinds:
        kind = kinds.get(k.kind)
        table.add_row(
            kind.label(k.window), f"{k.layers:,}",
            format_bytes(k.bytes_per_token, units) if kind.grows else "fixed",
            f"{k.tokens_held:,}" if kind.holds_tokens else "—",
            format_bytes(k.bytes_per_sequence, units), k.release,
        )
    parts: list[Part] = [
        _heading(f"2. Persistent state ({s.kv_dtype}, {s.context:,} positions per sequence)"),
        Text(f"per token {s.bytes_per_token:,} B ({format_bytes(s.bytes_per_token, units)}) · "
             f"per sequence {s.bytes_per_sequence:,} B "
             f"({format_bytes(s.bytes_per_sequence, units)})"
             + (f" · fixed {format_bytes(s.fixed_bytes_per_sequence, units)}"
                if s.fixed_bytes_per_sequence else "")),
        table,
    ]
    if s.media_tokens_per_request:
        where = ("occupying positions in the language model's context" if s.media_in_context
                 else "read by cross-attention: fixed per request, not in the context")
        parts.append(Text(f"media: {s.media_tokens_per_request:,} feature tokens per request, "
                          f"{where}"))
    parts.append(Text("sampler state per request: " + "; ".join(i.name for i in s.sampler),
                      style="dim"))
    return parts


def _work(inv: Inventory, units: UnitSystem) -> list[Part]:
    phases = [w for w in (inv.prefill, inv.decode) if w is not None]
    parts: list[Part] = [_heading("3. Prefill and decode shapes")]
    if inv.encoder is not None:
        e = inv.encoder
        parts.append(Text(f"encoder: {e.tokens:,} positions per item → {e.feature_tokens:,} "
                          f"feature tokens; {_flops(e.flops)} for the request's media"))
    if inv.diffusion is not None:
        d = inv.diffusion
        parts.append(Text(
            f"step loop: {d.steps} steps × guidance ×{d.guidance_factor} over "
            f"{d.latent_tokens:,} latent tokens; {_flops(d.denoiser_flops_per_step)} per "
            f"step{' (given)' if d.flops_per_step_given else ' (estimate: 2 × params × tokens)'}"
            f", {_flops(d.denoiser_flops)} per image; requests share a batch when: "
            + ", ".join(d.batch_compatible_when)))
    if not phases:
        return parts
    table = Table()
    table.add_column("", overflow="fold")
    for w in phases:
        # two-line headers: on one line they held the table past 80 columns
        title = (f"prefill\n({w.tokens:,} tokens)" if w.phase == "prefill" and
                 inv.family is not Family.ENCODER else
                 f"forward\n({w.tokens:,} tokens)" if w.phase == "prefill" else
                 f"decode step\n(batch {w.sequences:,} at {w.context:,})")
        table.add_column(title, justify="right")
    rows: list[tuple[str, Callable[[PhaseWork], str]]] = [
        ("matmul FLOPs", lambda w: _flops(w.matmul_flops)),
        ("attention FLOPs", lambda w: _flops(w.attention_flops)),
        ("FLOPs per token", lambda w: _flops(w.flops_per_token)),
        ("weights read", lambda w: format_bytes(w.weight_bytes_read, units)),
        ("state read", lambda w: format_bytes(w.state_bytes_read, units)),
        ("arithmetic intensity", lambda w: f"{w.arithmetic_intensity:,.1f} FLOP/B"),
    ]
    for label, get in rows:
        table.add_row(label, *(get(w) for w in phases))
    if any(w.experts_touched for w in phases):
        table.add_row("experts touched per MoE layer",
                      *(f"{w.experts_touched:.1f}" if w.experts_touched else "—"
                        for w in phases))
    parts.append(table)
    shapes = FitTable(title=None, optional=("copies",))  # copies: the GEMMs' tensor counts
    shapes.add_column("GEMM (per copy)")
    for w in phases:
        shapes.add_column(f"{w.phase} M × N × K", justify="right")
    shapes.add_column("copies", justify="right")
    for index, gemm in enumerate(phases[0].gemms):
        cells = [f"{w.gemms[index].m:,} × {w.gemms[index].n:,} × {w.gemms[index].k:,}"
                 if index < len(w.gemms) else "" for w in phases]
        shapes.add_row(gemm.name, *cells, f"{gemm.count:,}")
    if phases[0].gemms:
        parts.append(shapes)
    return parts


def _communication(inv: Inventory, units: UnitSystem) -> list[Part]:
    c = inv.communication
    if c is None:
        return []
    lines = []

    def add(label: str, value: int | None) -> None:
        if value is not None:
            lines.append(f"{label}: {value:,} B ({format_bytes(value, units)})")

    add("TP all-reduce per layer per token (2 per layer)",
        c.tp_allreduce_bytes_per_layer_per_token)
    add("EP dispatch per MoE layer per token (at most)",
        c.ep_dispatch_bytes_per_moe_layer_per_token)
    add("EP combine per MoE layer per token (at most)", c.ep_combine_bytes_per_moe_layer_per_token)
    add("PP hand-off per token per stage boundary", c.pp_handoff_bytes_per_token)
    add("encoder → LM features per item", c.encoder_feature_bytes_per_item)
    add("KV hand-off per request (prefill/decode disaggregation)",
        c.kv_transfer_bytes_per_request)
    return [_heading(f"4. Conditional communication ({c.activation_dtype} activations)"),
            Text("\n".join(lines)), Text(c.tp_ring_factor_note, style="dim")]


def _stages(inv: Inventory, units: UnitSystem) -> list[Part]:
    table = Table()
    for name in ("stage", "parameters", "bytes", "runs", "keeps"):
        table.add_column(name, justify="right" if name in ("parameters", "bytes") else "left",
                         overflow="fold" if name in ("stage", "runs", "keeps") else "ellipsis")
    for s in inv.stages:
        table.add_row(s.name, format_count(s.parameters) if s.parameters else "—",
                      format_bytes(s.weight_bytes, units) if s.weight_bytes else "—",
                      s.runs, s.state)
    splits = "; ".join(f"{s.name} {'yes' if s.available else 'no'}" for s in inv.splits)
    return [_heading("5. Independently placeable stages"), table,
            Text(f"splits available: {splits}")]


def _roofline(inv: Inventory, units: UnitSystem) -> list[Part]:
    t = inv.timing
    if t is None:
        return []
    eff = t.efficiency
    ridge = t.ridge_flops_per_byte * eff.compute / eff.bandwidth
    table = Table()
    for name in ("phase", "intensity", "vs ridge", "bound", "time"):
        prose = name in ("phase", "bound")  # words that wrap; the figures stay whole
        table.add_column(name, justify="left" if prose else "right",
                         overflow="fold" if prose else "ellipsis")
    for name, intensity, bound, seconds in (
        (f"prefill ({t.prompt_tokens:,} tokens)", t.prefill_intensity, t.prefill_bound,
         t.prefill_s),
        (f"decode step (batch {t.batch:,})", t.decode_intensity, t.decode_bound,
         t.decode_step_s),
    ):
        # the bound is decided at the achievable fractions, so is the side of the ridge
        side = "above" if intensity >= ridge else "below"
        table.add_row(name, f"{intensity:,.1f} FLOP/B", side, bound,
                      f"{seconds * 1000:,.2f} ms")
    at_peak = eff.bound  # 100 % of every rate: the roofline is the physics bound
    reached = ("" if at_peak else
               f", {ridge:,.0f} at the {eff.compute:.0%} of FLOP/s and {eff.bandwidth:.0%} "
               "of bandwidth reached (the ridge the phases are placed against)")
    return [
        _heading(f"6. Roofline on one {t.device} ({'bound' if at_peak else 'estimate'})"),
        Text(f"peak {t.peak_flops / 1e12:,.0f} TFLOP/s, "
             f"{format_bytes(t.memory_bandwidth_bytes_per_s, units)}/s: ridge point "
             f"{t.ridge_flops_per_byte:,.0f} FLOP/B at peak{reached}"),
        table,
        Text(f"TTFT {t.ttft_s * 1000:,.1f} ms · TPOT {t.tpot_s * 1000:,.2f} ms · "
             f"{t.tokens_per_s_per_device:,.0f} tokens/s — {t.estimate}", style="dim"),
    ]


def _checkpoint(inv: Inventory, units: UnitSystem) -> list[Part]:
    c = inv.checkpoint
    if c is None:
        return []
    verdict = ("parameters agree" if c.parameters_agree else
               f"checkpoint {c.difference:+,} parameters against the config"
               if c.difference is not None else "headers not read: sizes from the index")
    table = Table()
    for name in ("", "config", "checkpoint"):
        table.add_column(name, justify="left" if not name else "right")
    table.add_row("parameters", f"{c.config_parameters:,}",
                  f"{c.checkpoint_parameters:,}" if c.checkpoint_parameters is not None
                  else "—")
    table.add_row("bytes for the model", format_bytes(c.config_weight_bytes, units),
                  format_bytes(c.model_bytes, units))
    table.add_row("bytes on disk", "", format_bytes(c.checkpoint_bytes, units))
    parts: list[Part] = [_heading(f"0. Checkpoint ({c.format}, {c.tensor_count:,} tensors): "
                                  f"{verdict}"), table]
    lines = list(c.disagreements)
    lines += [f"check failed: {k.what} ({k.tensor}): config {k.config:,}, checkpoint "
              f"{k.checkpoint:,}" for k in c.checks if not k.agrees]
    if lines:
        parts.append(Text("\n".join(lines), style="yellow"))
    if c.notes:
        parts.append(Text("\n".join(c.notes), style="dim"))
    return parts


def inventory_tables(inv: Inventory, units: UnitSystem) -> list[Part]:
    head = Text(f"{inv.model} · {inv.family.value}", style="bold")
    parts: list[Part] = [head]
    if inv.source:
        parts.append(Text(f"source: {inv.source}", style="dim"))
    for note in inv.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    parts += [Diagnostic(warning) for warning in inv.warnings]
    for section in (_checkpoint, _parameters, _state, _work, _communication, _stages,
                    _roofline):
        parts += section(inv, units)
    if inv.trust:
        parts.append(Text("trust: " + "; ".join(f"{group} {t.label()}"
                                                for group, t in inv.trust.items()), style="dim"))
    return parts


def _compare_title(results: list[Inventory], request: InventoryRequest) -> Text:
    """What is compared, and at which workload and dtypes."""
    prompt = request.prompt_tokens or min(1000, request.context)
    weights = (f"weights at {request.dtype}" if request.dtype else
               "weights as each model stores them")
    kv = f"KV at {request.kv_dtype}" if request.kv_dtype else "KV at each model's dtype"
    text = (f"{len(results)} topologies side by side, each at {request.context:,} positions "
            f"per sequence, a {prompt:,}-token prompt and decode batch {request.batch:,}; "
            f"{weights}, {kv}")
    if any(inv.media is not None for inv in results):
        text += (f"; {request.images:,} media item{'' if request.images == 1 else 's'} per "
                 "request where a model has an encoder")
    return Text(text, style="bold")


def compare_table(
    results: list[Inventory], units: UnitSystem, request: InventoryRequest | None = None
) -> list[Part]:
    """A title, then one column per topology, rows aligned; '—' where a fact does not
    apply. Lists (stages, splits) wrap; every other cell is a figure and stays whole."""
    table = Table()
    table.add_column("", overflow="fold")
    for inv in results:
        table.add_column(Text(inv.model, no_wrap=True), justify="right", overflow="fold")

    def size(value: int | None) -> str:
        return format_bytes(value, units) if value is not None else "—"

    def state(inv: Inventory, attr: str) -> str:
        return size(getattr(inv.state, attr)) if inv.state else "—"

    rows: list[tuple[str, Callable[[Inventory], str]]] = [
        ("family", lambda i: i.family.value),
        ("parameters (resident)", lambda i: format_count(i.parameters.total)
         + (" given" if i.parameters.given and "total" not in i.parameters.derived else "")),
        ("parameters active per token", lambda i: format_count(i.parameters.active)),
        ("weight bytes", lambda i: f"{size(i.weight_bytes)} ({i.weights.short})"),
        ("KV per token", lambda i: state(i, "bytes_per_token")),
        ("state per sequence", lambda i: state(i, "bytes_per_sequence")),
        ("fixed state per sequence", lambda i: state(i, "fixed_bytes_per_sequence")),
        ("media tokens per request", lambda i: f"{i.state.media_tokens_per_request:,}"
         if i.state and i.state.media_tokens_per_request else "—"),
        ("encoder FLOPs per request", lambda i: _flops(i.encoder.flops) if i.encoder else "—"),
        ("prefill FLOPs per token", lambda i: _flops(i.prefill.flops_per_token)
         if i.prefill else "—"),
        ("decode bytes read per step", lambda i: size(i.decode.bytes_read)
         if i.decode else "—"),
        ("decode intensity", lambda i: f"{i.decode.arithmetic_intensity:,.1f} FLOP/B"
         if i.decode else "—"),
        ("TP all-reduce / layer / token", lambda i: size(
            i.communication.tp_allreduce_bytes_per_layer_per_token)
         if i.communication else "—"),
        ("EP dispatch / MoE layer / token", lambda i: size(
            i.communication.ep_dispatch_bytes_per_moe_layer_per_token)
         if i.communication else "—"),
        ("stages", lambda i: ", ".join(s.name for s in i.stages)),
        ("splits available", lambda i: ", ".join(
            s.name.split(" (")[0] for s in i.splits if s.available)),
    ]
    lists = {"stages", "splits available"}
    for label, get in rows:
        cells = [get(inv) for inv in results]
        table.add_row(label, *(cell if label in lists else Text(cell, no_wrap=True)
                               for cell in cells))
    title = [_compare_title(results, request)] if request is not None else []
    estimates = [Text(f"{inv.model}: {inv.estimated}", style="bold") for inv in results
                 if inv.estimated]
    warnings = [Diagnostic(f"{inv.model}: {w}") for inv in results for w in inv.warnings]
    said = {inv.model: "; ".join(f"{group} {t.label()}" for group, t in inv.trust.items())
            for inv in results if inv.trust}
    trust = ([Text(f"trust: {next(iter(said.values()))}", style="dim")]
             if len(set(said.values())) == 1 else
             [Text(f"trust ({model}): {text}", style="dim") for model, text in said.items()])
    return [*title, table, *estimates, *trust, *warnings]
