"""How results reach people and scripts: every table at 80 and 60 columns with no number or
identifier cut, names printed as they are (markup off), and warnings on stderr, never in a
machine-read stream."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.checkpoint.synthetic import LLAMA_CONFIG, llama_tensors, shard, write_config
from tests.conftest import ROOT, Run

# A cut cell ends in "…" straight after a character (`32,4…`, `h100-s…`); the deliberate
# ellipses ("… 246 others", "Qwen/Qwen3-8B, …") follow a space.
CUT = re.compile(r"\S…")
BORDERS = set("│┃┏┓┗┛┡┩└┘┌┐├┤")

# Every table of every command: each line's commands between them print every table kind.
TABLES = [
    "kv --layers 80 --tokens 8000 --tp 16",
    "kv --model gemma-2-9b --tokens 32K --block-size 16",
    "kv --model jamba-v0.1 --sequences 4",
    "kv --model whisper-large-v3",
    "inventory mixtral-8x7b --batch 32 --device h100",
    "inventory deepseek-v3 --context 128K",
    "inventory qwen2.5-vl-7b --images 2",
    "inventory bge-large",
    "inventory flux-dev",
    "inventory CHECKPOINT",
    "placement examples/dense-70b.yaml --device h100-sxm --count 8 --units si --limit 6",
    "placement gpt-oss-120b --device h100 --count 8 --limit 0",
    "placement deepseek-v3 --device h200 --count 16 --context 32K",
    "compare examples/dense-70b.yaml examples/moe-8x7b.yaml examples/vlm-2048.yaml",
    "compare llama-3.1-405b deepseek-v3 qwen3-235b-a22b whisper-large-v3",
    "models",
    "models deepseek-v3",
    "models CHECKPOINT",
    "devices",
    "devices h100-sxm",
    "devices --devices-file examples/devices.yaml",
    "route --experts 8 --top-k 2 --tokens 16 --seed 40603 --ep 4 --steps 200",
    "route --model deepseek-v3 --tokens 64 --steps 200 --ep 8",
    "sample --probs A=0.60,B=0.25,C=0.10,D=0.04,E=0.01 --chain repetition_penalty=1.3@A,top_p=0.85",
    "schema",
]


def _run(args: list[str], columns: int | None = 80) -> Run:
    env = {"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": None if columns is None else str(columns)}
    result = CliRunner(env=env).invoke(app, args, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ckpt") / "tiny-llama"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    shard(folder, llama_tensors(), 2)
    return folder


def _args(command: str, checkpoint: Path) -> list[str]:
    return [str(checkpoint) if word == "CHECKPOINT" else
            str(ROOT / word) if word.startswith("examples/") else word
            for word in command.split()]


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("command", TABLES)
def test_no_number_or_identifier_is_cut(command: str, columns: int, checkpoint: Path) -> None:
    run = _run(_args(command, checkpoint), columns)
    assert run.code == 0, run.stderr
    cut = [line for line in run.stdout.splitlines() if CUT.search(line)]
    assert not cut, f"cut at {columns} columns:\n" + "\n".join(cut)
    # A row cropped at the console's edge loses its right border instead.
    cropped = [line for line in run.stdout.splitlines()
               if line[:1] in BORDERS and line.rstrip()[-1:] not in BORDERS]
    assert not cropped, f"cropped at {columns} columns:\n" + "\n".join(cropped)


@pytest.mark.parametrize("columns", [80, 60])
def test_key_figures_print_whole(columns: int) -> None:
    """The figures the issue found cut: KV tokens, preset names, device ids."""
    plans = _run(["placement", "gpt-oss-120b", "--device", "h100", "--count", "8",
                  "--format", "json"]).json()["plans"]
    table = _run(["placement", "gpt-oss-120b", "--device", "h100", "--count", "8"], columns)
    for plan in plans[:20]:
        tokens = (plan["per_device"] or {}).get("kv_capacity_tokens")
        if tokens:
            assert f"{tokens:,}" in table.stdout
    models = _run(["models"], columns).stdout
    for preset in _run(["models", "--format", "json"]).json()["models"]:
        assert re.search(rf"│ {re.escape(preset['name'])} ", models), preset["name"]
    devices = _run(["devices"], columns).stdout
    for device in _run(["devices", "--format", "json"]).json()["devices"]:
        assert re.search(rf"│ {re.escape(device['id'])} ", devices), device["id"]


def test_columns_is_honoured_and_optional_columns_give_way_first() -> None:
    args = ["placement", "examples/dense-70b.yaml", "--device", "h100", "--count", "8"]
    args[1] = str(ROOT / args[1])
    wide = _run(args, 160)
    assert "time†" in wide.stdout and "reserve*" in wide.stdout
    narrow = _run(args, 80)
    header = next(line for line in narrow.stdout.splitlines() if "┃ plan" in line)
    assert "time†" not in header and "left out to fit 80 columns: time†" in narrow.stdout
    assert "† time to first token" not in narrow.stdout  # its footnote goes with it
    for line in narrow.stdout.splitlines():
        assert len(line) <= 80, line


def test_without_columns_a_pipe_gets_a_width_that_fits_the_table() -> None:
    """Rich would fall back to 80 columns for a pipe; the table decides instead."""
    args = [str(ROOT / "examples/dense-70b.yaml"), "--device", "h100", "--count", "8"]
    run = _run(["placement", *args], None)
    assert run.code == 0, run.stderr
    assert "time†" in run.stdout and "left out" not in run.stdout
    assert max(len(line) for line in run.stdout.splitlines()) > 80


def test_names_print_as_written_with_markup_off(tmp_path: Path) -> None:
    """Rich markup would swallow `[bold]` and `[/bold]` from a model's name."""
    text = (ROOT / "examples" / "dense-70b.yaml").read_text()
    odd = tmp_path / "odd.yaml"
    odd.write_text(re.sub(r"(?m)^name: .*$", 'name: "x[bold]y[/bold]"', text))
    run = _run(["compare", str(odd), str(ROOT / "examples" / "moe-8x7b.yaml")], 120)
    assert run.code == 0, run.stderr
    assert "x[bold]y[/bold]" in run.stdout
    inventory = _run(["inventory", str(odd)], 120)
    assert inventory.stdout.startswith("x[bold]y[/bold] · dense")


