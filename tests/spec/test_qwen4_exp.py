"""Qwen4-Exp (Qwen3.8: qwen4_exp, qwen4_exp_text), held to what transformers 5.25 builds.

tests/data/oracle-2026-qwen4.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-qwen4/ (index.json there says where each came from). For every entry
the importer's count equals transformers' to the parameter (total and active), the K/V and
the QSA indexer key per token match on the same layers, and the Gated DeltaNet state has the
shapes transformers allocates. A file with PLE layers is exact in its parameters and labels
its state an estimate (the PLE layers' own state is not counted).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.hf.qwen4_exp import _primes_after
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-qwen4.json"
FOLDER = DATA / "configs-2026-qwen4"
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads((FOLDER / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def test_the_set_covers_both_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, {"qwen4_exp", "qwen4_exp_text"})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_kv_and_indexer_keys_per_token_equal_transformers(entry: dict[str, Any]) -> None:
    layers = [layer for layer in state_layers(_spec(entry)) for _ in range(layer.count)]
    latent = Counter(layer.elements_per_token() - layer.index_dim for layer in layers)
    assert dict(latent) == {int(k): v for k, v in
                            entry["kv_elems_per_token_per_layer"].items()}
    (keys,) = entry["other_per_token_state"]
    assert keys["tensor"] == "indexer_keys"
    assert Counter(layer.index_dim for layer in layers if layer.index_dim) == {
        keys["elems_per_token"]: keys["layers"]}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_gated_deltanet_state_has_the_shapes_transformers_allocates(
        entry: dict[str, Any]) -> None:
    """conv_states[0]: the same channels, kernel - 1 positions (vLLM's layout for Qwen3.5's
    layers, which engines allocate; transformers keeps all kernel positions);
    recurrent_states[0]: the same elements per layer, over the same layers. The state is in
    the model dtype, vLLM's mamba_ssm_cache_dtype "auto" (transformers keeps fp32)."""
    spec = _spec(entry)
    fixed = [layer for layer in state_layers(spec) if not layer.elements_per_token()]
    states = {s["tensor"]: s for s in entry["fixed_state_per_sequence"]}
    conv, recurrent = states["conv_states[0]"], states["recurrent_states[0]"]
    channels, kernel = conv["shape"][1:]
    holding = [f for f in fixed if f.conv_channels]
    assert {(f.conv_channels, f.conv_window) for f in holding} == {(channels, kernel - 1)}
    assert {f.conv_dtype or f.dtype for f in holding} == {_DTYPES[conv["dtype"]]}
    assert sum(f.count for f in holding) == conv["layers"]
    heads, k, v = recurrent["shape"][1:]
    holding = [f for f in fixed if f.state_elements]
    assert {f.state_elements for f in holding} == {heads * k * v}
    assert {f.dtype for f in holding} == {spec.dtype}
    assert sum(f.count for f in holding) == recurrent["layers"]
    # The PLE layers' own state (conv_states[1], [2]) is the part left out, and said so.
    assert ("conv_states[1]" in states) == (spec.state_estimated is not None)


def test_default_size_bytes_per_token() -> None:
    """The class-default text model with QSA at bf16: 10 attention layers of 2 KV heads ×
    256 × (K + V) = 1,024 elements plus a 128-element index key, 2 bytes each: 23,040
    bytes per token (transformers: kv_elems_per_token 10,240 plus 10 × 128 index keys)."""
    entry = next(e for e in ENTRIES if "defaults" in e["file"])
    layers = state_layers(_spec(entry))
    per_token = sum(layer.elements_per_token() * layer.count for layer in layers)
    assert per_token == entry["kv_elems_per_token"] + 10 * 128 == 11_520
    assert per_token * 2 == 23_040


def test_ngram_rows_are_the_primes_past_the_hash_base() -> None:
    """Head g of the model takes the g-th prime after ngram_vocab_size_base - 1
    (`_find_nth_prime_after`); the small PLE file's two layers of 4 heads each."""
    assert _primes_after(999, 8) == [1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049]
    assert _primes_after(19_999_999, 2) == [20_000_003, 20_000_023]


def test_attention_layers_without_the_indexer_keys_are_refused_by_name() -> None:
    entry = next(e for e in ENTRIES if e["file"] == "constructed--qwen4_exp_text-small.json")
    config = _config(entry)
    del config["indexer_budget"]
    with pytest.raises(InputError, match="indexer_budget"):
        from_hf_config(config, "no-budget")


def test_ple_on_an_attention_layer_is_refused() -> None:
    entry = next(e for e in ENTRIES if e["file"] == "constructed--qwen4_exp_text-ple.json")
    with pytest.raises(InputError, match="ple_layer_ids"):
        from_hf_config(_config(entry) | {"ple_layer_ids": [2]}, "ple-on-attention")


@pytest.mark.parametrize("base", [1, 2**63, "20000000", True])
def test_a_hostile_hash_base_is_refused(base: object) -> None:
    entry = next(e for e in ENTRIES if e["file"] == "constructed--qwen4_exp_text-ple.json")
    with pytest.raises(InputError, match="ngram_vocab_size_base"):
        from_hf_config(_config(entry) | {"ngram_vocab_size_base": base}, "base")
