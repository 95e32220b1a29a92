"""Every packaged preset's count is `exact`: its builder reads each key of the file that may
shape it, or the key is on the reviewed shape-irrelevant lists with its reason. The keys
the builders came to read for it change the count when they change, as the engines build
the model."""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config

_PRESETS = resources.files("llm_inventory") / "data" / "presets"
NAMES = sorted(p.name for p in _PRESETS.iterdir() if p.name.endswith(".json"))


def _preset(name: str) -> dict[str, Any]:
    return dict(json.loads((_PRESETS / name).read_text()))


def _total(data: dict[str, Any]) -> int:
    return count_parameters(from_hf_config(data, "config.json")).total


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_is_exact(name: str) -> None:
    spec = from_hf_config(_preset(name), name)
    assert spec.exact, spec.estimated


def test_qwen3_5_output_gate_follows_its_key() -> None:
    """attn_output_gate false drops the gate half of q_proj on the 16 full-attention layers
    (vLLM Qwen3NextAttention): heads × head_dim × hidden each."""
    data = _preset("qwen3.5-27b.json")
    off = copy.deepcopy(data)
    off["text_config"]["attn_output_gate"] = False
    text = data["text_config"]
    full = text["layer_types"].count("full_attention")
    gate = text["num_attention_heads"] * text["head_dim"] * text["hidden_size"]
    assert _total(data) - _total(off) == full * gate


def test_qwen3_5_dedicated_mtp_embeddings_add_a_table() -> None:
    """The MTP block is counted beside the total; its own embedding table adds
    vocab × hidden there."""
    data = _preset("qwen3.5-27b.json")
    own = copy.deepcopy(data)
    own["text_config"]["mtp_use_dedicated_embeddings"] = True
    a = count_parameters(from_hf_config(data, "config.json"))
    b = count_parameters(from_hf_config(own, "config.json"))
    text = data["text_config"]
    assert b.total == a.total
    assert b.mtp_parameters - a.mtp_parameters == text["vocab_size"] * text["hidden_size"]


def test_nemotron_h_shared_experts_follow_vllm() -> None:
    """n_shared_experts 0 removes the shared expert; 2 doubles it (vLLM NemotronHMoE)."""
    data = _preset("nemotron-3-nano-30b-a3b.json")
    moe_layers = data["hybrid_override_pattern"].count("E")
    shared = 2 * data["hidden_size"] * data["moe_shared_expert_intermediate_size"]
    base = _total(data)
    assert base - _total({**data, "n_shared_experts": 0}) == moe_layers * shared
    assert _total({**data, "n_shared_experts": 2}) - base == moe_layers * shared


def test_nemotron_h_layer_count_comes_from_the_pattern() -> None:
    data = _preset("nemotron-3-nano-30b-a3b.json")
    spec = from_hf_config({**data, "num_hidden_layers": 7}, "config.json")
    assert spec.exact and count_parameters(spec).total == _total(data)
    assert any("num_hidden_layers says 7" in note for note in spec.notes)


@pytest.mark.parametrize(("name", "change", "field"), [
    ("minimax-m2.5.json", {"qk_norm_type": "per_head"}, "qk_norm_type"),
    ("minimax-m2.5.json", {"use_qk_norm": False}, "qk_norm_type"),
    ("minimax-m2.5.json", {"shared_intermediate_size": 1024}, "shared_intermediate_size"),
    ("minimax-m3.json", {"first_k_dense_replace": 2}, "first_k_dense_replace"),
    ("minimax-m3.json", {"moe_intermediate_size": 1024}, "moe_intermediate_size"),
    ("minimax-m3.json", {"n_shared_experts": 2}, "n_shared_experts"),
])
def test_a_key_the_builder_cannot_honour_is_refused_by_name(
        name: str, change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match=field):
        from_hf_config({**_preset(name), **change}, "config.json")


def test_minimax_m3_forced_blocks_must_fit_in_the_top_k() -> None:
    data = _preset("minimax-m3.json")
    data["sparse_attention_config"]["sparse_local_block"] = 17
    with pytest.raises(InputError, match="sparse_local_block"):
        from_hf_config(data, "config.json")


@pytest.mark.parametrize(("key", "value"), [
    ("pos_emb_type", "learned_3d"), ("mm_projector_type", "patchmergerv2"),
    ("mm_hidden_size", 1024), ("text_hidden_size", 4096)])
def test_kimi_k2_5_tower_keys_it_cannot_build_are_refused(key: str, value: Any) -> None:
    data = _preset("kimi-k2.5.json")
    data["vision_config"][key] = value
    with pytest.raises(InputError, match=key):
        from_hf_config(data, "config.json")


def test_gemma4_double_wide_mlp_is_read_even_without_shared_layers() -> None:
    data = _preset("gemma-4-31b.json")
    assert data["text_config"].get("num_kv_shared_layers", 0) == 0
    wide = copy.deepcopy(data)
    wide["text_config"]["use_double_wide_mlp"] = True
    spec = from_hf_config(wide, "config.json")
    assert spec.exact and count_parameters(spec).total == _total(data)
