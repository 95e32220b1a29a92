"""Hybrid linear-attention and Mamba/attention models against transformers' own figures.

References: tests/data/oracle-2026.json (transformers 5.24.0 on the meta device, for real
configs and class defaults) and tests/data/hybrid-derived/oracle.json (the same script over
class defaults changed to exercise what they leave out; README there). Totals and active
parameters are compared to the parameter, the KV each layer adds per token to the cache a
meta forward builds, and each fixed state's shape to the tensors transformers allocated.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

TYPES = {"qwen3_next", "qwen3_5", "qwen3_5_moe", "kimi_linear", "lfm2", "nemotron_h",
         "granitemoehybrid", "falcon_h1", "minimax"}
FOLDERS = ("configs-2026", "configs-2026-more", "transformers-defaults-2026", "hybrid-derived")


@cache
def _entries() -> dict[str, dict[str, Any]]:
    found = {}
    for oracle in (DATA / "oracle-2026.json", DATA / "hybrid-derived" / "oracle.json"):
        for entry in json.loads(oracle.read_text()):
            if entry["model_type"] in TYPES:
                found[entry["file"]] = entry
    return found


def _path(name: str) -> Path:
    hits = [DATA / f / name for f in FOLDERS if (DATA / f / name).is_file()]
    assert len(hits) == 1, name
    return hits[0]


@cache
def _spec(name: str) -> ModelSpec:
    return from_hf_config(json.loads(_path(name).read_text()), name)


FILES = sorted(_entries())


def test_every_type_of_the_group_has_reference_figures() -> None:
    assert {e["model_type"] for e in _entries().values()} == TYPES
    assert len(FILES) == 15


@pytest.mark.parametrize("name", FILES)
def test_totals_match_transformers(name: str) -> None:
    ref, counted = _entries()[name], count_parameters(_spec(name))
    assert counted.total == ref["total_params"]
    assert counted.input_embedding == ref["input_embedding_params"]
    assert counted.lm_head == ref["output_head_params"]
    assert counted.total - counted.input_embedding - counted.lm_head == ref[
        "total_params_no_embed"]


@pytest.mark.parametrize("name", [n for n in FILES if _entries()[n].get("active_params")])
def test_active_parameters_and_experts(name: str) -> None:
    ref, counted = _entries()[name], count_parameters(_spec(name))
    assert counted.active == ref["active_params"]
    assert counted.experts == ref["num_experts"]
    assert counted.top_k == ref["experts_per_token"]
    assert counted.moe_layers == ref["moe_layers"]
    assert counted.parameters_per_expert == ref["params_per_routed_expert"]


def _kv_per_layer(spec: ModelSpec) -> dict[int, int]:
    """{elements one token adds to one layer: layers}, layers adding none counted at 0."""
    assert spec.decoder is not None
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        if layer.elements_per_token():
            found[layer.elements_per_token()] += layer.count
    found[0] = spec.decoder.layers - sum(found.values())
    return {k: v for k, v in found.items() if v}


@pytest.mark.parametrize("name", [n for n in FILES
                                  if "kv_elems_per_token_per_layer" in _entries()[n]])
def test_kv_per_token_is_the_cache_transformers_builds(name: str) -> None:
    ref = _entries()[name]["kv_elems_per_token_per_layer"]
    layers = _spec(name).decoder.layers  # type: ignore[union-attr]
    expected = {int(k): v for k, v in ref.items()} if isinstance(ref, dict) else {ref: layers}
    assert _kv_per_layer(_spec(name)) == expected


# Where vLLM keeps a recurrent state in another dtype than transformers' cache (fp32): the
# configs name no SSM dtype, and vLLM's mamba_ssm_cache_dtype "auto" is the model dtype
# (`MambaStateDtypeCalculator`, vllm/model_executor/layers/mamba/mamba_utils.py).
MODEL_DTYPE_STATE = {"Qwen3-Next-80B-A3B.json", "falcon_h1.json", "falcon_h1-gated-norm.json",
                     "granitemoehybrid-with-attention.json"}
_DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


@pytest.mark.parametrize("name", [n for n in FILES
                                  if _entries()[n].get("fixed_state_per_sequence")])
def test_fixed_state_has_the_shapes_transformers_allocates(name: str) -> None:
    """Conv windows: the same channels, kernel − 1 positions where transformers keeps all
    kernel positions (vLLM's layout, what engines allocate); recurrent states: the same
    elements per layer, over the same layers."""
    fixed = [layer for layer in state_layers(_spec(name)) if not layer.elements_per_token()]
    for tensor in _entries()[name]["fixed_state_per_sequence"]:
        shape, dtype = tensor["shape"][1:], _DTYPES[tensor["dtype"]]
        if tensor["tensor"].startswith("conv_states"):
            channels, kernel = shape
            holding = [f for f in fixed if f.conv_channels]
            assert {(f.conv_channels, f.conv_window) for f in holding} == {(channels,
                                                                           kernel - 1)}
            assert {f.conv_dtype or f.dtype for f in holding} == {dtype}
        else:
            elements = shape[0] * shape[1] * shape[2]
            holding = [f for f in fixed if f.state_elements]
            assert {f.state_elements for f in holding} == {elements}
            own = {f.dtype for f in holding}
            assert own == ({_spec(name).dtype} if name in MODEL_DTYPE_STATE else {dtype})
        assert sum(f.count for f in holding) == tensor["layers"]


def test_qwen3_next_and_qwen3_5_name_their_projections_differently() -> None:
    """Qwen3-Next fuses in_proj_qkvz and in_proj_ba; Qwen3.5 keeps four projections."""
    from llm_inventory.engine.tensors import model_tensors

    def names(spec: ModelSpec) -> set[str]:
        return {g.name.rsplit(".", 2)[-2] for g in model_tensors(spec)
                if ".linear_attn." in g.name}

    assert {"in_proj_qkvz", "in_proj_ba"} <= names(_spec("Qwen3-Next-80B-A3B.json"))
    split = names(_spec("Qwen3.5-27B.json"))
    assert {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"} <= split
    assert "in_proj_qkvz" not in split


def test_the_gated_attention_doubles_q_proj() -> None:
    spec = _spec("Qwen3.5-27B.json")
    assert spec.decoder is not None and spec.decoder.attn_output_gate
    assert spec.decoder.partial_rotary_factor == 0.25


@pytest.mark.parametrize(("name", "card_billions"), [
    # Model cards: Qwen3.5-397B-A17B, Qwen3.5-27B, Qwen3-Next-80B-A3B, NVIDIA Nemotron 3
    # Super 120B-A12B. Each names transformers' total, the MTP layers left out.
    ("Qwen--Qwen3.5-397B-A17B.json", 397), ("Qwen3.5-27B.json", 27),
    ("Qwen3-Next-80B-A3B.json", 80), ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json", 120),
])
def test_mtp_layers_are_counted_apart(name: str, card_billions: int) -> None:
    counted = count_parameters(_spec(name))
    assert counted.mtp_parameters > 0
    assert counted.total_with_mtp == counted.total + counted.mtp_parameters
    assert abs(counted.total / 1e9 - card_billions) < 1
    assert counted.total_with_mtp / 1e9 - card_billions > 0.4


def test_qwen3_next_notes_what_its_config_leaves_out() -> None:
    notes = " ".join(_spec("Qwen3-Next-80B-A3B.json").notes)
    assert "mamba_ssm_dtype" in notes and "fp32" in notes and "MTP" in notes


def test_nemotron_h_reads_its_pattern() -> None:
    """`hybrid_override_pattern`: M Mamba-2, * attention, - MLP, E MoE; Mamba and attention
    layers have no MLP, E layers are MoE, - layers a plain MLP."""
    spec = _spec("Nemotron-H-56B-Base-8K.json")
    stack = spec.decoder
    assert stack is not None
    pattern = json.loads(_path("Nemotron-H-56B-Base-8K.json").read_text())[
        "hybrid_override_pattern"]
    kinds = {"M": "mamba", "*": "full", "-": "mlp_only", "E": "mlp_only"}
    assert stack.kinds() == [kinds[c] for c in pattern]
    assert stack.at(pattern.index("M")).mlp == "none"
    assert stack.at(pattern.index("*")).mlp == "none"
    assert stack.at(pattern.index("-")).mlp == "plain"


def test_nemotron_h_block_list_and_pattern_agree() -> None:
    data = json.loads(_path("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json").read_text())
    names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
    listed = {k: v for k, v in data.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[c] for c in data["hybrid_override_pattern"]]
    assert count_parameters(from_hf_config(listed, "x")).total == count_parameters(
        _spec("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json")).total


def test_kimi_linear_reads_the_checkpoints_linear_attn_config() -> None:
    """The hub file keeps KDA's shape in linear_attn_config with 1-indexed layer lists
    (`KimiLinearConfig.__post_init__`); it builds what the same keys spelled out build."""
    base = json.loads(_path("kimi_linear.json").read_text())
    spelled = from_hf_config(base, "x").decoder
    assert spelled is not None
    kinds = spelled.kinds()
    nested = {k: v for k, v in base.items() if k not in (
        "layer_types", "linear_head_dim", "linear_num_heads", "linear_conv_kernel_dim")}
    nested["linear_attn_config"] = {
        "head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4,
        "full_attn_layers": [i + 1 for i, k in enumerate(kinds) if k == "mla"],
        "kda_layers": [i + 1 for i, k in enumerate(kinds) if k == "kda"]}
    assert from_hf_config(nested, "x").decoder == spelled


def test_falcon_h1_runs_attention_and_mamba_in_every_layer() -> None:
    spec = _spec("falcon_h1.json")
    assert spec.decoder is not None and spec.decoder.parallel_mixers == ["mamba"]
    runs = state_layers(spec)
    assert sum(r.count for r in runs if r.elements_per_token()) == spec.decoder.layers
    assert sum(r.count for r in runs if r.state_elements) == spec.decoder.layers


@pytest.mark.parametrize(("name", "patch", "field"), [
    ("Nemotron-H-56B-Base-8K.json", {"hybrid_override_pattern": "M*X"},
     "hybrid_override_pattern"),
    ("kimi_linear.json", {"linear_attn_config": {"num_heads": "32"}},
     "linear_attn_config.num_heads"),
    ("kimi_linear.json", {"layer_types": None,
                          "linear_attn_config": {"full_attn_layers": [0], "kda_layers": []}},
     "linear_attn_config.full_attn_layers"),
    ("Qwen3-Next-80B-A3B.json", {"layer_types": ["linear_attention"] * 3}, "layer_types"),
    ("Qwen3-Next-80B-A3B.json", {"mamba_ssm_dtype": "float33"}, "mamba_ssm_dtype"),
    ("lfm2-conv-layers.json", {"layer_types": ["conv"]}, "layer_types"),
    ("minimax.json", {"layer_types": ["sliding_attention"] * 32}, "layer_types"),
])
def test_malformed_configs_name_the_field(name: str, patch: dict[str, Any],
                                          field: str) -> None:
    from llm_inventory.errors import InputError

    data = {**json.loads(_path(name).read_text()), **patch}
    with pytest.raises(InputError) as caught:
        from_hf_config(data, "config.json")
    assert field in str(caught.value)


@pytest.mark.parametrize("name", ["Qwen3.5-27B.json", "Qwen3.5-35B-A3B.json",
                                  "Qwen--Qwen3.5-397B-A17B.json"])
def test_the_text_config_alone_is_the_language_model(name: str) -> None:
    """A `qwen3_5_text` / `qwen3_5_moe_text` config (Qwen3_5ForCausalLM) counts what the
    composite's language model and head hold (transformers' components)."""
    data = json.loads(_path(name).read_text())
    text = {**data["text_config"], "tie_word_embeddings": data["tie_word_embeddings"]}
    components = _entries()[name]["components"]
    counted = count_parameters(from_hf_config(text, "config.json"))
    assert counted.total == components["model.language_model"] + components["lm_head"]
