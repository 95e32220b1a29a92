"""`--plot FILE.svg|png`: the Pareto front and the KV capacity against context, as a file.

Drawn with matplotlib (the optional `plot` extra), imported only here and only when asked.
`plot_series` gives the data every chart draws, so tests can check it apart from the
picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_inventory.engine.recommend import RecommendResult
from llm_inventory.errors import InputError

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


def write_plot(result: RecommendResult, path: Path) -> None:
    """Write the charts to `path` (SVG or PNG by its suffix)."""
    check_target(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = plot_series(result)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    _pareto(left, series, result)
    _capacity(right, series, result)
    figure.tight_layout()
    metadata: dict[str, Any] = {"Date": None} if path.suffix.lower() == ".svg" else {}
    try:
        figure.savefig(path, metadata=metadata)
    except OSError as exc:
        raise InputError("plot", f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        plt.close(figure)


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
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1])
