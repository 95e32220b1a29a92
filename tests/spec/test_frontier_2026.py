"""Model types of transformers 5.25, each held to what transformers itself builds.

tests/data/oracle-2026-frontier.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-frontier/ (index.json there says where each came from). For every
entry the importer's count must equal transformers' to the parameter (total and, for MoE,
active), its per-token cache must hold the same elements on the same number of layers, and
the count must be labelled exact (every key of the file read or reviewed as irrelevant).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-frontier.json"
FOLDER = DATA / "configs-2026-frontier"
# The model types this set stands for; each must keep at least one exact reference.
TYPES = {"gemma4_text", "hy_v3", "mistral4", "step3p5", "step3p7"}
# Bytes per element of the cache dtype transformers allocated.
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


def _entries() -> list[dict[str, Any]]:
    return list(json.loads(ORACLE.read_text()))


ENTRIES = _entries()


def _spec(entry: dict[str, Any]) -> ModelSpec:
    name = str(entry["file"])
    return from_hf_config(json.loads((FOLDER / name).read_text()), name)


def _kv(spec: ModelSpec) -> Counter[int]:
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        elements = layer.elements_per_token() - layer.index_dim
        if layer.kind != "cross" and elements:
            found[elements] += layer.count
    return found


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, TYPES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


# transformers' own cache cannot run on Step3p7TextConfig's bare defaults (their
# sliding_window is None: "Could not find a `sliding_window` argument"); the entry says so.
NO_CACHE_FIGURE = {"transformers-defaults--step3p5.json"}
CACHED = [e for e in ENTRIES if e["file"] not in NO_CACHE_FIGURE]


def test_only_the_listed_entries_lack_a_cache_figure() -> None:
    assert {e["file"] for e in ENTRIES if e.get("kv_elems_per_token_per_layer") is None} == (
        NO_CACHE_FIGURE)
    assert all(e["cache_error"] for e in ENTRIES if e["file"] in NO_CACHE_FIGURE)


@pytest.mark.parametrize("entry", CACHED, ids=lambda e: e["file"])
def test_cache_per_token_per_layer_equals_transformers(entry: dict[str, Any]) -> None:
    expected = entry["kv_elems_per_token_per_layer"]
    want = ({int(k): v for k, v in expected.items()} if isinstance(expected, dict)
            else {expected: entry["kv_layers_with_kv"]})
    assert dict(_kv(_spec(entry))) == want


def test_cache_bytes_per_token_by_layer_kind() -> None:
    """Bytes each token adds per layer, by kind, at the cache dtype transformers allocated
    (bf16): Mistral Small 4 caches MLA's latent and rope key (256 + 64 elements) on all 36
    layers; Gemma 4's text model K and V of 1 × 256 on its 25 sliding layers and 1 × 512 on
    its 5 global ones; Step-3.7-Flash K and V of 8 × 128 on its 33 sliding and 12 full
    layers (the sliding layers' 96 query heads share the same 8 KV heads); Hy3 K and V of
    8 × 128 on all 80 layers."""
    wanted = {"mistral4": {"mla": (36, 640)},
              "gemma4_text": {"sliding": (25, 4096), "full": (5, 8192)},
              "hy_v3": {"full": (80, 4096)},
              "step3p5": {"sliding": (33, 4096), "full": (12, 4096)},
              "step3p7": {"sliding": (33, 4096), "full": (12, 4096)}}
    for e in CACHED:
        width = DTYPE_BYTES[str(e["kv_dtype"])]
        kinds: dict[str, tuple[int, int]] = {}
        for layer in state_layers(_spec(e)):
            count, per = kinds.get(layer.kind, (0, layer.elements_per_token() * width))
            assert per == layer.elements_per_token() * width
            kinds[layer.kind] = (count + layer.count, per)
        assert kinds == wanted[e["model_type"]], e["file"]
        total = sum(count * per for count, per in kinds.values())
        # transformers' cache spans the language model only
        assert total == e["kv_elems_per_token"] * width, e["file"]
