"""`placement --plot`: the memory bars and the KV capacity against context, as a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Invoke

ARGS = ["placement", "llama-3.1-8b", "--device", "h100", "--count", "2"]


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_plot_files(invoke: Invoke, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"placement{suffix}"
    run = invoke(*ARGS, "--plot", str(target), "--format", "json")
    assert run.code == 0, run.stderr
    data = target.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        text = data.decode()
        assert text.lstrip().startswith("<?xml") and "</svg>" in text
        for label in ("weights", "reserve", "KV pool", "free", "KV tokens · vLLM",
                      "maximum concurrency · vLLM", "1. tp2 pp1"):
            assert label in text, label


def test_plot_series_are_the_results_figures() -> None:
    from llm_inventory.engine.capacity import plan_capacity
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.render.plot import placement_series
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    spec = load_model("llama-3.1-8b")
    request = PlacementRequest(device=resolve_device("h100"), count=2, context=8000)
    result = plan_placement(spec, request)
    best = result.plans[0]
    curve = plan_capacity(spec, request, result, best)
    series = placement_series([result], [curve])
    d = best.per_device
    assert d is not None
    assert series["weights"][0] == (0.0, float(d.weight_bytes))
    assert series["KV pool"][0] == (0.0, float(d.kv_pool_bytes))
    assert len(series["weights"]) == min(20, len(result.plans))
    at = {int(x): y for x, y in series["KV tokens · vLLM 0.33"]}
    assert at[8000] == d.kv_capacity_tokens  # the context asked is on the curve
    conc = dict(series["maximum concurrency · vLLM 0.33"])
    assert conc[8000.0] == pytest.approx(best.max_concurrency)
    assert conc[1024.0] > conc[131072.0]


def test_llamacpp_holds_its_room_at_each_context() -> None:
    """llama.cpp allocates what -c asks: at each context its curve is the room over one
    sequence's caches, so the requests fall as the context grows."""
    from llm_inventory.engine.capacity import plan_capacity
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    spec = load_model("llama-3.1-8b")
    request = PlacementRequest(device=resolve_device("h100"), count=1, engine="llamacpp")
    result = plan_placement(spec, request)
    curve = {c.context: c for c in plan_capacity(spec, request, result, result.plans[0])}
    d = result.plans[0].per_device
    assert d is not None
    room = d.memory_bytes - d.weight_bytes - d.reserve_bytes
    assert curve[8192].max_concurrency == pytest.approx(room / (8192 * 131072))
    assert curve[1024].max_concurrency > 7 * curve[8192].max_concurrency


def test_several_engines_plot_each_best_plan(invoke: Invoke, tmp_path: Path) -> None:
    target = tmp_path / "engines.svg"
    run = invoke(*ARGS, "--engine", "vllm,sglang", "--plot", str(target))
    assert run.code == 0, run.stderr
    text = target.read_text()
    assert "vLLM 0.33: tp2 pp1" in text and "SGLang 0.5.23: tp2 pp1" in text
    assert "KV tokens · SGLang 0.5.23" in text


def test_plot_refuses_other_files_before_any_work(invoke: Invoke, tmp_path: Path) -> None:
    run = invoke(*ARGS, "--plot", str(tmp_path / "chart.jpg"))
    assert run.code == 2 and "--plot" in run.stderr and run.stdout == ""


def test_capacity_axes_start_at_zero_and_the_legend_sits_below() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llm_inventory.engine.capacity import plan_capacity
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.render.plot import _curves, placement_series
    from llm_inventory.spec.devices import resolve_device
    from llm_inventory.spec.loader import load_model

    spec = load_model("llama-3.1-8b")
    request = PlacementRequest(device=resolve_device("h100"), count=2, context=8000)
    result = plan_placement(spec, request)
    series = placement_series([result], [plan_capacity(spec, request, result,
                                                       result.plans[0])])
    figure, ax = plt.subplots()
    try:
        _curves(ax, series, [result])
        figure.canvas.draw()
        axes = list(figure.axes)
        assert len(axes) == 2 and all(a.get_ylim()[0] == 0 for a in axes)
        legend = ax.get_legend().get_window_extent()
        assert legend.y1 <= ax.get_window_extent().y0  # under the plot, over no curve
    finally:
        plt.close(figure)


def test_plot_failing_mid_write_keeps_the_old_file(invoke: Invoke, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk filling part-way through the chart leaves neither a half-written nor a
    clobbered file: the old chart stays, and no temporary is left beside it."""
    from matplotlib.figure import Figure

    def fail_midway(self: Figure, fname: object, **kwargs: object) -> None:
        Path(str(fname)).write_text("<svg half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", fail_midway)
    target = tmp_path / "chart.svg"
    target.write_text("old chart")
    run = invoke(*ARGS, "--plot", str(target))
    assert run.code == 2, run.stderr
    assert "No space left on device" in run.stderr
    assert target.read_text() == "old chart"
    assert [p.name for p in tmp_path.iterdir()] == ["chart.svg"]
