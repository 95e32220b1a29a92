"""Model types transformers 5.25 added late, each held to what transformers itself builds.

tests/data/oracle-2026-late.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-late/ (index.json there says where each came from). For every entry
the importer's count must equal transformers' to the parameter (total and active), the
latent it caches per token must match on the same number of layers, the indexer keys on
the same layers, and the count must be labelled exact.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-late.json"
FOLDER = DATA / "configs-2026-late"
TYPES = {"hy_v4", "hy_v4_vl", "hy_v4_vl_text", "lfm2_vl", "mistral_large4",
         "mistral_large4_text"}
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads((FOLDER / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, TYPES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_cache_per_token_and_indexer_keys_equal_transformers(entry: dict[str, Any]) -> None:
    layers = [layer for layer in state_layers(_spec(entry)) for _ in range(layer.count)]
    # The key and value (or latent) each layer adds per token, the indexer key apart.
    latent = Counter(layer.elements_per_token() - layer.index_dim for layer in layers)
    expected = entry["kv_elems_per_token_per_layer"]
    assert dict(latent) == ({int(k): v for k, v in expected.items()} if isinstance(
        expected, dict) else {expected: entry["kv_layers_with_kv"]})
    if entry.get("other_per_token_state") is None:
        assert not any(layer.index_dim for layer in layers)
        return
    (keys,) = entry["other_per_token_state"]
    assert keys["tensor"] == "indexer_keys"
    assert Counter(layer.index_dim for layer in layers if layer.index_dim) == {
        keys["elems_per_token"]: keys["layers"]}


def test_mistral_large4_bytes_per_token_by_layer() -> None:
    """Mistral Large 4's defaults at bf16: 54 rope layers keep 512 + 64 latent elements
    and 18 NoPE layers (every fourth) 512, each with a 128-element indexer key: transformers'
    cache, 2 bytes each, is (54 × 704 + 18 × 640) × 2 = 99,072 bytes per token."""
    entry = next(e for e in ENTRIES if e["model_type"] == "mistral_large4")
    layers = state_layers(_spec(entry))
    per = Counter(layer.elements_per_token() for layer in layers for _ in range(layer.count))
    assert per == {704: 54, 640: 18}
    assert sum(k * v for k, v in per.items()) * 2 == 99_072
    assert {layer.kind for layer in layers} == {"indexed_mla"}
    total = entry["kv_elems_per_token"] + 72 * 128
    assert sum(k * v for k, v in per.items()) == total


def test_hy4_keeps_indexer_keys_on_its_full_indexer_layers_alone() -> None:
    """Hy4's defaults: 576 latent elements on all 34 layers, a 128-element indexer key on
    the 10 layers that run their own indexer (0 and every fourth from 1)."""
    entry = next(e for e in ENTRIES if e["file"] == "transformers-defaults--hy_v4.json")
    spec = _spec(entry)
    assert spec.decoder is not None
    layers = [layer for layer in state_layers(spec) for _ in range(layer.count)]
    assert [i for i in range(34) if not spec.decoder.at(i).shares_indexer] == [
        0, 1, 5, 9, 13, 17, 21, 25, 29, 33]
    assert Counter(layer.elements_per_token() for layer in layers) == {576: 24, 704: 10}


def test_layers_that_share_a_latent_are_refused_by_name() -> None:
    entry = next(e for e in ENTRIES if e["file"].startswith("constructed--mistral"))
    config = _config(entry) | {"kv_source_layers": [0, 0, 2, 3, 4, 5, 6, 7]}
    with pytest.raises(InputError, match="kv_source_layers"):
        from_hf_config(config, "shared")


def test_no_rope_layers_must_cover_every_layer() -> None:
    entry = next(e for e in ENTRIES if e["file"].startswith("constructed--mistral"))
    with pytest.raises(InputError, match="no_rope_layers"):
        from_hf_config(_config(entry) | {"no_rope_layers": [1, 0]}, "short")


# (height, width) → placeholder tokens by HYV4VLImageProcessor's smart_resize (sides rounded
# to whole 32-pixel merged patches, the area scaled into 512² … 2048², its class defaults)
# and HYV4VLProcessor._num_frame_tokens (merged rows × (merged columns + 1 newline)),
# transformers 5.25.0 models/hy_v4_vl, run on those sizes (the last five past the limits).
HY4_IMAGE_TOKENS = {(512, 512): 16 * 17, (768, 1024): 24 * 33, (1080, 1920): 34 * 61,
                    (2048, 2048): 64 * 65, (1000, 700): 31 * 23, (3000, 3000): 4160,
                    (2160, 4096): 4094, (200, 300): 294, (100, 100): 272, (4000, 600): 2500}

# (height, width) → the tokens an image occupies in LFM2-VL's context at the processor's
# defaults: Lfm2VlImageProcessor._get_split_layout, Lfm2VlProcessor._get_image_num_tokens
# and _build_image_tokens (image tokens plus start, end, tile and thumbnail markers),
# transformers 5.25.0 models/lfm2_vl, run on those sizes. 720 rounds to 704 (half to even)
# and stays one image; 724 rounds to 736, past twice 256 tokens' area, and is cut in tiles.
LFM2_IMAGE_TOKENS = {(512, 512): 258, (256, 256): 66, (100, 80): 74, (768, 1024): 1779,
                     (1080, 1920): 2311, (2048, 2048): 2572, (1000, 700): 1792,
                     (300, 4000): 2805, (724, 724): 1287, (725, 725): 1287, (4000, 300): 2805,
                     (64, 64): 66, (3000, 3000): 2572, (720, 720): 258, (752, 752): 1287,
                     (704, 704): 258, (33, 2000): 128}


@pytest.mark.parametrize(("model_type", "table", "note"), [
    ("hy_v4_vl", HY4_IMAGE_TOKENS, "512² … 2048² pixels"),
    ("lfm2_vl", LFM2_IMAGE_TOKENS, "preprocessor_config.json")])
def test_image_tokens_follow_the_processor(model_type: str, table: dict[tuple[int, int], int],
                                           note: str) -> None:
    from llm_inventory.engine.media import feature_tokens

    entry = next(e for e in ENTRIES if e["model_type"] == model_type)
    spec = _spec(entry)
    assert spec.encoder is not None
    for (height, width), tokens in table.items():
        got = feature_tokens(spec.encoder.media, width=width, height=height)
        assert got.feature_tokens == tokens, (height, width)
    assert any(note in n for n in spec.notes)
    if model_type == "lfm2_vl":  # no size given: one 512-pixel tile with its two markers
        assert feature_tokens(spec.encoder.media).feature_tokens == 258