def test_compare_starts_with_what_is_compared_and_how() -> None:
    run = _run(["compare", "llama-3.1-8b", "mixtral-8x7b", "--context", "32K",
                "--kv-dtype", "fp8"], 120)
    first = " ".join(run.stdout.split("\n┏")[0].split())
    assert first.startswith("2 topologies side by side, each at 32,768 positions per "
                            "sequence, a 1,000-token prompt")
    assert "decode batch 1" in first and "KV at fp8" in first
    assert "weights as each model stores them" in first


# --- warnings: stderr beside a table, inside the document for JSON and YAML ---------------


def _dense_placement(fmt: str) -> Run:
    return _run(["placement", str(ROOT / "examples/dense-70b.yaml"), "--device", "h100",
                 "--count", "8", "--limit", "6", "--sort", "devices", "--format", fmt], 120)


def test_plan_warnings_go_to_stderr_beside_a_table() -> None:
    run = _dense_placement("table")
    assert run.code == 0
    assert "warning" not in run.stdout
    assert "uneven pipeline stages: 27/27/26 layers" in run.stderr
    assert all(line.startswith("inventory: warning: plan ") for line in
               run.stderr.splitlines())


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_plan_warnings_stay_in_the_document(fmt: str) -> None:
    run = _dense_placement(fmt)
    assert run.code == 0
    assert run.stderr == ""
    if fmt == "json":
        data = json.loads(run.stdout)
    else:
        import yaml

        data = yaml.safe_load(run.stdout)
    warnings = [w for plan in data["plans"] for w in plan["warnings"]]
    assert any("27/27/26" in w for w in warnings)


