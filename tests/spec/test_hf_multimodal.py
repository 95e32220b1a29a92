"""Vision-language configs: exact totals, tower and projector split, media geometry, KV layout.

Every total is the parameter count transformers 5.23/5.24 allocates for the same config
(tests/data/models/reference.json, tests/data/oracle-totals.json and
tests/data/more-configs/oracle-totals.json say how each was computed).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine.media import feature_tokens
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.hf.registry import MULTIMODAL_MODELS
from llm_inventory.spec.model import Component, ModelSpec
from tests.reference import DATA, merge, model_config, oracle_totals, reference_models

MORE = DATA / "more-configs"


@cache
def _oracle() -> dict[str, Any]:
    return dict(json.loads((MORE / "oracle-totals.json").read_text()))


def _load(relative: str) -> dict[str, Any]:
    return dict(json.loads((DATA / relative).read_text()))


def _spec(data: dict[str, Any], label: str = "config.json") -> ModelSpec:
    return from_hf_config(data, label)


def _total(data: dict[str, Any]) -> int:
    return count_parameters(_spec(data)).total


def _built(data: dict[str, Any]) -> int:
    """What transformers builds: the count, plus the parts an importer counts apart
    (Qwen2.5-Omni's talker and token2wav, beside the thinker it counts)."""
    total = _total(data)
    if data["model_type"] == "qwen2_5_omni":
        from llm_inventory.spec.hf.common import over_defaults
        from llm_inventory.spec.hf.qwen_omni import speech_parameters

        total += sum(speech_parameters(over_defaults(data, "qwen2_5_omni", "x", "x")).values())
    return total


def _minimal(model_type: str, **extra: Any) -> dict[str, Any]:
    arch = _oracle()["architectures"][model_type]
    return {"model_type": model_type, "architectures": [arch], **extra}


# --- totals ------------------------------------------------------------------------------

def test_qwen2_5_vl_matches_the_reference_count() -> None:
    ref = next(r for r in reference_models() if r["name"] == "Qwen2.5-VL-7B-Instruct")
    counted = count_parameters(_spec(model_config("Qwen2.5-VL-7B-Instruct")))
    assert counted.total == ref["total_params"] == 8_292_166_656
    assert counted.input_embedding == ref["input_embedding_params"]
    assert counted.lm_head == ref["output_head_params"]


SHARED_VLM = [(p, t) for p, t in oracle_totals()
              if json.loads(p.read_text())["model_type"] in MULTIMODAL_MODELS]


def test_every_shared_vlm_config_is_covered() -> None:
    names = {p.name for p, _ in SHARED_VLM}
    assert names == {
        "google--gemma-3-4b-it.json", "google--gemma-3-12b-it.json",
        "google--gemma-3-27b-it.json", "mistralai--Mistral-Small-3.1-24B-Instruct-2503.json",
        "meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
    }


@pytest.mark.parametrize("path,total", SHARED_VLM, ids=lambda v: getattr(v, "name", ""))
def test_shared_vlm_configs_match_transformers(path: Path, total: int) -> None:
    assert _total(json.loads(path.read_text())) == total


@pytest.mark.parametrize("name", sorted(_oracle()["configs"]))
def test_more_configs_match_transformers(name: str) -> None:
    assert _total(_load(f"more-configs/{name}")) == _oracle()["configs"][name]


# Composites transformers has no class for have no defaults to build (Kimi-K3: its
# checkpoint's tensor listing is its reference, tests/spec/test_kimi_k3.py; DeepSeek-V4.1:
# only transformers' main branch has it, tests/spec/test_deepseek_v41_2026.py).
WITH_CLASS = sorted(set(MULTIMODAL_MODELS) - {"kimi_k3", "deepseek_v41"})


# transformers 5.25 cannot build these from their class defaults, so there is no figure:
# Qwen4ExpTextConfig() makes every fourth layer indexed_attention and leaves the indexer
# keys null (Qwen4ExpTextQSAIndexer divides None by None). The importer refuses them too,
# naming the key (tests/spec/test_qwen4_exp.py holds the class defaults with QSA set).
NO_DEFAULTS_FIGURE = {"qwen4_exp"}


@pytest.mark.parametrize("model_type", sorted(set(WITH_CLASS) - NO_DEFAULTS_FIGURE))
def test_transformers_defaults_for_absent_keys(model_type: str) -> None:
    """A config with nothing but its type builds what the configuration classes default to."""
    assert _built(_minimal(model_type)) == _oracle()["minimal"][model_type]


@pytest.mark.parametrize("model_type", sorted(NO_DEFAULTS_FIGURE))
def test_defaults_transformers_cannot_build_are_refused(model_type: str) -> None:
    with pytest.raises(InputError, match="indexer_n_heads"):
        _spec({"model_type": model_type})


# transformers 5.25 cannot build these with an empty text_config, so there is no figure:
# Exaone4_5_Config.__post_init__ reads text_config["model_type"] (KeyError); an empty
# vision_config of Nemotron-H Omni leaves RADIO's video packing unset, which its
# validate_architecture refuses against the composite's 2; an empty one of Inkling 2 Loop
# takes Inkling2VisionConfig's 4,608-wide text, which Inkling2LoopConfig's 2,304 refuses
# (the importer refuses both too).
NO_EMPTY_SUB_CONFIG_FIGURE = {"exaone4_5", "nemotron_h_omni", "inkling2_loop"} | NO_DEFAULTS_FIGURE


@pytest.mark.parametrize("model_type",
                         sorted(set(WITH_CLASS) - NO_EMPTY_SUB_CONFIG_FIGURE))
def test_empty_sub_configs_take_their_class_defaults(model_type: str) -> None:
    """LLaVA and Mistral3 default an absent sub-config differently from an empty one."""
    data = _minimal(model_type, text_config={}, vision_config={})
    assert _built(data) == _oracle()["empty-sub-configs"][model_type]


@pytest.mark.parametrize("variant", _oracle()["variants"], ids=lambda v: v["why"])
def test_variants_match_transformers(variant: dict[str, Any]) -> None:
    assert _total(merge(_load(variant["base"]), variant["patch"])) == variant["total"]


def test_mistral_small_ties_its_head_as_transformers_does() -> None:
    """Mistral3Config defaults tie_word_embeddings to true; the file sets none, so the head is
    tied. The released checkpoint stores a separate head: 24,011,361,280 parameters."""
    spec = _spec(_load("configs/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json"))
    counted = count_parameters(spec)
    assert counted.lm_head == 0
    assert any("tie_word_embeddings" in note for note in spec.notes)
    untied = _load("configs/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json")
    untied["tie_word_embeddings"] = False
    assert _total(untied) == 24_011_361_280 == counted.total + 131072 * 5120


def test_llama4_scout_active_parameters() -> None:
    """Meta's model card: 17B active (the language model's) of 109B total."""
    counted = count_parameters(_spec(_load(
        "engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json")))
    assert (counted.experts, counted.top_k, counted.moe_layers) == (16, 1, 48)
    vision = sum(c.active for c in counted.by_component
                 if c.component in (Component.ENCODER, Component.PROJECTOR))
    assert counted.active - vision == 17_172_894_720
    assert round(counted.total / 1e9) == 109


# --- vision tower and projector ----------------------------------------------------------

@pytest.mark.parametrize("relative", sorted(_oracle()["components"]))
def test_tower_and_projector_counted_apart(relative: str) -> None:
    counted = count_parameters(_spec(_load(relative)))
    parts = {c.component: c.parameters for c in counted.by_component}
    expected = _oracle()["components"][relative]
    assert parts[Component.ENCODER] == expected["encoder"]
    assert parts[Component.PROJECTOR] == expected["projector"]
    assert sum(parts.values()) == counted.total


def test_mllama_gates_and_tiles_are_counted() -> None:
    spec = _spec(_load("more-configs/meta-llama--Llama-3.2-90B-Vision-Instruct.json"))
    assert spec.encoder is not None and spec.encoder.stack is not None and spec.decoder
    tower, decoder = spec.encoder.stack, spec.decoder
    assert tower.layers == 32 + 8
    gates = {e.name: e.layers for e in tower.extra if "gate_" in e.name}
    assert gates == {"layers.{i}.gate_attn": list(range(32, 40)),
                     "layers.{i}.gate_ffn": list(range(32, 40))}
    tile = next(e for e in tower.extra if e.name.endswith("tile_embedding.weight"))
    assert tile.shape == [9, 4 * 1601 * 1280]  # 8 aspect ratios + 1, 4 tiles × 1,601 positions
    assert decoder.embedding_rows == 128256 + 8 and decoder.cross_qk_norm
    cross = next(e for e in decoder.extra if e.name.endswith("cross_attn_attn_gate"))
    assert cross.layers == list(range(3, 100, 5))


# --- media geometry ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("relative", "tokens"),
    [
        # CLIP ViT-L/14 at 336 px: 24 × 24 patches; the default strategy drops the CLS token.
        ("more-configs/llava-hf--llava-1.5-7b-hf.json", 576),
        # 448 × 448 at 14 px, merged 2 × 2: (448 / 14)² / 4 = 256.
        ("more-configs/Qwen--Qwen2-VL-7B-Instruct.json", 256),
        ("models/Qwen2.5-VL-7B-Instruct.json", 256),
        # 4 tiles of (560 / 14)² + 1 = 1,601 positions.
        ("more-configs/meta-llama--Llama-3.2-90B-Vision-Instruct.json", 6404),
        # mm_tokens_per_image: 64 × 64 patches average-pooled 4 × 4.
        ("configs/google--gemma-3-4b-it.json", 256),
        ("configs/google--gemma-3-27b-it.json", 256),
        # 1,540 / 14 = 110 patches a side, merged 2 × 2 → 55 rows of 55 and an [IMG_BREAK].
        ("configs/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json", 3080),
        # One 336 px tile: 24² patches, pixel shuffle 0.5 → 144.
        ("engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json", 144),
    ],
)
def test_default_feature_tokens(relative: str, tokens: int) -> None:
    spec = _spec(_load(relative))
    assert spec.encoder is not None
    assert feature_tokens(spec.encoder.media).feature_tokens == tokens


