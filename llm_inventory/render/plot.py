"""`--plot FILE.svg|png`: recommend's Pareto front, placement's memory bars, and the KV
capacity and maximum concurrency against context, as a file.

Drawn with matplotlib (the optional `plot` extra), imported only here and only when asked.
`plot_series` gives the data every chart draws, so tests can check it apart from the
picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_inventory.engine.capacity import CapacityPoint
from llm_inventory.engine.placement import PlacementResult
from llm_inventory.engine.recommend import RecommendResult
from llm_inventory.errors import InputError
from llm_inventory.files import atomic_target

FORMATS = (".svg", ".png")


def plot_series(result: RecommendResult) -> dict[str, list[tuple[float, float]]]:
    """Each series a chart draws, by name: (x, y) points."""
    front = sorted((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu)
                   for p in result.pareto if p.on_front)
    others = [(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu)
              for p in result.pareto if not p.on_front]
    return {
        "pareto front": front,
        "other plans": others,
        "KV tokens": [(float(c.context), float(c.kv_tokens)) for c in result.capacity],
        "maximum concurrency": [(float(c.context), c.max_concurrency)
                                for c in result.capacity],
    }


def check_target(path: Path) -> None:
    """Refuse an unknown file type or a missing matplotlib before any work is done."""
    if path.suffix.lower() not in FORMATS:
        raise InputError("plot", f"write .svg or .png, got {path.name!r}")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise InputError("plot", "needs matplotlib: pip install 'llm-inventory[plot]'") \
            from exc


#: The memory parts of a bar, in order, as the terminal's bars name them.
MEMORY_PARTS = ("weights", "reserve", "KV pool", "free")


def placement_series(results: list[PlacementResult], capacities: list[list[CapacityPoint]],
                     limit: int = 20) -> dict[str, list[tuple[float, float]]]:
    """Each series placement's charts draw, by name: per memory part (bar index, bytes) of
    the binding device, one bar per plan shown (one result) or per engine's best plan
    (several); and per result (context, KV tokens) and (context, requests)."""
    series: dict[str, list[tuple[float, float]]] = {part: [] for part in MEMORY_PARTS}
    for index, (_, parts, _) in enumerate(memory_rows(results, limit)):
        for part, value in zip(MEMORY_PARTS, parts, strict=True):
            series[part].append((float(index), float(value)))
    for result, points in zip(results, capacities, strict=True):
        name = _engine_label(result)
        series[f"KV tokens · {name}"] = [(float(c.context), float(c.kv_tokens))
                                         for c in points]
        series[f"maximum concurrency · {name}"] = [(float(c.context), c.max_concurrency)
                                                   for c in points]
    return series


def memory_rows(results: list[PlacementResult], limit: int = 20) -> \
        list[tuple[str, tuple[int, int, int, int], int]]:
    """(label, (weights, reserve, KV pool, free), device bytes) per bar; what other
    processes hold (`--used`) is neither, and stays blank at the bar's end."""
    if len(results) == 1:
        picked = [(f"{i}. {_split(p)}", p) for i, p in
                  enumerate(results[0].plans[:limit or None], start=1)]
    else:
        picked = [(f"{_engine_label(r)}: {_split(r.plans[0])}", r.plans[0])
                  for r in results if r.plans]
    rows = []
    for label, plan in picked:
        d = plan.per_device
        if d is None:
            continue
        kv = max(0, d.kv_pool_bytes)
        free = max(0, d.memory_bytes - d.weight_bytes - d.reserve_bytes - kv - d.others_bytes)
        rows.append((label, (d.weight_bytes, d.reserve_bytes, kv, free), d.memory_bytes))
    return rows


def write_placement_plot(results: list[PlacementResult],
                         capacities: list[list[CapacityPoint]], path: Path,
                         limit: int = 20) -> None:
    """Write placement's charts to `path`: the memory bars and each result's best plan's
    KV capacity against context."""
    check_target(path)
    series = placement_series(results, capacities, limit)
    labels = [label for label, _, _ in memory_rows(results, limit)]

    def draw(left: Any, right: Any) -> None:
        _bars(left, series, labels, results[0])
        _curves(right, series, results)

    _save(path, draw)


