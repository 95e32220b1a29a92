"""Encoder-only (BERT, RoBERTa, XLM-RoBERTa) and encoder-decoder (Whisper) config import.

Totals are exact against `data/more-configs/oracle-totals-encoders.json` (transformers 5.23.0
on the meta device, the class `architectures` names); breakdowns are checked against the
layer formulas of transformers' modelling code.
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
from llm_inventory.engine.params import ParameterCount, count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config, supported_model_types
from llm_inventory.spec.model import Component, Family, ModelSpec
from tests.reference import model_config

MORE = Path(__file__).resolve().parent.parent / "data" / "more-configs"


@cache
def _config(name: str) -> dict[str, Any]:
    return dict(json.loads((MORE / f"{name}.json").read_text()))


def _oracle() -> dict[str, int]:
    data = json.loads((MORE / "oracle-totals-encoders.json").read_text())
    return {name.removesuffix(".json"): row["total"] for name, row in data["totals"].items()}


def _spec(data: dict[str, Any], label: str = "config.json") -> ModelSpec:
    return from_hf_config(data, label)


def _count(data: dict[str, Any]) -> ParameterCount:
    return count_parameters(_spec(data))


def _by(counted: ParameterCount) -> dict[Component, int]:
    return {c.component: c.parameters for c in counted.by_component}


def test_model_types_are_registered() -> None:
    assert {"bert", "roberta", "xlm-roberta", "whisper"} <= set(supported_model_types())


@pytest.mark.parametrize(("name", "total"), sorted(_oracle().items()))
def test_totals_match_transformers_exactly(name: str, total: int) -> None:
    assert _count(_config(name)).total == total


# --- BERT-like encoders ---------------------------------------------------------------------


def test_bert_breakdown_follows_the_layer_formulas() -> None:
    """snowflake-arctic-embed-m, BERT-base: 12 layers, 768 wide, 3,072 MLP, 30,522 tokens."""
    counted = _count(model_config("snowflake-arctic-embed-m"))
    h, i, layers = 768, 3072, 12
    assert _by(counted) == {
        Component.EMBEDDINGS: (30522 + 512 + 2) * h,  # word, position, token-type rows
        Component.ATTENTION: layers * (4 * h * h + 4 * h),  # q, k, v, output + biases
        Component.MLP: layers * (2 * h * i + i + h),
        Component.NORMS: 2 * h + layers * 2 * 2 * h,  # embedding LN + two LNs a layer
        Component.OTHER: h * h + h,  # BertModel's pooler
    }
    assert counted.total == 109_482_240
    assert counted.input_embedding == 30522 * h
    assert counted.lm_head == 0


def test_encoder_only_models_are_a_text_encoder_without_state() -> None:
    spec = _spec(_config("BAAI--bge-m3"))
    assert spec.family is Family.ENCODER
    assert spec.decoder is None
    assert spec.encoder is not None and spec.encoder.kind == "text"
    assert state_layers(spec, encoder_tokens=1500) == ()
    # XLM-RoBERTa keeps 8,194 position rows; positions start after pad_token_id (1).
    stack = spec.encoder.stack
    assert stack is not None and stack.position_embeddings == 8194
    assert spec.max_context == 8192


def test_masked_lm_head_is_tied_with_its_own_transform_and_bias() -> None:
    """BertForMaskedLM: no pooler; transform Linear + LayerNorm, a vocabulary bias."""
    counted = _count(_config("google-bert--bert-base-uncased"))
    h, vocab = 768, 30522
    assert counted.lm_head == vocab + h * h + h + 2 * h
    assert Component.OTHER not in _by(counted)  # the MLM model drops the pooler
    assert counted.total == 109_482_240 - (h * h + h) + counted.lm_head


def test_roberta_classifier_replaces_the_pooler() -> None:
    """bge-reranker-v2-m3: dense(1024 → 1024) + out_proj(1024 → 1 label), no pooler."""
    counted = _count(_config("BAAI--bge-reranker-v2-m3"))
    h = 1024
    assert _by(counted)[Component.OTHER] == (h * h + h) + (h + 1)
    assert counted.total - _count(_config("BAAI--bge-m3")).total == h + 1  # out_proj


def test_labels_come_from_id2label_then_num_labels() -> None:
    """A token classifier is Linear(hidden, labels) with bias: labels × (hidden + 1)."""
    unlabelled = {k: v for k, v in _config("transformers-defaults--bert").items()
                  if k not in ("id2label", "label2id")}
    data = {**unlabelled, "architectures": ["BertForTokenClassification"]}
    h = data["hidden_size"]
    three = _count({**data, "id2label": {"0": "a", "1": "b", "2": "c"}}).total
    five = _count({**data, "num_labels": 5}).total
    default = _count(data).total  # neither key: transformers' two labels
    assert five - three == 2 * (h + 1)
    assert five - default == 3 * (h + 1)


@pytest.mark.parametrize(
    ("architecture", "note"),
    [(["BertLMHeadModel"], "BertLMHeadModel is not supported"), (None, "no architectures")],
)
def test_unsupported_heads_count_the_bare_model_and_say_so(
    architecture: list[str] | None, note: str
) -> None:
    data = {**_config("transformers-defaults--bert"), "architectures": architecture}
    spec = _spec(data)
    assert any(note in n for n in spec.notes)
    assert count_parameters(spec).total == 109_482_240  # BertModel with its pooler


_SMALL = st.fixed_dictionaries({
    "hidden": st.sampled_from([32, 64, 96]),
    "layers": st.integers(1, 4),
    "vocab": st.integers(50, 5000),
    "ffn": st.integers(1, 300),
    "positions": st.integers(4, 600),
})


@settings(max_examples=40, deadline=None)
@given(_SMALL, st.sampled_from(["bert", "roberta", "xlm-roberta"]), st.booleans())
def test_masked_lm_adds_its_head_to_the_bare_model(
    shape: dict[str, int], model_type: str, tied: bool
) -> None:
    """ForMaskedLM = Model − pooler + transform + bias (+ an untied output matrix and, as
    transformers allocates it untied, a second bias)."""
    prefix = {"bert": "Bert", "roberta": "Roberta", "xlm-roberta": "XLMRoberta"}[model_type]
    h, vocab = shape["hidden"], shape["vocab"]
    data = {
        "model_type": model_type, "hidden_size": h, "num_attention_heads": 4,
        "num_hidden_layers": shape["layers"], "intermediate_size": shape["ffn"],
        "vocab_size": vocab, "max_position_embeddings": shape["positions"],
        "tie_word_embeddings": tied,
    }
    bare = _count({**data, "architectures": [f"{prefix}Model"]}).total
    mlm = _count({**data, "architectures": [f"{prefix}ForMaskedLM"]})
    untied = 0 if tied else vocab * h + vocab
    assert mlm.total == bare - (h * h + h) + (h * h + h) + 2 * h + vocab + untied
    assert mlm.input_embedding == vocab * h


# --- Whisper --------------------------------------------------------------------------------


def _whisper_side(d: int, ffn: int, cross: bool) -> int:
    """One Whisper layer: q, v, out with bias, k without; LNs; a GELU MLP with biases."""
    attention = 4 * d * d + 3 * d
    norms = (3 if cross else 2) * 2 * d
    return attention * (2 if cross else 1) + norms + 2 * d * ffn + ffn + d


def test_whisper_large_v3_breakdown() -> None:
    """whisper-large-v3: d_model 1280, 32 + 32 layers, 5,120 MLP, 128 mel bins, 51,866 tokens."""
    spec = _spec(_config("openai--whisper-large-v3"))
    counted = count_parameters(spec)
    d, ffn, layers, vocab = 1280, 5120, 32, 51866
    stem = d * 128 * 3 + d + d * d * 3 + d  # conv1 (mel → d), conv2 (d → d), biases
    encoder = stem + 1500 * d + layers * _whisper_side(d, ffn, False) + 2 * d
    by = _by(counted)
    assert by[Component.ENCODER] == encoder
    # The decoder's self- and cross-attention are both attention.
    assert by[Component.ATTENTION] == layers * 2 * (4 * d * d + 3 * d)
    assert by[Component.EMBEDDINGS] == (vocab + 448) * d
    assert counted.lm_head == 0  # proj_out is tied to the decoder's token embedding
    assert counted.input_embedding == vocab * d
    assert counted.total == 1_543_490_560
    assert spec.family is Family.ENCODER_DECODER
    assert spec.max_context == 448


def test_whisper_state_is_self_attention_plus_cross_attention_over_1500_tokens() -> None:
    spec = _spec(_config("openai--whisper-large-v3"))
    runs = state_layers(spec, encoder_tokens=1500)
    assert [(r.kind, r.first, r.count) for r in runs] == [
        ("full", 0, 32), ("cross", 0, 32)]
    for run in runs:
        assert (run.kv_heads, run.k_head_dim, run.v_head_dim) == (20, 64, 64)
    assert runs[1].encoder_tokens == 1500 and runs[0].window is None


def test_whisper_encoder_is_audio_with_1500_tokens_per_30_s_clip() -> None:
    spec = _spec(_config("openai--whisper-base"))
    assert spec.encoder is not None and spec.encoder.kind == "audio"
    assert feature_tokens(spec.encoder.media).feature_tokens == 1500


def test_whisper_untied_output_projection_and_bare_model() -> None:
    data = _config("transformers-defaults--whisper")
    tied = _count(data).total
    assert tied == 37_760_640  # transformers' defaults: whisper-tiny's shapes
    untied = _count({**data, "tie_word_embeddings": False}).total
    assert untied - tied == 51865 * 384
    assert _count({**data, "architectures": ["WhisperModel"]}).total == tied


def test_whisper_unsupported_head_is_noted() -> None:
    spec = _spec({**_config("transformers-defaults--whisper"),
                  "architectures": ["WhisperForCausalLM"]})
    assert any("WhisperForCausalLM is not supported" in n for n in spec.notes)


def test_whisper_audio_classification_is_encoder_only() -> None:
    data = {**_config("transformers-defaults--whisper"),
            "architectures": ["WhisperForAudioClassification"], "use_weighted_layer_sum": True}
    spec = _spec(data)
    assert spec.family is Family.ENCODER and spec.decoder is None
    assert state_layers(spec, encoder_tokens=1500) == ()
    d, proj = 384, 256
    encoder = (d * 80 * 3 + d + d * d * 3 + d) + 1500 * d + 4 * _whisper_side(d, 1536, False) \
        + 2 * d
    # projector, a 2-label classifier and 4 + 1 layer weights; counted as transformers does
    assert count_parameters(spec).total == encoder + (d * proj + proj) + (proj * 2 + 2) + 5


# --- malformed configs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "patch", "field"),
    [
        ("BAAI--bge-large-en-v1.5", {"hidden_size": None}, "hidden_size"),
        ("BAAI--bge-large-en-v1.5", {"hidden_size": "big"}, "hidden_size"),
        ("BAAI--bge-large-en-v1.5", {"num_hidden_layers": 0}, "num_hidden_layers"),
        ("BAAI--bge-large-en-v1.5", {"num_attention_heads": 7}, "num_attention_heads"),
        ("BAAI--bge-large-en-v1.5", {"intermediate_size": 40.5}, "intermediate_size"),
        ("BAAI--bge-large-en-v1.5", {"vocab_size": True}, "vocab_size"),
        ("BAAI--bge-large-en-v1.5", {"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ("BAAI--bge-large-en-v1.5", {"architectures": "BertModel"}, "architectures"),
        ("BAAI--bge-large-en-v1.5", {"max_position_embeddings": -1}, "max_position_embeddings"),
        ("BAAI--bge-m3", {"type_vocab_size": [1]}, "type_vocab_size"),
        ("BAAI--bge-reranker-v2-m3", {"id2label": []}, "id2label"),
        ("FacebookAI--roberta-base", {"pad_token_id": -3}, "pad_token_id"),
        ("openai--whisper-large-v3", {"d_model": None}, "d_model"),
        ("openai--whisper-large-v3", {"encoder_layers": None}, "encoder_layers"),
        ("openai--whisper-large-v3", {"decoder_ffn_dim": "wide"}, "decoder_ffn_dim"),
        ("openai--whisper-large-v3", {"decoder_attention_heads": 3}, "decoder_attention_heads"),
        ("openai--whisper-large-v3", {"num_mel_bins": 0}, "num_mel_bins"),
        ("openai--whisper-large-v3", {"max_source_positions": 1.5}, "max_source_positions"),
        ("openai--whisper-large-v3", {"vocab_size": None}, "vocab_size"),
        ("openai--whisper-large-v3", {"torch_dtype": "float9"}, "torch_dtype"),
    ],
)
def test_malformed_configs_name_the_field(name: str, patch: dict[str, Any], field: str) -> None:
    data = {**_config(name), **patch}
    if "torch_dtype" in patch:
        data.pop("dtype", None)
    with pytest.raises(InputError) as error:
        from_hf_config(data, "config.json")
    assert field in str(error.value)
    assert str(error.value).startswith("config.json: ")
