"""Meta's Muse models (transformers 5.25 `models/muse_spark`, `models/muse_glimmer`,
`models/muse_glimmer_assistant`), held to what transformers builds.

tests/data/oracle-2026-muse.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-muse/ (index.json there says where each came from). For every entry
the importer's count must equal transformers' to the parameter (total and active), the K/V
it caches per token must match on the same number of layers, the sliding layers must be the
ones transformers gives a sliding-window cache, and the count must be labelled exact.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import Component, ModelSpec
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-muse.json"
FOLDER = DATA / "configs-2026-muse"
TYPES = {"muse_glimmer", "muse_glimmer_assistant", "muse_glimmer_text", "muse_spark",
         "muse_spark_text"}
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads((FOLDER / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def _entry(file: str) -> dict[str, Any]:
    return next(e for e in ENTRIES if e["file"] == file)


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, TYPES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_cache_per_token_and_sliding_layers_equal_transformers(entry: dict[str, Any]) -> None:
    """The K/V every layer adds per token, and which layers transformers gives a
    sliding-window cache (DynamicSlidingWindowLayer) at the file's window."""
    spec = _spec(entry)
    layers = [layer for layer in state_layers(spec) for _ in range(layer.count)]
    assert Counter(layer.elements_per_token() for layer in layers) == {
        entry["kv_elems_per_token_per_layer"]: entry["kv_layers_with_kv"]}
    assert spec.decoder is not None
    kinds = spec.decoder.kinds()
    assert kinds.count("sliding") == entry["sliding_window_layers"]
    assert [k == "sliding" for k in kinds] == [
        t == "sliding_attention" for t in entry["layer_types"]]
    assert spec.decoder.sliding_window == entry["sliding_window"][0]


def test_spark_defaults_bytes_per_token() -> None:
    """Muse Spark's defaults at bf16: 16 KV heads of 64 on all 62 layers, K and V, 2 bytes
    each — 253,952 bytes per token; the 46 rotary layers hold at most 2,048 tokens."""
    entry = _entry("transformers-defaults--muse_spark.json")
    layers = state_layers(_spec(entry))
    per = Counter(layer.elements_per_token() for layer in layers for _ in range(layer.count))
    assert per == {2 * 16 * 64: 62}
    assert sum(k * v for k, v in per.items()) * 2 == 253_952
    assert entry["kv_elems_per_token"] * 2 == 253_952
    kinds = Counter(layer.kind for layer in layers for _ in range(layer.count))
    assert kinds == {"sliding": 46, "full": 16}


def test_spark_nope_layers_are_its_full_attention_layers() -> None:
    """The class defaults: every fourth layer counted back from the last (1, 5, …, 61) is
    full attention with no rotary; the constructed file moves both off that pattern."""
    spec = _spec(_entry("transformers-defaults--muse_spark.json"))
    assert spec.decoder is not None
    nope = [i for i in range(62) if not spec.decoder.at(i).rope]
    assert nope == list(range(1, 62, 4))
    assert [i for i in range(62) if spec.decoder.kind_of(i) == "full"] == nope
    small = _spec(_entry("constructed--muse_spark-small.json")).decoder
    assert small is not None
    assert [i for i in range(6) if not small.at(i).rope] == [0, 5]
    assert [i for i in range(6) if small.kind_of(i) == "full"] == [0, 3, 5]


def test_spark_parts_equal_transformers_modules() -> None:
    """Tower, adapter and projection, and the audio encoder, each against the module
    transformers built (`components` of the reference entry)."""
    for file in ("transformers-defaults--muse_spark.json", "constructed--muse_spark-small.json"):
        entry = _entry(file)
        parts = entry["components"]
        counted = count_parameters(_spec(entry))
        by = {c.component: c.parameters for c in counted.by_component}
        towers = parts["model.vision_tower"] + parts["model.audio_tower"]
        assert by[Component.ENCODER] == towers, file
        assert by[Component.PROJECTOR] == (parts["model.vision_adapter"]
                                           + parts["model.vision_projection"]), file
        assert counted.lm_head == parts["lm_head"], file