def test_explicit_sizes_follow_the_encoder_geometry() -> None:
    qwen = _spec(_load("more-configs/Qwen--Qwen2-VL-7B-Instruct.json")).encoder
    gemma = _spec(_load("configs/google--gemma-3-4b-it.json")).encoder
    assert qwen is not None and gemma is not None
    assert feature_tokens(qwen.media, width=448, height=448).feature_tokens == 256
    # A 1,008 × 672 image is 72 × 48 patches → 36 × 24 tokens.
    assert feature_tokens(qwen.media, width=1008, height=672).feature_tokens == 864
    # Two video frames fold into one temporal patch.
    assert feature_tokens(qwen.media, width=448, height=448, frames=4).feature_tokens == 512
    assert feature_tokens(gemma.media, width=896, height=896).feature_tokens == 256


def test_transformers_default_geometries() -> None:
    """MllamaConfig's default tile is 448 px: 4 × ((448 / 14)² + 1) = 4,100 positions."""
    mllama = _spec(_minimal("mllama")).encoder
    assert mllama is not None and feature_tokens(mllama.media).feature_tokens == 4100
    full = _spec(merge(_load("more-configs/llava-hf--llava-1.5-7b-hf.json"),
                        {"vision_feature_select_strategy": "full"})).encoder
    assert full is not None and feature_tokens(full.media).feature_tokens == 577


