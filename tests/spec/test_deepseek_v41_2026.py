"""DeepSeek-V4.1 (deepseek_v41, deepseek_v41_text), held to what transformers main builds.

tests/data/oracle-2026-deepseek-v41.json holds the figures `tools/deepseek_v41_reference.py`
read from transformers main's deepseek_v41 classes (commit 0a2080b4, loaded into
transformers 5.25.0, torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-deepseek-v41/ (index.json there says where each came from). For
every entry the importer's count must equal transformers' to the parameter (total, active,
embedding and head), each layer's window and its compressed state must be the cache
transformers allocated (`DynamicSlidingWindowLayer` for the window-only layers,
`DeepseekV41CSACache` for the KV sources), and the count must be labelled exact.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_parts, check_reference_set

ORACLE = DATA / "oracle-2026-deepseek-v41.json"
FOLDER = DATA / "configs-2026-deepseek-v41"
TYPES = {"deepseek_v41", "deepseek_v41_text"}
FLASH = "sfxnz--TensorFold--DeepSeek-V4.1-Flash--without-quantization.json"
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
COMMIT = "0a2080b43eb64e6d448186a4f3f0bc9c618f4797"


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads((FOLDER / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def _entry(name: str) -> dict[str, Any]:
    return next(e for e in ENTRIES if e["file"] == name)


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, TYPES)
    assert {e["file"] for e in ENTRIES} == {p.name for p in FOLDER.glob("*.json")} - {
        "index.json"}
    for e in ENTRIES:
        assert "cache_error" not in e, e["file"]
        source = e["versions"]["deepseek_v41_source"]
        assert source["repository"] == "huggingface/transformers"
        assert source["commit"] == COMMIT


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    spec = _spec(entry)
    check_parts(spec, entry)
    assert count_parameters(spec).parameters_per_expert == entry["params_per_routed_expert"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_each_layer_keeps_the_cache_transformers_allocates(entry: dict[str, Any]) -> None:
    """The window: one K = V vector of head_dim per token on every layer (transformers'
    plain sliding layers store it as keys and again as values, its KV-source cache once);
    the KV sources are the layers transformers gives a DeepseekV41CSACache."""
    spec = _spec(entry)
    layers = [layer for layer in state_layers(spec) for _ in range(layer.count)]
    assert [layer.kind == "csa2_source" for layer in layers] == [
        t == "shared_compressed_attention" for t in entry["layer_types"]]
    counted = entry["kv_elems_per_token_by_layer"]
    for layer, elements in zip(layers, counted, strict=True):
        assert layer.window == entry["sliding_window"][0]
        assert elements == layer.latent_dim * (1 if layer.kind == "csa2_source" else 2)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_compressed_entries_and_indexer_keys_grow_as_transformers_measured(
        entry: dict[str, Any]) -> None:
    """Between 1,024 and 2,048 tokens each KV source grows head_dim ÷ ratio elements per
    token (`compressed_kv["compressor"]`) and, on an index source, index_head_dim ÷ ratio
    (`compressed_kv["indexer"]`); nothing else grows (the windows and the partial group are
    bounded)."""
    spec = _spec(entry)
    layers = [layer for layer in state_layers(spec) for _ in range(layer.count)]
    expected: Counter[tuple[str, int]] = Counter()
    for layer in layers:
        if layer.kind == "csa2_source":
            ratio = layer.ratio or 1
            expected["compressed_kv[compressor]", layer.latent_dim // ratio] += 1
            if layer.index_dim:
                expected["compressed_kv[indexer]", layer.index_dim // ratio] += 1
    measured: Counter[tuple[str, int]] = Counter()
    for row in entry["long_run"]["per_token"]:
        assert row["cache_layer"] == "DeepseekV41CSACache"
        measured[row["tensor"], row["elems_per_token"]] += row["layers"]
    assert measured == expected
    assert sum(kinds.get(layer.kind).elements_per_token(layer) for layer in layers) == sum(
        n * count for (_, n), count in measured.items())


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_partial_groups_are_fixed_fp32_state(entry: dict[str, Any]) -> None:
    """A source whose ratio pools buffers its partial group's latents and gate logits in
    fp32 (`buffer_kv`, `buffer_gate`, head_dim each), fixed per sequence; ratio 1 buffers
    nothing."""
    spec = _spec(entry)
    pooled = [layer for layer in state_layers(spec)
              if layer.kind == "csa2_source" and (layer.ratio or 1) > 1]
    bounded = [row for row in entry["long_run"]["not_growing"]
               if row["tensor"].startswith("buffer_")]
    assert {row["dtype"] for row in bounded} == {"float32"}
    assert sum(row["layers"] for row in bounded) == 2 * len(pooled)
    for layer in pooled:
        assert layer.state_elements == 2 * ((layer.ratio or 1) - 1) * layer.latent_dim


def test_defaults_state_bytes_per_sequence() -> None:
    """The class defaults at bf16 and 131,072 tokens: 40 windows of 128 entries of 512
    elements; three ratio-2 sources keep 65,536 entries of 512 + 128 elements and the
    ratio-1 source 131,072; each ratio-2 source buffers one token's latent and gate in fp32."""
    spec = _spec(_entry("transformers-defaults--deepseek_v41_text.json"))
    tokens = 131_072
    total = 0
    for layer in state_layers(spec):
        kind = kinds.get(layer.kind)
        total += layer.count * kind.sequence_bytes(layer, tokens, "bf16", None)
    windows = 40 * 128 * 512 * 2
    compressed = (3 * tokens // 2 + tokens) * (512 + 128) * 2
    buffers = 3 * 2 * 1 * 512 * 4
    assert total == windows + compressed + buffers


def test_constructed_layers_carry_their_own_parts() -> None:
    """Layer 1 is a ratio-4 KV source without an indexer (no wk, no indexer keys), layer 4 a
    ratio-1 source (no gate), layer 5 a Reindex source (an indexer query, no key
    projection), layer 8 a ratio-2 source with its indexer; Engram tables on layers 0 and 5
    of 5,000 and 7,001 rows."""
    spec = _spec(_entry("constructed--deepseek_v41_text-small.json"))
    where: dict[str, set[int]] = {}
    for group in model_tensors(spec):
        name = group.name.split("{i}.")[-1] if "{i}" in group.name else group.name
        where.setdefault(name, set()).update(group.layers)
    assert where["attn.compressor.wkv.weight"] == {1, 4, 8}
    assert where["attn.compressor.wgate.weight"] == {1, 8}
    assert where["attn.indexer.wq_b.weight"] == {4, 5, 8}
    assert where["attn.indexer.wk.weight"] == {4, 8}
    rows = {}
    for group in model_tensors(spec):
        if ".engram.embed.weight" in group.name:
            layer = group.layers[0]
            rows[layer] = rows.get(layer, 0) + group.elements // 64
    assert rows == {0: 5_000, 5: 7_001}
    assert any("declares no tied weights" in note for note in spec.notes)


def test_notes_say_what_is_left_out_and_that_no_engine_pages_it() -> None:
    spec = _spec(_entry("transformers-defaults--deepseek_v41_text.json"))
    text = " ".join(spec.notes)
    assert "3 DSpark draft layer(s)" in text and "leaves them out" in text
    assert "no deepseek_v41" in text and "TensorRT-LLM" in text


def _text(**changes: Any) -> dict[str, Any]:
    return _config(_entry("constructed--deepseek_v41_text-small.json")) | changes


@pytest.mark.parametrize("changes,key", [
    ({"compress_ratios": [0, 4, 4]}, "compress_ratios"),
    ({"compress_ratios": [0] * 11}, "compress_ratios"),
    ({"kv_source_layer_ids": [0, 4, 8]}, "kv_source_layer_ids"),
    ({"kv_source_layer_ids": [4, 8]}, "kv_source_layer_ids"),
    ({"index_source_layer_ids": [0]}, "index_source_layer_ids"),
    ({"candidate_source_layer_id": 1}, "candidate_source_layer_id"),
    ({"engram_num_embeddings": [5000]}, "engram_num_embeddings"),
    ({"engram_layer_ids": [0, 9]}, "engram_layer_ids"),
    ({"qk_rope_head_dim": 128}, "qk_rope_head_dim"),
])
def test_malformed_schedules_are_refused_by_name(changes: dict[str, Any], key: str) -> None:
    with pytest.raises(InputError, match=key):
        from_hf_config(_text(**changes), "bad")


def test_default_schedule_scales_with_the_layer_count() -> None:
    """Without compress_ratios, a model of other than 40 layers takes two sliding-only
    layers, (n − 1) ÷ 2 ratio-2 layers and ratio 1 for the rest; each run's first layer is
    its KV source and also its index source (DeepseekV41TextConfig.__post_init__)."""
    data = {k: v for k, v in _text(num_hidden_layers=7).items() if not k.startswith(
        ("compress_ratios", "kv_source", "index_source", "candidate", "engram"))}
    spec = from_hf_config(data, "seven")
    assert spec.decoder is not None
    assert spec.decoder.kinds() == ["csa2", "csa2", "csa2_source", "csa2", "csa2",
                                    "csa2_source", "csa2"]
    assert [spec.decoder.at(i).compress_ratio for i in range(7)] == [None, None, 2, 2, 2, 1, 1]
    assert [i for i in range(7) if not spec.decoder.at(i).shares_indexer] == [2, 5]


# --- the composite and the released config ---------------------------------------------------

def test_the_released_copy_is_the_fixture_without_its_exl3_quantization() -> None:
    """The fixture's text and vision configs are kept as found; only its quantization block,
    an EXL3 2-bit repack's, is left out (the reference drops it too, and the importer
    refuses exl3 by name)."""
    verbatim = json.loads((FOLDER / "verbatim" / "sfxnz--TensorFold--DeepSeek-V4.1-Flash.json")
                          .read_text())
    assert verbatim["quantization_config"]["quant_method"] == "exl3"
    assert {k: v for k, v in verbatim.items() if k != "quantization_config"} == _config(
        _entry(FLASH))
    with pytest.raises(InputError, match="quantization_config.quant_method: unsupported 'exl3'"):
        from_hf_config(verbatim, "flash")


def test_flash_engram_tables_are_the_196_billion_the_docstring_names() -> None:
    """Two tables of 384,006,168 and 384,016,682 rows of 256 (196.6 B parameters, the
    config docstring's "~196B of 763B"), plus one scale per 32 channels of each row, which
    transformers also holds as a parameter; counted on layers 1 and 14."""
    spec = _spec(_entry(FLASH))
    rows = 384_006_168 + 384_016_682
    tables = {g.layers: 0 for g in model_tensors(spec) if ".engram.embed." in g.name}
    for group in model_tensors(spec):
        if ".engram.embed." in group.name:
            tables[group.layers] += group.parameters
    assert sum(tables.values()) == rows * 256 + rows * 8
    assert set(tables) == {(1,), (14,)}
    assert round(rows * 256 / 1e9, 1) == 196.6
    assert any("pinned host memory" in note for note in spec.notes)


def test_flash_windows_and_groups() -> None:
    """The released schedule: KV sources 2, 8, 14 at ratio 2 and 20 at ratio 1; index
    sources 2, 8, 14, 20 and the Reindex layers 24, 28, 32, 36; per token at bf16 the four
    sources add (512 + 128) × 2 ÷ 2 bytes three times and (512 + 128) × 2 once."""
    spec = _spec(_entry(FLASH))
    assert spec.decoder is not None
    assert [i for i in range(40) if spec.decoder.kind_of(i) == "csa2_source"] == [2, 8, 14, 20]
    assert [i for i in range(40) if not spec.decoder.at(i).shares_indexer] == [
        2, 8, 14, 20, 24, 28, 32, 36]
    per_token = sum(layer.count * kinds.get(layer.kind).bytes_per_token(layer, "bf16")
                    for layer in state_layers(spec))
    assert per_token == 3 * 640 + 1280


def test_composite_builds_its_text_model_and_notes_the_tower_it_does_not() -> None:
    """DeepseekV41ForCausalLM builds the text_config's model, never ties its head (the
    constructed file sets tie_word_embeddings), and nothing of vision_config."""
    for name in (FLASH, "constructed--deepseek_v41-small.json"):
        entry = _entry(name)
        spec = _spec(entry)
        assert spec.encoder is None
        assert any("vision tower" in note and "leaves them out" in note
                   for note in spec.notes), name
        assert set(entry["components"]) == {"model.embed", "model.layers", "model.norm",
                                            "lm_head"}
    small = _entry("constructed--deepseek_v41-small.json")
    assert _config(small)["tie_word_embeddings"] is True
    assert small["tied_embeddings"] is False
    assert count_parameters(_spec(small)).lm_head == small["output_head_params"] > 0


def test_composite_defaults_are_the_text_defaults() -> None:
    """DeepseekV41Config() wraps DeepseekV41TextConfig(): the same model."""
    composite = count_parameters(_spec(_entry("transformers-defaults--deepseek_v41.json")))
    text = count_parameters(_spec(_entry("transformers-defaults--deepseek_v41_text.json")))
    assert composite.total == text.total and composite.active == text.active