def test_a_context_past_the_positions_warns_on_stderr() -> None:
    table = _run(["inventory", "qwen3-8b", "--context", "128K"], 120)
    assert table.code == 0
    assert "exceeds the model's 40,960 positions" in table.stderr
    assert "exceeds" not in table.stdout
    document = _run(["inventory", "qwen3-8b", "--context", "128K", "--format", "json"])
    assert document.stderr == ""
    assert any("40,960 positions" in w for w in document.json()["warnings"])
    compare = _run(["compare", "qwen3-8b", "llama-3.1-8b", "--context", "128K"], 120)
    assert compare.stderr == ("inventory: warning: qwen3-8b: the context of 131,072 tokens "
                              "exceeds the model's 40,960 positions; vLLM refuses it unless "
                              "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (and quality past it is not "
                              "assured)\n")
    assert "exceeds" not in compare.stdout
    placement = _run(["placement", "qwen3-8b", "--device", "h100", "--context", "128K"], 120)
    assert "exceeds the model's 40,960 positions" in placement.stderr
    assert "exceeds" not in placement.stdout


@pytest.mark.parametrize("model", ["deepseek-v3", "flux-dev", "bge-large", "mixtral-8x7b",
                                   "qwen2.5-vl-7b", "whisper-large-v3", "jamba-v0.1",
                                   "gpt-oss-120b", "gemma-2-9b", "llama-4-scout"])
def test_the_inventory_fits_80_columns(model: str) -> None:
    """Every table of the main job within 80 columns (they were 82 to 121 wide): exact
    totals on a line of their own, two-line headers, labels and prose that wrap, and the
    GEMMs' copy counts giving way (the table says so)."""
    args = ["inventory", model, "--device", "h100", "--context", "128K"]
    lines = _run(args, 80).stdout.splitlines()
    wide = [line for line in lines if len(line) > 80]
    assert not wide, f"{model} wider than 80 columns:\n" + "\n".join(wide)
    if model == "deepseek-v3":  # the widest GEMM names: its copy counts give way
        assert "left out to fit 80 columns: copies" in " ".join(lines)
        assert "┃ copies ┃" in _run(args, 200).stdout


def test_the_preset_list_fits_80_columns() -> None:
    """Name, family, parameters and weights at 80 columns (the list was 111 wide); KV per
    token and the rest come back on a wider screen, and its footnote goes with it."""
    narrow = _run(["models"], 80).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "left out to fit 80 columns: source, active, KV / token" in narrow
    assert "+ fixed" not in narrow
    assert re.search(r"│ kimi-k2\.5 +│ vlm +│ +1\.03 T │ +554 GiB int4 │", narrow)
    assert re.search(r"│ whisper-large-v3 +│ enc-dec +│", narrow)
    wide = _run(["models"], 200).stdout
    assert "KV / token" in wide and "+ fixed" in wide and "left out" not in wide


@pytest.mark.parametrize("command", ["kv --layers 80 --tokens 8000 --tp 16",
                                     "kv --model gemma-2-9b --tokens 32K --block-size 16",
                                     "kv --model jamba-v0.1 --sequences 4"])
def test_state_tables_fit_80_columns(command: str) -> None:
    """Row labels wrap (the TP row's label once held the table at 81 columns)."""
    lines = _run(command.split(), 80).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)


def test_the_width_table_fits_80_columns() -> None:
    """Two-line headers keep the TP-width table within 80 columns (it was 86 wide)."""
    args = ["placement", "deepseek-v3", "--device", "h200", "--count", "16", "--context", "32K"]
    lines = _run(args, 80).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    stop = next(i for i, line in enumerate(lines) if i > start and line.startswith("└"))
    assert max(len(line) for line in lines[start:stop + 1]) <= 80


@pytest.mark.parametrize("command", [
    "route --experts 8 --top-k 2 --tokens 16 --seed 40603 --ep 4 --steps 200",
    "route --model deepseek-v3 --tokens 64 --steps 200 --ep 8",
])
def test_routing_tables_fit_80_columns(command: str) -> None:
    """Two-line traffic headers and wrapping labels (the per-rank table was 96 wide)."""
    lines = _run(command.split(), 80).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)


@pytest.mark.parametrize("device", ["h100-sxm", "b200", "mi300x"])
def test_a_devices_figures_fit_80_columns(device: str) -> None:
    """The figure labels wrap (one line held the table at 81 columns)."""
    lines = _run(["devices", device], 80).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