# --- KV layout ---------------------------------------------------------------------------

def test_mllama_cross_layers_hold_encoder_tokens() -> None:
    spec = _spec(_load("more-configs/meta-llama--Llama-3.2-90B-Vision-Instruct.json"))
    layers = state_layers(spec, encoder_tokens=6404)
    cross = [run for run in layers if run.kind == "cross"]
    full = [run for run in layers if run.kind == "full"]
    assert [run.first for run in cross] == list(range(3, 100, 5))
    assert all(run.encoder_tokens == 6404 and run.elements_per_token() == 0 for run in cross)
    assert all((run.kv_heads, run.k_head_dim) == (8, 128) for run in cross)
    assert sum(run.count for run in full) == 80
    assert all(run.encoder_tokens == 0 and run.elements_per_token() == 2 * 8 * 128
               for run in full)


def test_gemma3_five_sliding_to_one_full() -> None:
    spec = _spec(_load("configs/google--gemma-3-4b-it.json"))
    kinds = [run.kind for run in state_layers(spec) for _ in range(run.count)]
    assert len(kinds) == 34
    assert kinds[:12] == ["sliding"] * 5 + ["full"] + ["sliding"] * 5 + [
        "full"]
    assert all(run.window == 1024 for run in state_layers(spec) if run.kind == "sliding")


