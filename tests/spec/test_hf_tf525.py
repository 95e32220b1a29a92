"""Model types transformers 5.25 added, exact against transformers on the meta device.

Every entry of tests/data/oracle-2026-tf525.json (tools/reference_counts.py with
transformers 5.25.0 and torch 2.13.0 on the meta device; its configs in
tests/data/transformers-defaults-2026/, each entry's `source` and `notes` say what the file
is): total, active, embedding and head parameters, the KV elements per token of each layer
a three-token meta forward caches, and the label: every one of these files is read exactly.
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
from llm_inventory.spec.model import LayerKind, ModelSpec
from tests.reference import DATA

ORACLE = DATA / "oracle-2026-tf525.json"
FOLDER = DATA / "transformers-defaults-2026"
VARIANTS = DATA / "configs-2026-variants"
ENTRIES: list[dict[str, Any]] = json.loads(ORACLE.read_text())
COUNTED = [e for e in ENTRIES if isinstance(e.get("total_params"), int)]
TYPES = ["afmoe", "arcee", "cohere2_moe", "cwm", "ernie4_5", "exaone", "exaone4_5", "exaone_moe",
         "flex_olmo", "glm", "glm4", "granitemoeshared", "helium",
         "internlm3", "iquestcoder", "jais2", "laguna", "lfm2_moe", "lfm3", "olmo_hybrid",
         "param2moe", "sarvam_mla", "sarvam_moe", "solar_open"]


def _spec(name: str) -> ModelSpec:
    path = FOLDER / name if (FOLDER / name).is_file() else VARIANTS / name
    return from_hf_config(json.loads(path.read_text()), name)


def test_every_type_has_a_counted_entry_from_5_25() -> None:
    assert sorted({e["model_type"] for e in COUNTED}) == TYPES
    assert all(e["versions"]["transformers"] == "5.25.0" for e in ENTRIES)
    assert all(e.get("source") for e in ENTRIES)


@pytest.mark.parametrize("entry", COUNTED, ids=lambda e: e["file"])
def test_parameters_match_transformers(entry: dict[str, Any]) -> None:
    spec = _spec(entry["file"])
    counted = count_parameters(spec)
    assert counted.total == entry["total_params"]
    assert counted.input_embedding == entry["input_embedding_params"]
    assert counted.lm_head == entry["output_head_params"]
    assert spec.exact, spec.estimated
    if entry.get("active_params") is not None:
        assert counted.active == entry["active_params"]


@pytest.mark.parametrize("entry", COUNTED, ids=lambda e: e["file"])
def test_kv_per_token_per_layer_matches_transformers(entry: dict[str, Any]) -> None:
    spec = _spec(entry["file"])
    assert spec.decoder is not None
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        found[layer.elements_per_token()] += layer.count
    expected = entry["kv_elems_per_token_per_layer"]
    if isinstance(expected, int):
        want = {expected: entry["kv_layers_with_kv"]}
    else:
        want = {int(k): v for k, v in expected.items()}
    assert dict(found) == want


def test_lfm2_moe_keeps_a_conv_window_on_its_conv_layers() -> None:
    """LFM2-8B-A1B's layout: 18 short-convolution layers hold a fixed window per sequence
    (transformers caches conv_states of [1, hidden, conv_L_cache]) and no per-token KV."""
    spec = _spec("lfm2_moe--layer-types-of-LFM2-8B-A1B.json")
    assert spec.decoder is not None
    kinds = Counter(spec.decoder.kinds())
    assert kinds == {LayerKind.SHORT_CONV: 18, LayerKind.FULL: 6}
    entry = next(e for e in ENTRIES if e["file"].startswith("lfm2_moe--"))
    conv = next(s for s in entry["fixed_state_per_sequence"] if s["tensor"].startswith("conv"))
    assert conv["layers"] == 18 and conv["shape"][1] == spec.decoder.hidden_size


def test_lfm2_moe_without_layer_types_is_an_error_naming_it() -> None:
    """Lfm2MoeConfig() leaves layer_types None and transformers cannot build it either
    (the bare defaults' entry carries the error)."""
    with pytest.raises(InputError, match="layer_types"):
        _spec("lfm2_moe.json")
    assert "error" in next(e for e in ENTRIES if e["file"] == "lfm2_moe.json")


def test_exaone_moe_dense_first_layer_and_shared_expert() -> None:
    """ExaoneMoeConfig(): mlp_layer_types makes layer 0 dense, the rest sparse; one shared
    MLP of moe_intermediate_size × num_shared_experts (ExaoneMoeSparseMoEBlock)."""
    spec = _spec("exaone_moe.json")
    assert spec.decoder is not None and spec.decoder.moe is not None
    moe = spec.decoder.moe
    assert not moe.is_moe_layer(0) and all(moe.is_moe_layer(i) for i in range(1, 32))
    assert (moe.shared_experts, moe.shared_intermediate_size) == (1, 1024)


def test_cohere2_moe_dense_prefix_from_first_k_dense_replace() -> None:
    """Cohere2MoeConfig.__post_init__: first_k_dense_replace makes a dense prefix of
    prefix_dense_intermediate_size (intermediate_size when null) whose sliding pattern is
    prefix_dense_sliding_window_pattern; the rest follow sliding_window_pattern."""
    data = json.loads((FOLDER / "cohere2_moe.json").read_text())
    for key in ("layer_types", "mlp_layer_types"):
        data.pop(key)
    data.update(first_k_dense_replace=2, prefix_dense_intermediate_size=4096,
                prefix_dense_sliding_window_pattern=2)
    spec = from_hf_config(data, "config.json")
    stack = spec.decoder
    assert stack is not None and stack.moe is not None
    assert [stack.moe.is_moe_layer(i) for i in range(3)] == [False, False, True]
    assert stack.at(0).intermediate_size == 4096 and stack.at(2).intermediate_size == 22528
    kinds = stack.kinds()
    assert kinds[:2] == [LayerKind.SLIDING, LayerKind.FULL]
    assert kinds[2:6] == [LayerKind.SLIDING] * 3 + [LayerKind.FULL]


def test_olmo_hybrid_gated_deltanet_layers_hold_a_fixed_state() -> None:
    """OlmoHybridConfig(): three Gated DeltaNet layers to one attention layer; the linear
    head widths default from hidden (0.75 × 3840 / 30 = 96 key, 192 value: transformers
    caches recurrent_states of [1, 30, 96, 192] and a conv window over 2 × 2880 + 5760
    channels)."""
    spec = _spec("olmo_hybrid.json")
    stack = spec.decoder
    assert stack is not None and stack.linear_attention is not None
    assert Counter(stack.kinds()) == {LayerKind.GDN: 24, LayerKind.FULL: 8}
    linear = stack.linear_attention
    assert (linear.key_heads, linear.key_head_dim, linear.v_heads, linear.v_dim) == (
        30, 96, 30, 192)
    entry = next(e for e in ENTRIES if e["file"] == "olmo_hybrid.json")
    shapes = {s["tensor"]: s["shape"] for s in entry["fixed_state_per_sequence"]}
    assert shapes["recurrent_states[0]"] == [1, 30, 96, 192]
    assert shapes["conv_states[0]"][1] == 2 * 30 * 96 + 30 * 192


def test_afmoe_expert_bias_is_a_parameter_and_global_layers_skip_rope() -> None:
    """AfmoeSparseMoeBlock.expert_bias is an nn.Parameter (transformers counts it);
    AfmoeAttention applies RoPE on sliding layers only."""
    spec = _spec("afmoe.json")
    stack = spec.decoder
    assert stack is not None and stack.moe is not None and stack.moe.router_bias
    full = stack.kinds().index(LayerKind.FULL)
    assert not stack.at(full).rope and stack.at(0).rope


def test_lfm3_gates_each_attention_head_and_keeps_sandwich_norms() -> None:
    """Lfm3Config(): 13 conv, 5 sliding and 6 full layers; g_proj (hidden → heads) on each
    of the 11 attention layers, four norms per layer with use_sandwich_norm."""
    spec = _spec("lfm3.json")
    stack = spec.decoder
    assert stack is not None
    assert Counter(stack.kinds()) == {LayerKind.SHORT_CONV: 13, LayerKind.SLIDING: 5,
                                      LayerKind.FULL: 6}
    (gate,) = stack.extra
    assert gate.shape == [16, 2048] and gate.layers is not None and len(gate.layers) == 11
    assert stack.norms_per_layer == 4
    off = from_hf_config({**json.loads((FOLDER / "lfm3.json").read_text()),
                          "use_attention_gate": False, "use_sandwich_norm": False}, "lfm3")
    drop = 11 * 16 * 2048 + 24 * 2 * 2048
    assert count_parameters(spec).total - count_parameters(off).total == drop


@pytest.mark.parametrize(("model_type", "builder"), [
    ("exaone", "llama"), ("internlm3", "llama"), ("iquestcoder", "llama"),
    ("param2moe", "glm4_moe"), ("sarvam_mla", "deepseek_v3"), ("sarvam_moe", "glm4_moe")])
def test_alias_types_read_by_the_class_transformers_builds(model_type: str,
                                                           builder: str) -> None:
    """Configuration classes of their own whose model is another type's class
    (models/auto/modeling_auto.py): the registry row names that type's builder, and the
    type's own class defaults fill what a file leaves out."""
    from llm_inventory.spec.hf import registry

    module, function, classes = registry.MODELS[model_type]
    assert function == builder and classes == ()
    assert _spec(f"{model_type}.json").exact


def test_exaone4_5_vision_blocks_use_grouped_query_attention() -> None:
    """Exaone4_5_VisionAttention: qkv of (16 + 2 × 8) × 224 rows with bias, where
    Qwen2.5-VL's has 3 × 16 heads; the language model is EXAONE 4's."""
    spec = _spec("exaone4_5.json")
    assert spec.encoder is not None and spec.decoder is not None
    assert (spec.encoder.stack.heads, spec.encoder.stack.kv_heads) == (16, 8)
    data = json.loads((FOLDER / "exaone4_5.json").read_text())
    mha = from_hf_config({**data, "vision_config": {**data["vision_config"],
                                                    "num_key_value_heads": 16}}, "mha")
    qkv_rows = 2 * 8 * 224
    assert count_parameters(mha).total - count_parameters(spec).total == 32 * qkv_rows * (
        3584 + 1)


def test_laguna_heads_and_gates_follow_each_layer() -> None:
    """num_attention_heads_per_layer sizes q/o and g_proj per layer; "per-element" gates
    one value per head channel (LagunaAttention)."""
    spec = _spec("laguna--per-layer-heads-sliding.json")
    stack = spec.decoder
    assert stack is not None
    assert [stack.at(i).heads for i in range(8)] == [48, 32, 32, 48, 32, 32, 32, 48]
    assert sorted(g.shape[0] for g in stack.extra) == [32, 48]
    wide = _spec("laguna--per-element-gate-bias.json").decoder
    assert wide is not None and sorted(g.shape[0] for g in wide.extra) == [32 * 128, 48 * 128]
