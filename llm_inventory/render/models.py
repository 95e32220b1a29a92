"""Tables for the preset catalog: one row per preset, or one preset in detail."""

from __future__ import annotations

import re

from rich.table import Table as RichTable
from rich.text import Text

from llm_inventory.engine.catalog import ModelCatalog, ModelDetail, ModelEntry
from llm_inventory.render.fit import Footnote, Table
from llm_inventory.units import DTYPE_BITS, UnitSystem, format_bytes, format_count

_REPO = re.compile(r"github (\S+/\S+) @[0-9a-f]{6,40}")


def short_source(source: str) -> str:
    """`owner/repo` when the source names a GitHub copy, else its first words.

    The full source (file, commit, caveats) is in `inventory models NAME` and in JSON.
    """
    match = _REPO.search(source)
    if match:
        return match[1]
    words = source.split()
    text = " ".join(words[:4])
    return text + (" …" if len(words) > 4 else "")


def _count(n: int | None, given: bool | None) -> str:
    if n is None:
        return "—"
    return format_count(n) + (" *" if given else "")


def _kv(entry: ModelEntry, units: UnitSystem) -> str:
    if entry.kv_bytes_per_token is None:
        return "none" if entry.family is not None else "—"
    text = format_bytes(entry.kv_bytes_per_token, units)
    if entry.fixed_state_bytes_per_sequence:
        text += " + fixed"
    return text


def _stored(entry: ModelEntry) -> str:
    """The weights' storage format in a word: `bf16`, `fp8`, `mxfp4`, and `int4` or
    `float4` for a container format that names its dtype ("compressed-tensors (int4,
    group)", "compressed-tensors (float4, group)")."""
    text = entry.quantization or entry.weight_dtype or ""
    text, _, experts = text.partition("; routed experts ")
    inner = text.partition("(")[2].split(",")[0].rstrip(")").strip()
    word = inner if inner in DTYPE_BITS or _NAMED_DTYPE.match(inner) else text.split(" ")[0]
    return word + ("+" + experts.split(" ")[0] if experts else "")  # fp8+fp4: DeepSeek-V4


# A container's own name for its element type: int4, uint8, float4, float8.
_NAMED_DTYPE = re.compile(r"^u?(?:int|float)\d+$")


# Family names as the list prints them: the longest, "encoder_decoder", alone held the
# table past 80 columns.
_FAMILY = {"encoder_decoder": "enc-dec"}


def models_table(catalog: ModelCatalog, units: UnitSystem) -> list[RichTable | Text]:
    """Every preset: family, parameters (total, active), weights, KV per token, source."""
    # Too narrow: the source goes first (`inventory models NAME` has it), then the active
    # count, then KV per token (JSON and `inventory models NAME` have both): at 80 columns
    # name, family, parameters and weights remain.
    table = Table(show_header=True, optional=("source", "active", "KV / token"))
    table.add_column("name", no_wrap=True)
    table.add_column("family", no_wrap=True)
    table.add_column("parameters", justify="right", no_wrap=True)
    table.add_column("active", justify="right", no_wrap=True)
    table.add_column("weights", justify="right", no_wrap=True)
    table.add_column("KV / token", justify="right", no_wrap=True)
    table.add_column("source", overflow="fold")
    failed: list[ModelEntry] = []
    for m in catalog.models:
        if m.error is not None:
            failed.append(m)
            table.add_row(Text(m.name), "—", "—", "—", "—", "—", Text(short_source(m.source)))
            continue
        assert m.family is not None and m.weight_bytes is not None
        table.add_row(
            Text(m.name), _FAMILY.get(m.family.value, m.family.value),
            _count(m.parameters, m.parameters_given),
            _count(m.active_parameters, m.parameters_given),
            f"{format_bytes(m.weight_bytes, units)} {_stored(m)}",
            _kv(m, units), Text(short_source(m.source)),
        )
    parts: list[RichTable | Text] = [Text(f"Model presets · {len(catalog.models)}", style="bold"),
                                 table]
    if any(m.parameters_given for m in catalog.models):
        parts.append(Text("* given totals (parts of a pipeline), not counted from shapes",
                          style="dim"))
    if any(m.fixed_state_bytes_per_sequence for m in catalog.models):
        parts.append(Footnote("+ fixed: recurrent layers also hold a fixed state per sequence",
                              column="KV / token", style="dim"))
    for m in failed:
        parts.append(Text(f"{m.name}: not available yet: {m.error}", style="dim"))
    return parts


def model_detail_table(
    detail: ModelDetail, units: UnitSystem, *, preset: bool = True
) -> list[RichTable | Text]:
    """One model (a preset unless `preset` is False): what it is, where its shapes came
    from, and its headline figures."""
    table = Table(show_header=False)
    table.add_column("", no_wrap=True)
    table.add_column("", overflow="fold")

    def row(label: str, value: str | None) -> None:
        if value:
            table.add_row(label, Text(value))

    assert detail.family is not None
    row("family", detail.family.value)
    row("description", detail.description)
    row("aliases", ", ".join(detail.aliases))
    row("source", detail.source)
    row("file", detail.file)
    if detail.parameters is not None:
        exact = f"{detail.parameters:,}"
        row("parameters", f"{exact} ({format_count(detail.parameters)})"
            + (" given" if detail.parameters_given else ""))
    if detail.active_parameters is not None and detail.active_parameters != detail.parameters:
        row("active per token", f"{detail.active_parameters:,} "
            f"({format_count(detail.active_parameters)})")
    if detail.experts:
        row("experts", f"{detail.experts}, {detail.top_k} per token")
    if detail.weight_bytes is not None:
        stored = detail.quantization or detail.weight_dtype
        row("weights", f"{detail.weight_bytes:,} B ({format_bytes(detail.weight_bytes, units)}) "
            f"as {stored}")
    if detail.kv_bytes_per_token is not None:
        row("KV per token", f"{detail.kv_bytes_per_token:,} B "
            f"({format_bytes(detail.kv_bytes_per_token, units)}) at {detail.kv_dtype}")
    if detail.fixed_state_bytes_per_sequence:
        row("fixed state per sequence",
            f"{detail.fixed_state_bytes_per_sequence:,} B "
            f"({format_bytes(detail.fixed_state_bytes_per_sequence, units)})")
    if detail.layers:
        kinds = ", ".join(f"{k.layers} {k.kind}" for k in detail.layer_kinds)
        row("layers", f"{detail.layers}" + (f" ({kinds})" if kinds else ""))
    if detail.media_tokens_per_item:
        row("feature tokens per item", f"{detail.media_tokens_per_item:,}")
    if detail.max_context:
        row("max context", f"{detail.max_context:,} tokens")
    title = Text(f"{'Model preset' if preset else 'Model'} · {detail.name}", style="bold")
    parts: list[RichTable | Text] = [title, table]
    if detail.by_component:
        comp = Table(show_header=True)
        for name in ("component", "parameters", "active", "weights"):
            comp.add_column(name, justify="left" if name == "component" else "right")
        for c in detail.by_component:
            comp.add_row(c.component.value, f"{c.parameters:,}", f"{c.active:,}",
                         format_bytes(c.weight_bytes, units))
        parts += [Text("Parameters by component", style="bold"), comp]
    for note in detail.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return parts