def test_llama4_chunked_layers_and_full_nope_layers() -> None:
    spec = _spec(_load("engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    runs = state_layers(spec)
    full = [i for run in runs if run.kind == "full"
            for i in range(run.first, run.first + run.count)]
    assert full == list(range(3, 48, 4))  # the NoPE layers: every fourth
    chunked = [run for run in runs if run.kind == "chunked"]
    assert sum(run.count for run in chunked) == 36
    assert all(run.window == 8192 for run in chunked)


def test_llama4_without_a_chunk_size_is_all_full() -> None:
    data = merge(_load("engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json"),
                  {"text_config": {"attention_chunk_size": None}})
    assert {run.kind for run in state_layers(_spec(data))} == {"full"}


# --- invariants --------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(
    feature_layers=st.lists(st.integers(-24, -1), min_size=1, max_size=4),
    bias=st.booleans(),
    width=st.sampled_from([64, 128, 256]),
)
def test_llava_projector_follows_its_feature_layers(
    feature_layers: list[int], bias: bool, width: int
) -> None:
    """Linear(width × layers → hidden) then Linear(hidden → hidden), biases on both or none."""
    data = merge(_load("more-configs/llava-hf--llava-1.5-7b-hf.json"), {
        "vision_feature_layer": feature_layers, "multimodal_projector_bias": bias,
        "vision_config": {"hidden_size": width, "intermediate_size": 4 * width,
                          "num_attention_heads": 4},
    })
    counted = count_parameters(_spec(data))
    parts = {c.component: c.parameters for c in counted.by_component}
    hidden = 4096
    expected = (width * len(feature_layers) + bias) * hidden + (hidden + bias) * hidden
    assert parts[Component.PROJECTOR] == expected
    assert sum(parts.values()) == counted.total


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 24), step=st.integers(1, 4), interval=st.integers(1, 6))
def test_llama4_moe_and_nope_layers(layers: int, step: int, interval: int) -> None:
    data = _minimal("llama4", text_config={
        "num_hidden_layers": layers, "interleave_moe_layer_step": step,
        "no_rope_layer_interval": interval, "hidden_size": 64, "intermediate_size": 32,
        "intermediate_size_mlp": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 100, "num_local_experts": 4,
    })
    spec = _spec(data)
    counted = count_parameters(spec)
    assert counted.moe_layers == len(range(step - 1, layers, step))
    full = [i for run in state_layers(spec) if run.kind == "full"
            for i in range(run.first, run.first + run.count)]
    assert full == [i for i in range(layers) if (i + 1) % interval == 0]


# --- malformed input ---------------------------------------------------------------------

LLAVA = "more-configs/llava-hf--llava-1.5-7b-hf.json"
MLLAMA = "more-configs/meta-llama--Llama-3.2-90B-Vision-Instruct.json"
SCOUT = "engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json"


@pytest.mark.parametrize(
    ("base", "patch", "field"),
    [
        (LLAVA, {"vision_feature_layer": "last"}, "vision_feature_layer"),
        (LLAVA, {"vision_feature_layer": []}, "vision_feature_layer"),
        (LLAVA, {"text_config": "llama"}, "text_config"),
        (LLAVA, {"vision_config": {"model_type": "nonesuch"}}, "model_type"),
        (LLAVA, {"text_config": {"model_type": "llava"}}, "model_type"),
        (LLAVA, {"text_config": {"model_type": 7}}, "model_type"),
        (LLAVA, {"vision_config": {"hidden_size": -1}}, "hidden_size"),
        (LLAVA, {"multimodal_projector_bias": "yes"}, "multimodal_projector_bias"),
        (MLLAMA, {"text_config": {"cross_attention_layers": [3, 200]}}, "cross_attention_layers"),
        (MLLAMA, {"vision_config": {"supported_aspect_ratios": []}}, "supported_aspect_ratios"),
        (MLLAMA, {"vision_config": {"max_num_tiles": 0}}, "max_num_tiles"),
        (SCOUT, {"vision_config": {"pixel_shuffle_ratio": 0.3}}, "pixel_shuffle_ratio"),
        (SCOUT, {"text_config": {"num_experts_per_tok": 32}}, "top_k"),
        (SCOUT, {"text_config": {"layer_types": ["diagonal_attention"]}}, "layer_types"),
        (SCOUT, {"text_config": {"no_rope_layers": [1, 0]}}, "no_rope_layers"),
        (MLLAMA, {"vision_config": "tiles"}, "vision_config"),
    ],
)
def test_malformed_configs_name_the_field(
    base: str, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputError) as error:
        _spec(merge(_load(base), patch))
    assert field in str(error.value)
