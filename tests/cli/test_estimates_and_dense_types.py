"""Through the command line: every dense 2026 type runs kv, inventory, placement and compare;
an unmodelled architecture is estimated, labelled, warned about once, refused by --strict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoint.synthetic import write_config, write_safetensors
from tests.conftest import Invoke
from tests.reference import DATA

# One config of each type (a real file where one exists).
CONFIGS = [
    "configs-2026/EXAONE-4.0-32B.json", "configs-2026/OLMo-2-1124-7B.json",
    "configs-2026/Olmo-3.1-32B-Instruct.json", "configs-2026-more/CohereForAI--aya-23-8B.json",
    "transformers-defaults-2026/cohere2.json", "configs-2026/SmolLM3-3B.json",
    "transformers-defaults-2026/seed_oss.json", "transformers-defaults-2026/apertus.json",
    "configs-2026/Llama-3_3-Nemotron-Super-49B-v1.json",
    "configs-2026-dense/microsoft--Phi-4-mini-instruct.json", "configs-2026/gpt2.json",
    "configs-2026-more/togethercomputer--RedPajama-INCITE-Chat-3B-v1.json",
    "configs-2026/gpt_bigcode-santacoder.json", "configs-2026/starcoder2-7b.json",
    "configs-2026-more/EleutherAI--gpt-j-6b.json", "transformers-defaults-2026/bloom.json",
    "transformers-defaults-2026/opt.json", "transformers-defaults-2026/modernbert.json",
    "transformers-defaults-2026/t5.json", "configs-2026-dense/t5--untied-gated.json",
]
ENCODER_ONLY = {"transformers-defaults-2026/modernbert.json"}
# Files with keys the importer does not read (tests/spec/test_exactness.py): estimates.
ESTIMATED = {"transformers-defaults-2026/modernbert.json",
             "configs-2026-dense/microsoft--Phi-4-mini-instruct.json"}


@pytest.mark.parametrize("name", CONFIGS)
def test_every_command_runs(invoke: Invoke, name: str) -> None:
    path = str(DATA / name)
    inv = invoke("inventory", path, "-f", "json")
    assert inv.code == 0, inv.stderr
    exact = name not in ESTIMATED
    assert inv.json()["exact"] is exact
    placed = invoke("placement", path, "--device", "h100-sxm", "--count", "8", "-f", "json")
    assert placed.code == 0, placed.stderr
    assert placed.json()["exact"] is exact
    compared = invoke("compare", path, str(DATA / "configs-2026/gpt2.json"), "-f", "json")
    assert compared.code == 0, compared.stderr
    kv = invoke("kv", "--model", path, "--tokens", "4096", "-f", "json")
    if name in ENCODER_ONLY:
        assert kv.code == 2 and "no decode loop" in kv.stderr
    else:
        assert kv.code == 0, kv.stderr
        assert kv.json()["bytes_per_token"] > 0 and kv.json()["exact"] is exact


UNKNOWN: dict[str, Any] = {
    "model_type": "frobnicator", "architectures": ["FrobnicatorForCausalLM"],
    "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
}
NEEDLE = "estimated: architecture frobnicator is not modelled"


@pytest.fixture
def unknown(tmp_path: Path) -> Path:
    path = tmp_path / "frob.json"
    path.write_text(json.dumps(UNKNOWN))
    return path


def _commands(model: str) -> list[list[str]]:
    return [["kv", "--model", model, "--tokens", "1000"], ["inventory", model],
            ["placement", model, "--device", "h100-sxm", "--count", "1"],
            ["compare", model, "llama-3.1-8b"], ["models", model]]


@pytest.mark.parametrize("index", range(5))
def test_an_unknown_architecture_is_labelled_and_warned_once(invoke: Invoke, unknown: Path,
                                                             index: int) -> None:
    command = _commands(str(unknown))[index]
    table = invoke(*command)
    assert table.code == 0, table.stderr
    assert NEEDLE in " ".join(table.stdout.split())
    warnings = [line for line in table.stderr.splitlines() if NEEDLE in line]
    assert len(warnings) == 1 and warnings[0].startswith("inventory: warning: ")
    data = invoke(*command, "-f", "json").json()
    results = data if isinstance(data, list) else [data]
    assert results[0]["exact"] is False and NEEDLE in results[0]["estimated"]
    assert all(r["exact"] for r in results[1:])  # compare: the preset beside it is exact


@pytest.mark.parametrize("index", range(3))
def test_an_estimate_is_never_labelled_exact(invoke: Invoke, unknown: Path, index: int) -> None:
    """Every trust group a generic estimate feeds says `estimate`, with the reason."""
    data = invoke(*_commands(str(unknown))[index], "-f", "json").json()
    derived = {"kv": ["state"], "inventory": ["parameters", "state", "shapes",
                                              "communication"],
               "placement": ["weights", "state"]}[_commands("m")[index][0]]
    for group in derived:
        assert data["trust"][group]["kind"] == "estimate", group
        assert NEEDLE in data["trust"][group]["basis"]
    assert "exact" not in {t["kind"] for t in data["trust"].values()}


def test_an_exact_model_keeps_exact_trust(invoke: Invoke) -> None:
    data = invoke("kv", "--model", "llama-3.1-8b", "--tokens", "1000", "-f", "json").json()
    assert data["trust"] == {"state": {"kind": "exact", "band": None, "basis":
                                       "bytes per token, as each layer kind keeps them"}}


@pytest.mark.parametrize("where", ["root", "after"])
def test_strict_refuses_the_estimate(invoke: Invoke, unknown: Path, where: str) -> None:
    for command in _commands(str(unknown)):
        args = ["--strict", *command] if where == "root" else [*command, "--strict"]
        run = invoke(*args)
        assert run.code == 2, (command, run.stderr)
        assert run.stdout == ""
        lines = run.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("inventory: error: ")
        assert NEEDLE in lines[0] and "--strict" in lines[0]


def test_strict_leaves_exact_models_alone(invoke: Invoke) -> None:
    assert invoke("--strict", "inventory", str(DATA / "configs-2026/gpt2.json")).code == 0


def test_headers_keep_the_weights_exact(invoke: Invoke, tmp_path: Path) -> None:
    """A folder with the checkpoint's safetensors: weights from the headers, said so."""
    write_config(tmp_path, UNKNOWN)
    h, kv, ff, v = 256, 2 * 64, 512, 1000
    tensors: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": ("BF16", [v, h]), "lm_head.weight": ("BF16", [v, h]),
        "model.norm.weight": ("BF16", [h])}
    for i in range(4):
        p = f"model.layers.{i}."
        tensors |= {p + "self_attn.q_proj.weight": ("BF16", [h, h]),
                    p + "self_attn.k_proj.weight": ("BF16", [kv, h]),
                    p + "self_attn.v_proj.weight": ("BF16", [kv, h]),
                    p + "self_attn.o_proj.weight": ("BF16", [h, h]),
                    # A tensor the generic reading knows nothing of: the headers count it.
                    p + "self_attn.frob_gate.weight": ("BF16", [h]),
                    p + "mlp.gate_proj.weight": ("BF16", [ff, h]),
                    p + "mlp.up_proj.weight": ("BF16", [ff, h]),
                    p + "mlp.down_proj.weight": ("BF16", [h, ff]),
                    p + "input_layernorm.weight": ("BF16", [h]),
                    p + "post_attention_layernorm.weight": ("BF16", [h])}
    stored = write_safetensors(tmp_path / "model.safetensors", tensors)
    run = invoke("inventory", str(tmp_path), "-f", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["exact"] is False
    assert data["weight_bytes"] == stored
    assert data["weight_bytes_source"] == "checkpoint headers"
    weights = invoke("placement", str(tmp_path), "--device", "h100-sxm", "--count", "1",
                     "-f", "json").json()["trust"]["weights"]
    assert weights["kind"] == "exact" and "checkpoint" in weights["basis"]
    assert f"its weights are exact: {stored:,} B read from the checkpoint's safetensors " \
        "headers" in data["estimated"]
    table = invoke("inventory", str(tmp_path))
    assert "its weights are exact" in " ".join(table.stdout.split())


@pytest.mark.parametrize("args", [
    ["route", "--model", "{}", "--steps", "10"],
    ["placement", "{}", "--device", "h100", "--count", "4", "--tp", "8"],
    ["kv", "--model", "{}", "--tokens", "2G"],
])
def test_bad_input_about_an_estimated_model_is_still_one_line(invoke: Invoke, unknown: Path,
                                                              args: list[str]) -> None:
    """The estimate's warning waits for the result: bad input found after the model is
    loaded stays one line on stderr."""
    run = invoke(*[str(unknown) if a == "{}" else a for a in args])
    assert run.code == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("inventory: error: "), lines


def test_a_failed_check_keeps_the_estimates_warning(invoke: Invoke, unknown: Path) -> None:
    run = invoke("kv", "--model", str(unknown), "--tokens", "1000", "--max-bytes", "1")
    assert run.code == 1
    assert any(NEEDLE in line for line in run.stderr.splitlines())
