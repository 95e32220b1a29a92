"""Gemma 4 Unified (transformers 5.25 `models/gemma4_unified`), held to what transformers
builds.

tests/data/oracle-2026-gemma4u.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-gemma4u/ (index.json there says where each came from). For every
entry the importer's count equals transformers' to the parameter and is labelled exact, the
K/V it caches per token matches layer for layer (the KV-shared layers cache nothing), and
the layers it windows are the ones transformers gives a sliding-window cache.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.conftest import Invoke
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-gemma4u.json"
FOLDER = DATA / "configs-2026-gemma4u"
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
# The drafter's forward needs the target's K and V: transformers records no cache for it.
DRAFTERS = [e for e in ENTRIES if e["model_type"] == "gemma4_unified_assistant"]
CACHED = [e for e in ENTRIES if e not in DRAFTERS]


def _spec(entry: dict[str, Any]) -> ModelSpec:
    name = str(entry["file"])
    return from_hf_config(json.loads((FOLDER / name).read_text()), name)


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, {"gemma4_unified", "gemma4_unified_text",
                                          "gemma4_unified_assistant"})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_equals_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", CACHED, ids=lambda e: e["file"])
def test_cache_per_token_and_sliding_layers_equal_transformers(entry: dict[str, Any]) -> None:
    layers = [layer for layer in state_layers(_spec(entry)) for _ in range(layer.count)]
    per_layer = Counter(layer.elements_per_token() for layer in layers)
    assert dict(per_layer) == {int(k): v for k, v in
                               entry["kv_elems_per_token_per_layer"].items()}
    assert sum(layer.window is not None for layer in layers) == entry["sliding_window_layers"]


def test_the_towers_are_projections_alone() -> None:
    entry = next(e for e in ENTRIES if e["file"] == "constructed--gemma4_unified-small-towers.json")
    spec = _spec(entry)
    assert spec.encoder is not None and spec.encoder.stack is None
    assert [e.kind for e in (spec.encoder, *spec.extra_encoders)] == ["vision", "audio"]
    assert any("encoder-free" in note for note in spec.notes)


@pytest.mark.parametrize("entry", DRAFTERS, ids=lambda e: e["file"])
def test_the_drafter_caches_nothing_of_its_own(entry: dict[str, Any]) -> None:
    assert entry["cache_source"] is None
    assert any("shared_kv_states" in error for error in entry["cache_error"])
    layers = state_layers(_spec(entry))
    assert [layer.kind for layer in layers] == ["shared"]
    assert all(layer.elements_per_token() == 0 for layer in layers)


def test_an_image_is_budgeted_as_the_processor_caps_it(invoke: Invoke) -> None:
    # Gemma4UnifiedImageProcessor.max_soft_tokens (280): placement needs no image size
    entry = next(e for e in ENTRIES if e["file"] == "constructed--gemma4_unified-small-towers.json")
    encoder = _spec(entry).encoder
    assert encoder is not None and encoder.media.token_budget == 280
    run = invoke("placement", str(FOLDER / entry["file"]), "-d", "h100", "-n", "1",
                 "--format", "json")
    assert run.code == 0 and run.json()["plans"][0]["fits"]