def test_spark_lm_head_is_never_tied() -> None:
    """MuseSparkForConditionalGeneration declares no tied weights: the constructed file sets
    tie_word_embeddings at both levels and transformers still builds a head of its own."""
    entry = _entry("constructed--muse_spark-small.json")
    assert _config(entry)["tie_word_embeddings"] is True
    assert entry["tied_embeddings"] is False
    assert count_parameters(_spec(entry)).lm_head == entry["output_head_params"] > 0


def test_spark_names_its_borrowed_paging_and_estimated_image_tokens() -> None:
    spec = _spec(_entry("transformers-defaults--muse_spark.json"))
    assert any("no serving engine" in note and "borrowed" in note for note in spec.notes)
    assert any(note.startswith("image tokens are an estimate") for note in spec.notes)


def _text(entry: str, **changes: Any) -> dict[str, Any]:
    data = _config(_entry(entry))
    return data | {"text_config": data["text_config"] | changes}


@pytest.mark.parametrize("changes,key", [
    ({"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types"),
    ({"mlp_layer_types": ["dense", "mixed", "sparse", "dense", "sparse", "sparse"]},
     "mlp_layer_types"),
    ({"layer_types": ["full_attention", "linear_attention", "full_attention",
                      "full_attention", "full_attention", "full_attention"]}, "layer_types"),
    ({"layer_rope_theta": [0, 1]}, "layer_rope_theta"),
    ({"layer_rope_theta": [0, "x", 1, 1, 1, 0]}, "layer_rope_theta"),
    ({"sliding_window": None}, "sliding_window"),
])
def test_malformed_text_keys_are_refused_by_name(changes: dict[str, Any], key: str) -> None:
    with pytest.raises(InputError, match=key):
        from_hf_config(_text("constructed--muse_spark-small.json", **changes), "bad")


def test_audio_stages_and_width_are_checked_as_transformers_checks_them() -> None:
    data = _config(_entry("constructed--muse_spark-small.json"))
    short = data | {"audio_config": data["audio_config"] | {"depths": [1, 2]}}
    with pytest.raises(InputError, match="hidden_sizes"):
        from_hf_config(short, "bad")
    wide = data | {"audio_config": data["audio_config"] | {"out_hidden_size": 512}}
    with pytest.raises(InputError, match="out_hidden_size"):
        from_hf_config(wide, "bad")


def test_glimmer_defaults_bytes_per_token_and_paging_note() -> None:
    """Muse Glimmer's defaults at bf16: 2 KV heads of 128 on all 52 layers — 53,248 bytes
    per token (39 sliding at 2,048, 13 full); vLLM's muse_glimmer.py pages them so."""
    entry = _entry("transformers-defaults--muse_glimmer.json")
    spec = _spec(entry)
    layers = state_layers(spec)
    per = Counter(layer.elements_per_token() for layer in layers for _ in range(layer.count))
    assert per == {2 * 2 * 128: 52}
    assert sum(k * v for k, v in per.items()) * 2 == 53_248 == entry["kv_elems_per_token"] * 2
    kinds = Counter(layer.kind for layer in layers for _ in range(layer.count))
    assert kinds == {"sliding": 39, "full": 13}
    assert any("MuseGlimmerAttention" in note for note in spec.notes)


def test_glimmer_ties_its_head_by_the_composites_key_alone() -> None:
    """The constructed composite sets tie_word_embeddings: transformers ties lm_head to the
    embeddings. A flat text file that sets it is built inside a composite that does not."""
    tied = _entry("constructed--muse_glimmer-small.json")
    assert tied["tied_embeddings"] is True
    assert count_parameters(_spec(tied)).lm_head == 0
    flat = _entry("constructed--muse_glimmer_text-untied.json")
    assert _config(flat)["tie_word_embeddings"] is True
    assert flat["tied_embeddings"] is False
    assert count_parameters(_spec(flat)).lm_head == flat["output_head_params"] > 0


def test_glimmer_parts_equal_transformers_modules() -> None:
    for file in ("transformers-defaults--muse_glimmer.json",
                 "constructed--muse_glimmer-small.json"):
        entry = _entry(file)
        parts = entry["components"]
        counted = count_parameters(_spec(entry))
        by = {c.component: c.parameters for c in counted.by_component}
        assert by[Component.ENCODER] == parts["model.vision_tower"], file
        assert by[Component.PROJECTOR] == (parts["model.vision_adapter"]
                                           + parts["model.vision_projection"]), file


def test_glimmer_head_dim_defaults_to_the_class_value_not_hidden_over_heads() -> None:
    """MuseGlimmerTextConfig's head_dim defaults to 128: the flat file (hidden 128, 4 heads)
    has 4 × 128 query widths, not 4 × 32."""
    spec = _spec(_entry("constructed--muse_glimmer_text-untied.json"))
    assert spec.decoder is not None
    assert spec.decoder.head_dim == 128


def test_layers_where_layer_types_and_rotary_disagree_are_named() -> None:
    """transformers windows a layer by layer_types; vLLM's MuseGlimmerAttention by whether
    it applies rotary. The constructed files set layer 3 apart (full with rotary); the class
    defaults agree everywhere."""
    for file in ("constructed--muse_glimmer-small.json", "constructed--muse_spark-small.json"):
        notes = _spec(_entry(file)).notes
        assert [n for n in notes if "disagree" in n] == [
            "layer 3: layer_types and layer_rope_theta disagree; their cache follows "
            "layer_types as transformers does, while vLLM windows a layer exactly when it "
            "applies rotary"], file
    for file in ("transformers-defaults--muse_glimmer.json",
                 "transformers-defaults--muse_spark.json"):
        assert not any("disagree" in n for n in _spec(_entry(file)).notes), file


def test_assistant_is_a_headless_drafter_over_its_targets_hidden_states() -> None:
    """The DFlash drafter's defaults: no embedding or head, `encoder.fc` from the five target
    layers' hidden states (5 × 6,656 → 6,656), 2,048 K/V elements per context token on each
    of its 5 sliding layers (20,480 bytes at bf16), its notes naming vLLM's paging."""
    entry = _entry("transformers-defaults--muse_glimmer_assistant.json")
    spec = _spec(entry)
    counted = count_parameters(spec)
    assert counted.input_embedding == counted.lm_head == 0
    assert spec.decoder is not None
    fc = next(t for t in spec.decoder.extra if t.name == "encoder.fc.weight")
    assert fc.shape == [6656, 5 * 6656]
    assert counted.total == entry["components"]["layers"] + entry[
        "components"]["encoder"] + entry["components"]["norm"]
    layers = state_layers(spec)
    assert sum(layer.elements_per_token() * layer.count for layer in layers) * 2 == 20_480
    assert {layer.kind for layer in layers} == {"sliding"}
    assert any("qwen3_dflash.py" in note for note in spec.notes)


def test_assistant_needs_its_target_layers() -> None:
    data = _config(_entry("constructed--muse_glimmer_assistant-small.json"))
    with pytest.raises(InputError, match="target_layer_ids"):
        from_hf_config(data | {"target_layer_ids": []}, "bad")
    with pytest.raises(InputError, match="layer_types"):
        from_hf_config(data | {"layer_types": ["sliding_attention"]}, "bad")


def test_spark_names_the_float32_parameters_transformers_builds() -> None:
    """MuseSparkTopkRouter's weight (256 × 8,192 on each of 62 layers) and the two residual
    gates per layer are float32 in transformers' build: 131,039,232 parameters."""
    notes = _spec(_entry("transformers-defaults--muse_spark.json")).notes
    assert any("float32 (131,039,232 parameters)" in note for note in notes)
    assert 62 * 256 * 8192 + 2 * 62 * 8192 == 131_039_232