def write_plot(result: RecommendResult, path: Path) -> None:
    """Write the charts to `path` (SVG or PNG by its suffix)."""
    check_target(path)
    series = plot_series(result)

    def draw(left: Any, right: Any) -> None:
        _pareto(left, series, result)
        _capacity(right, series, result)

    _save(path, draw)


def _save(path: Path, draw: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    draw(left, right)
    figure.tight_layout()
    metadata: dict[str, Any] = {"Date": None} if path.suffix.lower() == ".svg" else {}
    try:
        with atomic_target(path, field="plot") as temp:  # never half-written nor clobbered
            figure.savefig(temp, metadata=metadata)
    finally:
        plt.close(figure)


def _split(plan: Any) -> str:
    text = f"tp{plan.tp} pp{plan.pp}" + (f" ep{plan.ep}" if plan.ep > 1 else "")
    mode = {"encoder": " enc", "prefill/decode": " P/D"}.get(plan.disaggregation or "", "")
    return text + f" ×{plan.dp}" + mode


def _engine_label(result: PlacementResult) -> str:
    from llm_inventory.engine.serving import get

    return get(f"{result.engine}@{result.engine_version}").label


def _bars(ax: Any, series: dict[str, list[tuple[float, float]]], labels: list[str],
          result: PlacementResult) -> None:
    gib = 2.0 ** 30
    left = [0.0] * len(labels)
    for part, colour in zip(MEMORY_PARTS, ("C0", "C1", "C2", "0.85"), strict=True):
        widths = [value / gib for _, value in series[part]]
        ax.barh(range(len(labels)), widths, left=left, label=part, color=colour)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("GiB per device (the binding one)")
    ax.set_title(f"{result.model} on {result.device}: memory per plan")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4, fontsize="small")


def _curves(ax: Any, series: dict[str, list[tuple[float, float]]],
            results: list[PlacementResult]) -> None:
    twin = ax.twinx()
    for index, result in enumerate(results):
        name = _engine_label(result)
        tokens = series[f"KV tokens · {name}"]
        conc = series[f"maximum concurrency · {name}"]
        ax.plot([x for x, _ in tokens], [y for _, y in tokens], "s-", c=f"C{index}",
                label=f"KV tokens · {name}")
        twin.plot([x for x, _ in conc], [y for _, y in conc], "^--", c=f"C{index}",
                  label=f"maximum concurrency · {name}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length, tokens")
    ax.set_ylabel("KV tokens per engine")
    twin.set_ylabel("requests at that context")
    ax.set_title("best plan: KV capacity")
    _zero_based_with_legend_below(ax, twin)


def _pareto(ax: Any, series: dict[str, list[tuple[float, float]]],
            result: RecommendResult) -> None:
    others = series["other plans"]
    if others:
        ax.scatter([x for x, _ in others], [y for _, y in others], s=10, c="0.7",
                   label="other plans")
    front = series["pareto front"]
    ax.plot([x for x, _ in front], [y for _, y in front], "o-", label="pareto front")
    ax.set_xlabel("output tokens/s per user")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{result.model}: throughput against interactivity")
    ax.legend()


def _capacity(ax: Any, series: dict[str, list[tuple[float, float]]],
              result: RecommendResult) -> None:
    tokens = series["KV tokens"]
    plan = result.chosen.label if result.chosen else ""
    ax.plot([x for x, _ in tokens], [y for _, y in tokens], "s-", label="KV tokens")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length, tokens")
    ax.set_ylabel("KV tokens per engine")
    twin = ax.twinx()
    conc = series["maximum concurrency"]
    twin.plot([x for x, _ in conc], [y for _, y in conc], "^--", c="C1",
              label="maximum concurrency")
    twin.set_ylabel("requests at that context")
    ax.set_title(f"chosen plan {plan}: KV capacity")
    _zero_based_with_legend_below(ax, twin)


def _zero_based_with_legend_below(ax: Any, twin: Any) -> None:
    """Both y-axes from zero (a capacity read off a cropped axis misleads) and the legend
    under the axes, where it covers no curve."""
    ax.set_ylim(bottom=0)
    twin.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper center",
              bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize="small")
