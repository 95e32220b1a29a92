"""Hugging Face config import: exact parameter counts against independent references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from tests.reference import model_config, oracle_totals, reference_models

REFERENCE = {r["name"]: r for r in reference_models()}


def _spec(name: str) -> Any:
    return from_hf_config(model_config(name), name)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_total_parameters_match_transformers_exactly(name: str) -> None:
    ref = REFERENCE[name]
    counted = count_parameters(_spec(name))
    assert counted.total == ref["total_params"]
    assert counted.input_embedding == ref["input_embedding_params"]
    assert counted.lm_head == ref["output_head_params"]
    assert counted.total - counted.input_embedding - counted.lm_head == ref[
        "total_params_no_embed"]


@pytest.mark.parametrize("name", sorted(n for n, r in REFERENCE.items() if "active_params" in r))
def test_active_parameters_and_experts(name: str) -> None:
    ref = REFERENCE[name]
    counted = count_parameters(_spec(name))
    assert counted.active == ref["active_params"]
    assert counted.active - counted.input_embedding - counted.lm_head == ref[
        "active_params_no_embed"]
    assert counted.experts == ref["num_experts"]
    assert counted.top_k == ref["experts_per_token"]
    assert counted.moe_layers == ref["moe_layers"]
    assert counted.parameters_per_expert == ref["params_per_routed_expert"]


@pytest.mark.parametrize("path,total", oracle_totals(), ids=lambda v: getattr(v, "name", ""))
def test_more_configs_match_transformers(path: Path, total: int) -> None:
    data = json.loads(path.read_text())
    assert count_parameters(from_hf_config(data, path.name)).total == total


def test_gpt_oss_published_active_convention() -> None:
    """OpenAI's 5.13 B for gpt-oss-120b leaves out the input embedding."""
    counted = count_parameters(_spec("gpt-oss-120b"))
    assert counted.active_excluding_input_embedding == 5_132_849_472


def test_deepseek_notes_the_mtp_layer() -> None:
    assert any("multi-token" in note for note in _spec("DeepSeek-V3").notes)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        # An unknown type whose class is known dispatches on the class (test_hf_registry.py);
        # with the standard keys it is estimated (test_hf_generic.py); without, refused.
        ({"model_type": "nonesuch", "architectures": ["NonesuchForCausalLM"],
          "intermediate_size": None}, "model_type"),
        ({"model_type": None}, "model_type"),
        ({"hidden_size": "big"}, "hidden_size"),
        ({"hidden_size": -4096}, "hidden_size"),
        ({"hidden_size": 4096.5}, "hidden_size"),
        ({"num_hidden_layers": None}, "num_hidden_layers"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ({"torch_dtype": "float9"}, "torch_dtype"),
        ({"quantization_config": {"quant_method": "mystery"}}, "quant_method"),
        ({"num_key_value_heads": 7}, "kv_heads"),
    ],
)
def test_malformed_configs_name_the_field(patch: dict[str, Any], field: str) -> None:
    data = {**model_config("Llama-3.1-8B"), **patch}
    with pytest.raises(InputError) as error:
        from_hf_config(data, "config.json")
    assert field in str(error.value)


def test_unsupported_type_lists_supported_ones() -> None:
    with pytest.raises(InputError) as error:
        from_hf_config({"model_type": "nonesuch"}, "config.json")
    assert "llama" in str(error.value) and "deepseek_v3" in str(error.value)
