"""GLM-5.3-Flash (glm5_next, glm5_next_text) and Ling 3 (bailing_hybrid), each held to what
transformers itself builds.

tests/data/oracle-2026-glm5.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-glm5/ (index.json there says where each came from). For every
entry the importer's count must equal transformers' to the parameter (total, active, the
embedding and the head), the latent each layer adds per token must match on the same number
of layers, the indexer record on the same layers, each fixed state (KDA's conv window and
recurrent state) its shape and dtype, and the count must be labelled exact.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_parts

ORACLE = DATA / "oracle-2026-glm5.json"
FOLDER = DATA / "configs-2026-glm5"
TYPES = {"glm5_next", "glm5_next_text", "bailing_hybrid"}
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads((FOLDER / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def _entry(name: str) -> dict[str, Any]:
    return next(e for e in ENTRIES if e["file"] == name)


def test_the_set_covers_its_types_with_versions_recorded() -> None:
    assert {e["model_type"] for e in ENTRIES} == TYPES
    for e in ENTRIES:
        assert e["versions"]["transformers"] == "5.25.0", e["file"]
        assert str(e["versions"]["torch"]).startswith("2.13.0"), e["file"]
        assert "error" not in e and "cache_error" not in e, e["file"]
    listed = {e["file"] for e in json.loads((FOLDER / "index.json").read_text())}
    assert listed == {p.name for p in FOLDER.glob("*.json")} - {"index.json"}
    assert listed == {e["file"] for e in ENTRIES}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    spec = _spec(entry)
    check_parts(spec, entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_cache_per_token_equals_transformers(entry: dict[str, Any]) -> None:
    """The latent each layer adds per token (0 on KDA layers), the indexer record apart."""
    spec = _spec(entry)
    assert spec.decoder is not None
    layers = [layer for layer in state_layers(spec) for _ in range(layer.count)]
    growing = Counter(layer.elements_per_token() - layer.index_dim for layer in layers
                      if layer.elements_per_token())
    growing[0] = spec.decoder.layers - sum(growing.values())
    assert {k: v for k, v in growing.items() if v} == {
        int(k): v for k, v in entry["kv_elems_per_token_per_layer"].items()}
    records = Counter(layer.index_dim for layer in layers if layer.index_dim)
    expected = {o["elems_per_token"]: o["layers"] for o in entry.get(
        "other_per_token_state") or []}
    assert dict(records) == expected


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_kda_state_has_the_shapes_transformers_allocates(entry: dict[str, Any]) -> None:
    """Conv windows: the same channels at the model dtype, kernel − 1 positions where
    transformers keeps all kernel positions (vLLM's layout, what engines allocate);
    recurrent states: heads × head dim × head dim in fp32, on the same layers."""
    fixed = [layer for layer in state_layers(_spec(entry)) if layer.kind == "kda"]
    shapes = {t["tensor"]: t for t in entry["fixed_state_per_sequence"]}
    conv, state = shapes["conv_states[0]"], shapes["recurrent_states[0]"]
    _, channels, kernel = conv["shape"]
    assert {(f.conv_channels, f.conv_window, f.conv_dtype) for f in fixed} == {
        (channels, kernel - 1, _DTYPES[conv["dtype"]])}
    _, heads, dim, dim2 = state["shape"]
    assert {(f.state_elements, f.dtype) for f in fixed} == {
        (heads * dim * dim2, _DTYPES[state["dtype"]])}
    assert sum(f.count for f in fixed) == conv["layers"] == state["layers"]


def test_glm5_next_defaults_bytes_per_token_and_per_sequence() -> None:
    """GLM-5.3-Flash's class defaults at bf16: 11 sparse-attention layers (every fourth)
    keep a 512-element latent and a 257-element indexer record a token, (512 + 257) × 2 ×
    11 = 16,918 bytes; 34 KDA layers each hold 64 × 128 × 128 fp32 state and a 3 × 24,576
    bf16 conv window a sequence, 34 × (4,194,304 + 147,456) = 147,619,840 bytes."""
    spec = _spec(_entry("transformers-defaults--glm5_next.json"))
    result = size_state(StateRequest(layers=state_layers(spec), tokens=1000))
    assert result.bytes_per_token == 16_918
    assert result.fixed_bytes_per_sequence == 147_619_840
    assert spec.decoder is not None
    assert [i for i, k in enumerate(spec.decoder.kinds()) if k == "pooled_dsa"] == list(
        range(3, 45, 4))


def test_glm5_next_state_is_labelled_an_estimate_for_engines_and_ling_3s_is_not() -> None:
    """GLM-5.3's pooled indexer record is transformers' layout and no engine's: the count
    stays exact, the state says what was assumed. Ling 3 keeps MLA latents and KDA state,
    whose engine layouts are read (SGLang `BailingHybridConfig.mamba2_cache_params`, vLLM
    `kda_state_shape`)."""
    for entry in ENTRIES:
        spec = _spec(entry)
        if entry["model_type"] == "bailing_hybrid":
            assert spec.state_estimated is None
        else:
            assert spec.state_estimated and "indexer record" in spec.state_estimated


def test_the_composite_ties_by_its_own_flag_and_the_text_models_flag_ties_nothing() -> None:
    small = _spec(_entry("constructed--glm5_next-small.json"))
    assert small.decoder is not None and small.decoder.tied_embeddings
    text = _spec(_entry("constructed--glm5_next_text-small.json"))
    assert text.decoder is not None and not text.decoder.tied_embeddings
    assert any("composite's flag" in note for note in text.notes)
    ling = _spec(_entry("constructed--bailing_hybrid-small.json"))
    assert ling.decoder is not None and not ling.decoder.tied_embeddings
    assert any("ties no weights" in note for note in ling.notes)
    assert any("multi-token-prediction" in note for note in ling.notes)


def test_a_flat_glm5_next_file_reads_its_top_level_keys_as_the_text_config() -> None:
    """No text_config: the top-level keys are the language model's, and transformers still
    builds the default tower (460,072,448 parameters with its projector)."""
    entry = _entry("constructed--glm5_next-flat.json")
    spec = _spec(entry)
    assert spec.decoder is not None and spec.decoder.hidden_size == 192
    assert spec.encoder is not None
    counted = count_parameters(spec)
    assert entry["components"]["model.visual"] == 460_072_448
    assert counted.total - entry["components"]["model.language_model"] - entry[
        "output_head_params"] == 460_072_448


def test_ling_3_says_where_vllm_builds_a_trailing_partial_group_otherwise() -> None:
    """7 layers in groups of 3: transformers makes layer 6 KDA ((6 + 1) % 3 ≠ 0), vLLM's
    `_is_kda_layer` MLA; the count follows transformers and a note says so."""
    spec = _spec(_entry("constructed--bailing_hybrid-small.json"))
    assert spec.decoder is not None
    assert [i for i, k in enumerate(spec.decoder.kinds()) if k == "mla"] == [2, 5]
    assert any("do not fill a group of 3" in note for note in spec.notes)
    default = _spec(_entry("transformers-defaults--bailing_hybrid.json"))
    assert not any("fill a group" in note for note in default.notes)


def test_ling_3s_linear_keys_win_over_what_they_default_from() -> None:
    """linear_head_dim 20 and linear_num_heads 3 over head_dim 32 and 6 heads, kernel 2
    over short_conv_kernel_size's default 4 (`BailingHybridConfig.__post_init__`)."""
    spec = _spec(_entry("constructed--bailing_hybrid-linear-keys.json"))
    assert spec.decoder is not None and spec.decoder.linear_attention is not None
    la = spec.decoder.linear_attention
    assert (la.key_heads, la.key_head_dim, la.conv_kernel) == (3, 20, 2)


def _text(entry: str) -> dict[str, Any]:
    return _config(_entry(entry))


@pytest.mark.parametrize(("change", "key"), [
    ({"qk_rope_head_dim": 64}, "qk_rope_head_dim"),
    ({"num_key_value_heads": 2}, "num_key_value_heads"),
    ({"index_topk": 60}, "index_topk"),
    ({"q_lora_rank": None}, "q_lora_rank"),
    ({"layer_types": ["linear_attention"] * 7}, "layer_types"),
    ({"layer_types": ["sliding_attention"] * 8}, "layer_types"),
    ({"index_topk_pattern": "FFXF"}, "index_topk_pattern"),
    ({"index_topk_pattern": "FFF"}, "indexer_types"),
    ({"mlp_layer_types": ["moe"] * 8}, "mlp_layer_types"),
])
def test_glm5_next_text_refuses_what_the_class_refuses_by_name(change: dict[str, Any],
                                                               key: str) -> None:
    config = _text("constructed--glm5_next_text-small.json") | change
    with pytest.raises(InputError, match=key):
        from_hf_config(config, "bad")


@pytest.mark.parametrize(("change", "key"), [
    ({"layer_types": ["full_attention"] * 4}, "layer_types"),
    ({"mlp_layer_types": ["dense", "moe", "sparse", "sparse", "sparse"]}, "mlp_layer_types"),
    ({"num_experts_per_token": 9}, "top_k"),
])
def test_bailing_hybrid_refuses_bad_schedules_by_name(change: dict[str, Any],
                                                      key: str) -> None:
    config = _text("constructed--bailing_hybrid-linear-keys.json") | change
    with pytest.raises(InputError, match=key):
        from_hf_config(config, "bad")
