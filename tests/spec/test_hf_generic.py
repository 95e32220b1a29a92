"""An architecture no importer models: a generic Llama-like estimate, labelled as such."""

from __future__ import annotations

from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from tests.reference import model_config

UNKNOWN = {"model_type": "frobnicator", "architectures": ["FrobnicatorForCausalLM"]}


def _estimate(data: dict[str, Any]) -> Any:
    return from_hf_config({**data, **UNKNOWN}, "config.json")


def test_a_llama_shaped_unknown_type_is_estimated_as_a_llama() -> None:
    llama = model_config("Llama-3.1-8B")
    spec = _estimate(llama)
    assert spec.exact is False
    assert spec.estimated is not None
    assert spec.estimated.startswith("estimated: architecture frobnicator is not modelled")
    assert spec.notes[0] == spec.estimated
    assert count_parameters(spec).total == count_parameters(
        from_hf_config(llama, "config.json")).total


def test_expert_counts_make_a_moe_estimate() -> None:
    mixtral = model_config("Mixtral-8x7B-v0.1")
    spec = _estimate(mixtral)
    counted, exact = count_parameters(spec), count_parameters(from_hf_config(mixtral, "c"))
    assert spec.decoder is not None and spec.decoder.moe is not None
    assert (counted.total, counted.active) == (exact.total, exact.active)


def test_deepseek_style_expert_keys() -> None:
    data = {**model_config("Llama-3.1-8B"), "n_routed_experts": 16, "num_experts_per_tok": 2,
            "moe_intermediate_size": 1024, "n_shared_experts": 1, "first_k_dense_replace": 1}
    moe = _estimate(data).decoder.moe
    assert (moe.experts, moe.top_k, moe.expert_intermediate_size, moe.shared_experts,
            moe.shared_intermediate_size, moe.first_dense) == (16, 2, 1024, 1, 1024, 1)


def test_a_wrapper_is_estimated_from_its_text_config() -> None:
    text = {**model_config("Llama-3.1-8B"), "model_type": "frob_text", "architectures": None}
    spec = from_hf_config({"model_type": "frobvl", "text_config": text}, "config.json")
    assert spec.exact is False
    assert any("vision or audio tower is not counted" in n for n in spec.notes)


def test_known_layer_types_are_kept() -> None:
    data = {**model_config("Llama-3.1-8B"), "sliding_window": 1024,
            "layer_types": ["sliding_attention", "full_attention"] * 16}
    stack = _estimate(data).decoder
    assert stack.kinds().count("sliding") == 16 and stack.sliding_window == 1024


def test_without_the_standard_keys_it_is_refused_naming_them() -> None:
    data = {**model_config("Llama-3.1-8B"), "intermediate_size": None, "vocab_size": None}
    with pytest.raises(InputError) as error:
        _estimate(data)
    assert "model_type" in str(error.value)
    assert "lacks vocab_size, intermediate_size" in str(error.value)


def test_a_bad_standard_key_names_the_key() -> None:
    with pytest.raises(InputError, match="num_attention_heads"):
        _estimate({**model_config("Llama-3.1-8B"), "num_attention_heads": "many"})
