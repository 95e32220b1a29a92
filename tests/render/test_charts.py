"""Terminal pictures: memory bars in proportion, the scatter's marks where the data says."""

from __future__ import annotations

from llm_inventory.render.charts import bar, scatter
from tests.conftest import Invoke


def test_memory_bar_is_in_proportion() -> None:
    text = bar([50, 10, 30, 10], 100, width=20).plain
    assert len(text) == 20
    assert (text.count("█"), text.count("▓"), text.count("▒"), text.count("░")) == (10, 2, 6, 2)
    # a small part keeps one cell; nothing is drawn for an empty part
    tiny = bar([97, 1, 2, 0], 100, width=10).plain
    assert tiny.count("▓") == 1 and "░" not in tiny and len(tiny) == 10


def test_scatter_puts_the_front_where_the_data_is() -> None:
    lines = scatter([(10.0, 100.0, "●"), (100.0, 10.0, "●"), (50.0, 50.0, "·")],
                    width=20, height=5, x_label="x", y_label="y").plain.splitlines()
    grid = [line.split("│", 1)[1] for line in lines[:5]]
    marks = [(row, line.index("●")) for row, line in enumerate(grid) if "●" in line]
    assert len(marks) == 2
    (top, top_col), (bottom, bottom_col) = marks
    assert top < bottom and top_col < bottom_col  # high y on the left, low y on the right
    assert sum(line.count("·") for line in grid) == 1


def test_placement_json_and_table_carry_trust(invoke: Invoke) -> None:
    run = invoke("placement", "llama-3.1-8b", "--device", "h100", "--count", "2",
                 "--format", "json")
    data = run.json()
    assert data["trust"]["weights"]["kind"] == "exact"
    assert data["trust"]["kv_pool"]["kind"] == "engine rule"
    assert data["trust"]["timing"]["kind"] == "calibrated"
    timing = data["plans"][0]["timing"]
    # vLLM's times come from TensorRT-LLM's constants: extrapolated, and said so
    assert timing["trust"].startswith("calibrated, extrapolated (±")
    assert timing["roofline_tpot_s"] < timing["tpot_s"]  # the bound is below the estimate
    table = invoke("placement", "llama-3.1-8b", "--device", "h100", "--count", "2").stdout
    assert "memory per device" in table and "trust: weights exact" in table


def test_memory_bar_of_parts_far_past_the_total_is_quick_and_full() -> None:
    """Weights of 16 GB on a 1-byte device once trimmed the bar one cell at a time."""
    text = bar([16 * 10**9, 10**9, 0, 0], 1, width=32).plain
    assert len(text) == 32
    assert text.startswith("█") and "▓" in text
