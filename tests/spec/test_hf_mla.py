"""This year's MLA and sparse-attention types against transformers' own counts and caches
(tests/data/oracle-2026.json, from tools/reference_counts.py with transformers 5.24.0 on the
meta device; GLM-4.7-Flash's in oracle-2026-glm4-moe-lite.json): DeepSeek-V3.2, GLM-5,
DeepSeek-V4, Kimi-K2 / K2.5, LongCat-Flash, GLM-4.7-Flash.

LongCat-Flash has no real config found; its class defaults stand in
(transformers-defaults-2026/longcat_flash.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.tensors import mtp_tensors
from llm_inventory.spec.hf import HFConfig, from_hf_config
from llm_inventory.spec.hf.deepseek import indexer_types
from llm_inventory.spec.hf.defaults import class_defaults
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

TYPES = ("deepseek_v32", "deepseek_v4", "glm4_moe_lite", "glm_moe_dsa", "kimi_k2", "kimi_k25",
         "longcat_flash")
FOLDERS = ("configs-2026", "configs-2026-more", "configs-2026-reported",
           "transformers-defaults-2026")


def _entries() -> list[dict[str, Any]]:
    data = [e for path in sorted(DATA.glob("oracle-2026*.json"))
            for e in json.loads(path.read_text())]
    return [e for e in data if e["model_type"] in TYPES]


def _path(name: str) -> Path:
    return next(DATA / f / name for f in FOLDERS if (DATA / f / name).exists())


def _spec(entry: dict[str, Any]) -> ModelSpec:
    path = _path(entry["file"])
    return from_hf_config(json.loads(path.read_text()), str(path))


ENTRIES = _entries()


def test_every_type_of_the_group_has_references() -> None:
    assert sorted({e["model_type"] for e in ENTRIES}) == sorted(TYPES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_and_active_match_transformers(entry: dict[str, Any]) -> None:
    p = count_parameters(_spec(entry))
    if entry.get("phantom_expert_params"):
        # transformers allocates gate_up rows for the zero experts; the resident count
        # leaves them out and says what transformers counts.
        assert p.total == entry["total_params_without_phantom_experts"]
        assert p.transformers_total == entry["total_params"]
        assert p.phantom_parameters == entry["phantom_expert_params"]
        assert p.active == p.active_max == entry["active_params_max"]
        assert p.active_min == entry["active_params_min"]
    else:
        assert p.total == entry["total_params"]
        assert p.active == entry["active_params"]
        assert p.transformers_total is None and p.active_min is None
    assert p.input_embedding == entry["input_embedding_params"]
    assert p.lm_head == entry["output_head_params"]
    assert p.moe_layers == entry["moe_layers"]
    assert p.parameters_per_expert == entry["params_per_routed_expert"]


def _per_layer(entry: dict[str, Any]) -> list[int]:
    by_layer = entry.get("kv_elems_per_token_by_layer")
    if by_layer is not None:
        return list(by_layer)
    return [entry["kv_elems_per_token_per_layer"]] * entry["kv_layers_with_kv"]


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["model_type"] != "deepseek_v4"],
                         ids=lambda e: e["file"])
def test_mla_latent_and_indexer_keys_are_the_meta_forward_cache(entry: dict[str, Any]) -> None:
    """One latent per token and layer; the indexer's key per token on the layers that run
    an indexer (transformers caches it as `indexer_keys`)."""
    layers = [run for run in state_layers(_spec(entry)) for _ in range(run.count)]
    assert [layer.latent_dim for layer in layers] == _per_layer(entry)
    keys = [s for s in entry.get("other_per_token_state", []) if s["tensor"] == "indexer_keys"]
    indexed = [layer.index_dim for layer in layers if layer.index_dim]
    assert indexed == [k["elems_per_token"] for k in keys for _ in range(k["layers"])]


V4 = [e for e in ENTRIES if e["model_type"] == "deepseek_v4"]


@pytest.mark.parametrize("entry", V4, ids=lambda e: e["file"])
def test_deepseek_v4_state_is_the_meta_forward_cache(entry: dict[str, Any]) -> None:
    """Every layer caches one K = V vector of head_dim per token in its window (the
    compressed layers' keys and values are one tensor; transformers' plain sliding layers
    store it twice); CSA layers grow 512 ÷ 4 + 128 ÷ 4 elements per token (compressed
    entries and indexer keys), HCA 512 ÷ 128."""
    layers = [run for run in state_layers(_spec(entry)) for _ in range(run.count)]
    names = {"sliding_attention": "swa_kv", "compressed_sparse_attention": "csa",
             "heavily_compressed_attention": "hca"}
    assert [layer.kind for layer in layers] == [names[t] for t in entry["layer_types"]]
    counted = entry["kv_elems_per_token_by_layer"] if "kv_elems_per_token_by_layer" in entry \
        else [entry["kv_elems_per_token_per_layer"]] * len(layers)
    window = entry["sliding_window"][0] if "sliding_window" in entry else 128
    for layer, elements in zip(layers, counted, strict=True):
        assert layer.window == window
        assert elements == layer.latent_dim * (2 if layer.kind == "swa_kv" else 1)
    if "long_run" in entry:
        growth: dict[str, int] = {}
        for row in entry["long_run"]["per_token"]:
            kind = "csa" if row["cache_layer"] == "DeepseekV4CSACache" else "hca"
            growth[kind] = growth.get(kind, 0) + row["elems_per_token"]
        for layer in layers:
            expected = growth.get(layer.kind, 0)
            assert kinds.get(layer.kind).token_elements(layer) == expected


# --- multi-token prediction ------------------------------------------------------------

def _preset(name: str) -> ModelSpec:
    path = Path("llm_inventory/data/presets") / f"{name}.json"
    return from_hf_config(json.loads(path.read_text()), str(path))


def test_deepseek_v3_mtp_reproduces_the_685b_checkpoint() -> None:
    """DeepSeek-V3's checkpoint stores 684,531,386,000 tensor elements (its safetensors
    metadata, as the hub lists it: the card's "685B" = 671B main model + MTP). That is the
    main model, the MTP layer 61 (a full MoE decoder layer, enorm, hnorm, eh_proj, the
    shared head's norm, and its own copies of embed_tokens and shared_head.head), plus what
    is not a parameter: one fp32 scale per 128 × 128 block of every FP8 weight (every Linear
    of the layers but the router and eh_proj) and the routers' e_score_correction_bias."""
    spec = _preset("deepseek-v3")
    p = count_parameters(spec)
    assert p.total == 671_026_404_352 and p.mtp_parameters == 13_463_426_048
    assert p.total_with_mtp == 684_489_830_400
    names = {g.name for g in mtp_tensors(spec)}
    assert {"model.layers.{i}.embed_tokens.weight", "model.layers.{i}.shared_head.head.weight",
            "model.layers.{i}.eh_proj.weight"} <= names
    scales = 0
    for g in mtp_tensors(spec) + _fp8_groups(spec):
        if not g.linear or ".gate.weight" in g.name:
            continue
        blocks = -(-g.shape[-2] // 128) * -(-g.shape[-1] // 128)
        scales += blocks * (g.experts or 1) * g.copies
    router_bias = (p.moe_layers + 1) * 256
    assert p.total_with_mtp + scales + router_bias == 684_531_386_000
    assert round((p.total_with_mtp + scales + router_bias) / 1e9) == 685


def _fp8_groups(spec: ModelSpec) -> list[Any]:
    from llm_inventory.engine.tensors import model_tensors

    return [g for g in model_tensors(spec) if g.component.value != "router"]


def test_mtp_layers_of_the_sparse_attention_models() -> None:
    """V3.2's MTP layer carries V3's plus an indexer; GLM's shares the main model's
    embedding and head and keeps its own indexer even where the last layer shares one."""
    v3 = count_parameters(_preset("deepseek-v3")).mtp_parameters
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    v32 = count_parameters(_spec(_by_file("DeepSeek-V3.2.json")))
    assert v32.mtp_parameters == v3 + indexer
    glm = _spec(_by_file("zai-org--GLM-5.2.json"))
    names = {g.name for g in mtp_tensors(glm)}
    assert "model.layers.{i}.self_attn.indexer.wq_b.weight" in names
    assert not {"model.layers.{i}.embed_tokens.weight",
                "model.layers.{i}.shared_head.head.weight"} & names
    assert glm.decoder is not None and glm.decoder.at(77).shares_indexer


def _by_file(name: str) -> dict[str, Any]:
    return next(e for e in ENTRIES if e["file"] == name)


def test_kimi_k2_has_no_mtp_and_reads_as_deepseek_v3() -> None:
    spec = _spec(_by_file("Kimi-K2-Instruct.json"))
    assert count_parameters(spec).mtp_parameters == 0
    assert any("DeepseekV3ForCausalLM" in note and "kimi_k2" in note for note in spec.notes)


def test_kimi_k25_counts_its_vision_tower_exactly() -> None:
    entry = _by_file("Kimi-K2.5.json")
    parts = {c.component.value: c.parameters
             for c in count_parameters(_spec(entry)).by_component}
    assert parts["encoder"] == entry["components"]["model.vision_tower"]
    assert parts["projector"] == entry["components"]["model.mm_projector"]


@pytest.mark.parametrize("kernel", [[1, [1, 2]], [2, {"a": 1}], [2, None], "x", [2], [0, 2]])
def test_kimi_k25_merge_kernel_must_be_two_positive_integers(kernel: Any) -> None:
    """An entry of another JSON type once raised TypeError in int() (exit 3)."""
    from llm_inventory.errors import InputError

    data = json.loads(_path("Kimi-K2.5.json").read_text())
    data["vision_config"]["merge_kernel_size"] = kernel
    with pytest.raises(InputError, match="merge_kernel_size"):
        from_hf_config(data, "config.json")


@pytest.mark.parametrize("model_type", [1073741824, "no_such_model", ["deepseek_v3"]])
def test_kimi_k25_text_model_type_must_be_one_the_registry_reads(model_type: Any) -> None:
    """An unknown or non-string text_config.model_type once raised KeyError (exit 3)."""
    from llm_inventory.errors import InputError

    data = json.loads(_path("Kimi-K2.5.json").read_text())
    data["text_config"]["model_type"] = model_type
    with pytest.raises(InputError, match="model_type"):
        from_hf_config(data, "config.json")


# --- GLM IndexShare, LongCat ranges --------------------------------------------------------

def _glm(data: dict[str, Any]) -> HFConfig:
    return HFConfig(data, "config.json", defaults=class_defaults("glm_moe_dsa").filled)


@pytest.mark.parametrize(("data", "full"), [
    ({}, list(range(6))),
    ({"index_topk_freq": 4, "index_skip_topk_offset": 3}, [0, 1, 2]),
    ({"index_topk_freq": 2}, [0, 1, 3, 5]),
    ({"index_topk_pattern": "FSFSSF"}, [0, 2, 5]),
    ({"indexer_types": ["full", "shared", "shared", "full", "shared", "full"],
      "index_topk_freq": 4}, [0, 3, 5]),
])
def test_glm_indexer_types_follow_the_configuration_class(data: dict[str, Any],
                                                          full: list[int]) -> None:
    """`GlmMoeDsaConfig.__post_init__`: explicit list, then the F/S pattern, then
    full where max(i − offset + 1, 0) % freq == 0 (freq 1, offset 2 by default)."""
    modes = indexer_types(_glm(data), 6)
    assert [i for i, mode in enumerate(modes) if mode == "full"] == full


def test_glm_52_runs_its_indexer_on_a_quarter_of_the_layers() -> None:
    spec = _spec(_by_file("zai-org--GLM-5.2.json"))
    layers = [run for run in state_layers(spec) for _ in range(run.count)]
    assert sum(1 for layer in layers if layer.index_dim) == 21


def test_longcat_active_is_a_range_with_an_even_spread_expectation() -> None:
    """12 picks over 512 real + 256 zero experts: on average 8 real ones (the model card's
    "about 27B active" is this figure without the input embedding)."""
    p = count_parameters(_spec(_by_file("longcat_flash.json")))
    assert p.active_min is not None and p.active_max is not None
    assert p.active_expected == p.active_min + 8 * 37_748_736 * 28
    assert round((p.active_expected - p.input_embedding) / 1e9) == 27
    assert p.active_min < p.active_expected < p.active_max


def test_deepseek_v4_mtp_is_a_sliding_layer_with_its_own_hyper_head() -> None:
    """DeepSeek's `MTPBlock`: a full V4 layer whose attention follows the extra entry of
    `compress_ratios` (0: sliding-only, no compressor or indexer), e_proj and h_proj, three
    norms and its hyper-head; embedding and head are shared, so no copies."""
    spec = _spec(_by_file("DeepSeek-V4-Flash.json"))
    assert spec.decoder is not None and spec.decoder.mtp is not None
    assert spec.decoder.mtp.kind == "swa_kv"
    names = {g.name for g in mtp_tensors(spec)}
    assert "model.layers.{i}.e_proj.weight" in names and "model.layers.{i}.hc_head_fn" in names
    assert not any("compressor" in n or "embed_tokens" in n for n in names)
    p = count_parameters(spec)
    layer = 6_576_416_374  # one sliding layer: attention, MoE, norms, both mHC blocks
    assert p.mtp_parameters == layer + 2 * 4096 * 4096 + 3 * 4096 + 4 * 16384 + 4 + 1


def test_glm_4_7_flash_mtp_layer_is_the_checkpoints() -> None:
    """GLM-4.7-Flash's checkpoint (its tensor table: 31,221,488,576 parameters in 9,703
    tensors) holds transformers' model, one MTP layer with its own embedding and head copies
    (layer 47), and 47 router score-correction biases of 64 that transformers keeps as
    buffers, not parameters."""
    (entry,) = [e for e in ENTRIES if e["file"] == "zai-org--GLM-4.7-Flash.json"]
    spec = _spec(entry)
    counted = count_parameters(spec)
    assert counted.total_with_mtp is not None
    assert counted.total_with_mtp + 47 * 64 == entry["checkpoint"]["parameters"]
    names = {g.name for g in mtp_tensors(spec)}
    assert {"model.layers.{i}.embed_tokens.weight",
            "model.layers.{i}.shared_head.head.weight"} <= names


def test_glm_4_7_flash_dense_layer_is_layer_0_whatever_first_k_dense_replace_says() -> None:
    """Glm4MoeLiteConfig has no first_k_dense_replace: without mlp_layer_types layer 0 alone
    is dense (its __post_init__); mlp_layer_types, when given, rules."""
    (entry,) = [e for e in ENTRIES if e["file"] == "zai-org--GLM-4.7-Flash.json"]
    data = json.loads(_path(entry["file"]).read_text())
    three = from_hf_config({**data, "first_k_dense_replace": 3}, "flash")
    assert count_parameters(three).moe_layers == 46
    assert any("first_k_dense_replace 3 is not read" in note for note in three.notes)
    listed = {**data, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 44}
    assert count_parameters(from_hf_config(listed, "flash")).moe_layers == 44
