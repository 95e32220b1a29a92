"""Gemma 4's assistant drafter (transformers 5.25 `models/gemma4_assistant`), held to what
transformers builds.

tests/data/oracle-2026-gemma4a.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-gemma4a/ (index.json there says where each came from). For every
entry the importer's count equals transformers' to the parameter and is labelled exact; the
drafter caches nothing of its own (its layers read the target's K and V); and a text config
transformers refuses for an assistant is refused naming the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.conftest import Invoke
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-gemma4a.json"
FOLDER = DATA / "configs-2026-gemma4a"
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
E2B = FOLDER / "constructed--gemma4_assistant-e2b.json"


def _spec(entry: dict[str, Any]) -> ModelSpec:
    name = str(entry["file"])
    return from_hf_config(json.loads((FOLDER / name).read_text()), name)


def test_the_set_covers_its_type_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, {"gemma4_assistant"})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_equals_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_it_caches_nothing_of_its_own(entry: dict[str, Any]) -> None:
    # transformers' forward needs the target's K and V: the reference records no cache
    assert entry["cache_source"] is None
    assert any("shared_kv_states" in error for error in entry["cache_error"])
    layers = state_layers(_spec(entry))
    assert [layer.kind for layer in layers] == ["shared"]
    assert sum(layer.count for layer in layers) == len(entry["layer_types"])
    assert entry["num_kv_shared_layers"] == len(entry["layer_types"])
    assert all(layer.kv_heads == 0 and layer.state_elements == 0 for layer in layers)


def test_the_centroid_head_is_counted_only_when_ordered() -> None:
    raw = json.loads(E2B.read_text())
    ordered = from_hf_config(raw, E2B.name)
    dense = from_hf_config({**raw, "use_ordered_embeddings": False}, E2B.name)
    names = {t.name for t in ordered.decoder.extra} - {t.name for t in dense.decoder.extra}
    assert names == {"masked_embedding.centroids.weight"}


@pytest.mark.parametrize(("key", "value"), [
    ("hidden_size_per_layer_input", 256), ("vocab_size_per_layer_input", 262144),
    ("enable_moe_block", True), ("use_double_wide_mlp", True), ("num_kv_shared_layers", 2),
])
def test_what_transformers_refuses_is_refused_naming_the_key(key: str, value: object,
                                                             invoke: Invoke,
                                                             tmp_path: Path) -> None:
    raw = json.loads(E2B.read_text())
    raw["text_config"][key] = value
    with pytest.raises(InputError, match=key):
        from_hf_config(raw, E2B.name)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    run = invoke("placement", str(path), "-d", "h100", "-n", "1")
    assert run.code == 2 and key in run.stderr and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_stateless_model_has_no_context_to_fit(invoke: Invoke) -> None:
    plan = invoke("placement", str(E2B), "-d", "h100", "-n", "1", "--format", "json").json()
    first = plan["plans"][0]
    assert first["fits"] and first["fits_context"] is None and first["longest_context"] is None
