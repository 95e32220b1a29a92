"""This year's large MoE decoders against their reference figures, to the parameter.

oracle-2026.json: transformers 5.24.0 on the meta device (tools/reference_counts.py);
checkpoint-code-counts.json: the checkpoints' own modelling code where transformers has no
class (tools/checkpoint_code_counts.py). Each entry's total, active, per-expert and MoE-layer
figures, input embedding and head, and the K/V elements each layer's cache grows by per token
are compared exactly.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.tensors import model_tensors, mtp_tensors
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import Component, ModelSpec
from tests.reference import DATA

# The model types this file answers for; every one must have reference figures here.
TYPES = {"bailing_moe", "dbrx", "dots1", "ernie4_5_moe", "glm4_moe", "granitemoe", "hunyuan",
         "hunyuan_v1_moe", "llama4", "mimo", "mimo_v2_flash", "minimax_m2", "minimax_m3",
         "phimoe", "step3p7"}
FOLDERS = ("configs-2026", "configs-2026-more", "transformers-defaults-2026",
           "configs-2026-checkpoint-code")


@cache
def _entries() -> list[dict[str, Any]]:
    oracle = json.loads((DATA / "oracle-2026.json").read_text())
    own = json.loads((DATA / "checkpoint-code-counts.json").read_text())["entries"]
    found = [e for e in [*oracle, *own] if e["model_type"] in TYPES and "error" not in e]
    return sorted(found, key=lambda e: (e.get("folder", ""), e["file"]))


def _path(entry: dict[str, Any]) -> Path:
    folders = [entry["folder"]] if "folder" in entry else FOLDERS
    (hit,) = [DATA / f / entry["file"] for f in folders if (DATA / f / entry["file"]).exists()]
    return hit


def _spec(entry: dict[str, Any]) -> ModelSpec:
    path = _path(entry)
    return from_hf_config(json.loads(path.read_text()), path.name)


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['model_type']}:{entry['file']}"


def test_every_type_has_figures() -> None:
    assert {e["model_type"] for e in _entries()} == TYPES


@pytest.mark.parametrize("entry", _entries(), ids=_id)
def test_parameters_are_exact(entry: dict[str, Any]) -> None:
    counted = count_parameters(_spec(entry))
    assert counted.total == entry["total_params"]
    assert counted.input_embedding == entry["input_embedding_params"]
    assert counted.lm_head == entry["output_head_params"]
    if "num_experts" in entry:
        assert counted.active == entry["active_params"]
        assert counted.experts == entry["num_experts"]
        assert counted.top_k == entry["experts_per_token"]
        assert counted.moe_layers == entry["moe_layers"]
        assert counted.parameters_per_expert == entry["params_per_routed_expert"]


def _kv_by_layer(spec: ModelSpec) -> list[int]:
    per: list[int] = []
    for run in state_layers(spec):
        # The reference lists a sparse-attention indexer's keys apart from the K/V.
        per += [run.elements_per_token() - run.index_dim] * run.count
    return per


@pytest.mark.parametrize("entry", [e for e in _entries() if "kv_elems_per_token" in e], ids=_id)
def test_kv_per_token_per_layer_is_the_meta_forward_cache(entry: dict[str, Any]) -> None:
    by_layer = entry.get("kv_elems_per_token_by_layer") or (
        [entry["kv_elems_per_token_per_layer"]] * entry["kv_layers_with_kv"])
    assert _kv_by_layer(_spec(entry)) == by_layer
    assert sum(by_layer) == entry["kv_elems_per_token"]


# --- per-layer shapes ------------------------------------------------------------------------

def _load(relative: str) -> dict[str, Any]:
    return dict(json.loads((DATA / relative).read_text()))


def test_mimo_v2_sliding_layers_double_the_kv_heads_and_carry_sinks() -> None:
    """MiMo-V2-Flash: 9 full layers of 4 KV heads (K 192, V 128 wide) and 39 sliding ones of
    8, with 64 per-head sinks on the sliding layers only (transformers'
    MiMoV2FlashAttention: 39 `sinks` parameters)."""
    spec = from_hf_config(_load("configs-2026/MiMo-V2-Flash.json"), "MiMo-V2-Flash")
    groups = {g.name: g for g in model_tensors(spec)}
    sinks = groups["model.layers.{i}.self_attn.sinks"]
    assert sinks.shape == (64,) and len(sinks.layers) == 39
    assert sorted({run.kv_heads for run in state_layers(spec)}) == [4, 8]
    assert spec.decoder is not None and spec.decoder.sliding_window == 128


def test_step_gate_is_one_weight_per_head() -> None:
    """Step3p7Attention.g_proj: Linear(hidden, heads) on every layer (`gating` per head)."""
    spec = from_hf_config(_load("configs-2026/Step-3.7-Flash.json"), "Step-3.7-Flash")
    gates = [g for g in model_tensors(spec) if g.name.endswith("g_proj.weight")]
    assert {g.shape for g in gates} == {(64, 4096)}
    assert sum(g.copies for g in gates) == 45
    assert {g.component for g in gates} == {Component.ATTENTION}


def test_step_sliding_layers_may_have_their_own_head_count() -> None:
    """The hub's attention_other_setting (Step3p7TextConfig reads it as
    num_sliding_attention_heads) widens q, o and the gate on the sliding layers only."""
    data = {**_load("configs-2026/Step-3.7-Flash.json"),
            "attention_other_setting": {"num_attention_heads": 96}}
    wide = count_parameters(from_hf_config(data, "step")).total
    base = count_parameters(from_hf_config(_load("configs-2026/Step-3.7-Flash.json"),
                                           "step")).total
    # 33 sliding layers × 32 more heads × (q 128 + o 128 + gate 1) × hidden 4096.
    assert wide - base == 33 * 32 * (128 + 128 + 1) * 4096


def test_ernie_score_correction_bias_is_a_parameter() -> None:
    """Ernie4_5_MoeStatics holds e_score_correction_bias as an nn.Parameter (64 per MoE
    layer, in the reference total); GLM-4.5's is a buffer and counts nothing."""
    ernie = from_hf_config(_load("transformers-defaults-2026/ernie4_5_moe.json"), "ernie")
    (bias,) = [g for g in model_tensors(ernie) if "e_score_correction_bias" in g.name]
    assert bias.shape == (64,) and bias.copies == 27
    glm = from_hf_config(_load("transformers-defaults-2026/glm4_moe.json"), "glm")
    assert not [g for g in model_tensors(glm) if "correction" in g.name]


def test_ernie_use_bias_biases_the_shared_mlp_but_not_the_experts() -> None:
    """Ernie4_5_MoeConfig() with use_bias true: 21,825,975,488 parameters (transformers
    5.24.0 on the meta device, tools/reference_counts.py on that variant of
    transformers-defaults-2026/ernie4_5_moe.json)."""
    data = {**_load("transformers-defaults-2026/ernie4_5_moe.json"), "use_bias": True}
    assert count_parameters(from_hf_config(data, "ernie")).total == 21_825_975_488


def test_minimax_m2_refuses_lightning_layers() -> None:
    from llm_inventory.errors import InputError

    data = {**_load("configs-2026/MiniMax-M2.5.json"), "attn_type_list": [0] + [1] * 61}
    with pytest.raises(InputError, match="attn_type_list"):
        from_hf_config(data, "config.json")


def test_minimax_m3_indexed_layers_keep_the_meta_forward_index_keys() -> None:
    """MiniMax-M3: the layers transformers types `minimax_m3_sparse` run the indexer and
    cache one `idx_keys` vector of 128 per token beside their K/V (oracle-2026.json)."""
    (entry,) = [e for e in _entries() if e["model_type"] == "minimax_m3"]
    layers = [run for run in state_layers(_spec(entry)) for _ in range(run.count)]
    names = {"full_attention": "full", "minimax_m3_sparse": "indexed_gqa"}
    assert [layer.kind for layer in layers] == [names[t] for t in entry["layer_types"]]
    (keys,) = entry["other_per_token_state"]
    assert keys["tensor"] == "idx_keys"
    assert [layer.index_dim for layer in layers if layer.index_dim] == \
        [keys["elems_per_token"]] * keys["layers"]


def test_minimax_m3_mtp_modules_are_vllm_drafter_layers() -> None:
    """num_mtp_modules (7) layers, as vLLM's MiniMaxM3MultiTokenPredictorLayer builds each
    (vllm/models/minimax_m3/nvidia/mtp.py): a sparse-attention decoder layer with the MoE
    block (q/k/v/o 106,954,752 + q/k norms 256; indexer 3,932,416; experts 7,247,757,312,
    router 786,432, shared expert 56,623,104; two layer norms 12,288), enorm, hnorm and
    final_layernorm (18,432) and eh_proj (2 × 6,144 → 6,144: 75,497,472): 7,491,582,464."""
    spec = from_hf_config(_load("configs-2026/MiniMax-M3.json"), "m3")
    counted = count_parameters(spec)
    assert counted.mtp_parameters == 7 * 7_491_582_464
    assert counted.total_with_mtp == counted.total + counted.mtp_parameters
    assert any("num_nextn_predict_layers says 1" in note for note in spec.notes)
    one = {**_load("configs-2026/MiniMax-M3.json"), "num_mtp_modules": 1}
    assert count_parameters(from_hf_config(one, "m3")).mtp_parameters == 7_491_582_464


@pytest.mark.parametrize(("patch", "field"), [
    ({"qk_norm_type": "per_layer"}, "qk_norm_type"),
    ({"attention_output_gate": True}, "attention_output_gate"),
    ({"moe_layer_freq": [0, 1]}, "moe_layer_freq"),
    ({"mlp_layer_types": ["sparse"] * 59}, "mlp_layer_types"),
    ({"sparse_attention_config": {"sparse_attention_freq": [1] * 60,
                                  "sparse_disable_index_value": [0] * 60}},
     "sparse_disable_index_value"),
    # a sparse layer with no index shapes (neither the hub's nor transformers' spelling)
    ({"sparse_attention_config": {"sparse_attention_freq": [1] * 60}}, "index_"),
])
def test_minimax_m3_refuses_what_it_cannot_build(patch: dict[str, Any], field: str) -> None:
    from llm_inventory.errors import InputError

    with pytest.raises(InputError, match=field):
        from_hf_config({**_load("configs-2026/MiniMax-M3.json"), **patch}, "config.json")


def test_minimax_m3_reads_transformers_spellings_too() -> None:
    """MiniMaxM3VLTextConfig's own keys (flat index_*, layer_types, mlp_layer_types) build
    the same model as the hub file's nested sparse_attention_config and moe_layer_freq."""
    hub = _load("configs-2026/MiniMax-M3.json")
    sparse = hub["sparse_attention_config"]
    flat = {k: v for k, v in hub.items() if k not in ("sparse_attention_config",
                                                        "moe_layer_freq")}
    flat |= {"index_n_heads": 4, "index_head_dim": 128, "index_block_size": 128,
             "index_topk_blocks": 16,
             "layer_types": ["minimax_m3_sparse" if f else "full_attention"
                             for f in sparse["sparse_attention_freq"]],
             "mlp_layer_types": ["sparse" if f else "dense" for f in hub["moe_layer_freq"]]}
    ours, theirs = from_hf_config(hub, "hub"), from_hf_config(flat, "flat")
    assert ours.decoder == theirs.decoder
    assert count_parameters(theirs).total == 426_174_565_632


def test_glm_dense_layers_come_first_and_mtp_is_counted_apart() -> None:
    """Glm4MoeConfig: first_k_dense_replace 1 (layer 0 dense) and one MTP layer
    (num_nextn_predict_layers), which the main model leaves out. transformers 5.24.0's
    MtpModel(Glm4MoeForCausalLM(Glm4MoeConfig()), 1) on the meta device holds 2,301,775,872
    parameters of its own (enorm, hnorm, eh_proj, the MoE decoder layer, the post norm); it
    shares the embedding and head, of which the checkpoint stores one more copy each
    (`embed_tokens`, `shared_head.head`: 151,552 × 4,096)."""
    spec = from_hf_config(_load("transformers-defaults-2026/glm4_moe.json"), "glm")
    counted = count_parameters(spec)
    assert counted.moe_layers == 45
    assert counted.mtp_parameters == 2_301_775_872 + 2 * 151552 * 4096
    assert counted.total_with_mtp == counted.total + counted.mtp_parameters
    assert {g.component for g in mtp_tensors(spec)} == {Component.MTP}


def test_step_mtp_layers_are_dense_as_transformers_types_them() -> None:
    """Step-3.7-Flash's three MTP layers: with no moe_layers_enum, Step3p7TextConfig's MoE set
    stops at layer 44, so their MLPs are dense. MtpModel over the text model (mtp_layer_types
    full_attention, transformers 5.24.0, meta device) holds 743,240,448 parameters of its own;
    each layer's checkpoint copy adds its own head (128,896 × 4,096)."""
    data = _load("configs-2026/Step-3.7-Flash.json")
    counted = count_parameters(from_hf_config(data, "step"))
    assert counted.mtp_parameters == 743_240_448 + 3 * 128896 * 4096
    sparse = {**data, "moe_layers_enum": ",".join(map(str, range(3, 48)))}
    assert count_parameters(from_hf_config(sparse, "step")).mtp_parameters > 15_000_000_000


def test_mimo_mtp_matches_the_checkpoint_index() -> None:
    """MiMo-7B's checkpoint (its safetensors index, BF16 throughout: 2 bytes a parameter)
    holds the Qwen2 model transformers builds plus one MTP layer of 16 tensors."""
    index = _load("configs-2026-checkpoint-code/jj8127--mimo_kor--model.safetensors.index.json")
    counted = count_parameters(from_hf_config(_load("configs-2026/MiMo-7B-Base.json"), "mimo"))
    assert counted.total_with_mtp is not None
    assert counted.total_with_mtp * 2 == index["metadata"]["total_size"]
    mtp_names = [n for n in index["weight_map"] if ".mtp_layers." in n]
    spec = from_hf_config(_load("configs-2026/MiMo-7B-Base.json"), "mimo")
    assert sum(g.copies for g in mtp_tensors(spec)) == len(mtp_names) == 16


def test_hunyuan_file_reads_the_same_as_transformers_class() -> None:
    """The hub Hunyuan-A13B file (model_type hunyuan, the checkpoint's code) and the same file
    as transformers' hunyuan_v1_moe build the same 80,393,183,232 parameters."""
    data = _load("configs-2026/Hunyuan-A13B-Instruct.json")
    own = count_parameters(from_hf_config(data, "hunyuan"))
    ported = count_parameters(from_hf_config({**data, "model_type": "hunyuan_v1_moe"}, "v1"))
    assert own.total == ported.total == 80_393_183_232
    assert own.active == ported.active


def test_hunyuan_cross_layer_attention_drops_kv_projections_not_cache() -> None:
    """use_cla with cla_share_factor 2: the 16 odd layers have no k_proj or v_proj (16 × 2 ×
    1024 × 4096 fewer parameters) and still cache the K/V they reuse (the checkpoint code's
    meta forward: 2,048 elements in each of 32 layers)."""
    base = _load("configs-2026/Hunyuan-A13B-Instruct.json")
    cla = _load("configs-2026-checkpoint-code/Hunyuan-A13B-Instruct--use-cla.json")
    spec = from_hf_config(cla, "cla")
    assert spec.decoder is not None
    assert spec.decoder.kinds()[:4] == ["full", "cla", "full", "cla"]
    fewer = count_parameters(from_hf_config(base, "a13b")).total - count_parameters(spec).total
    assert fewer == 16 * 2 * 1024 * 4096
    assert _kv_by_layer(spec) == [2048] * 32
    assert kinds.get("cla").release != kinds.get("shared").release


def test_hunyuan_refuses_mla() -> None:
    from llm_inventory.errors import InputError

    with pytest.raises(InputError, match="use_mla"):
        from_hf_config({**_load("configs-2026/Hunyuan-A13B-Instruct.json"), "use_mla": True},
                       "config.json")


@pytest.mark.parametrize("odd", [[1, 2], {"a": 1}, None, "x"])
@pytest.mark.parametrize("key", ["num_shared_expert", "moe_topk", "moe_intermediate_size"])
def test_hunyuan_per_layer_lists_of_any_json_type_are_bad_input(key: str, odd: Any) -> None:
    """An entry that cannot be hashed or ordered once raised TypeError (exit 3). The model
    code never reads moe_intermediate_size: a note says it differs, as for any value."""
    from llm_inventory.errors import InputError

    config = _load("configs-2026-checkpoint-code/Hunyuan-A13B-Instruct--use-cla.json")
    layers = config["num_hidden_layers"]
    value = [config[key][0] if isinstance(config[key], list) else config[key]] * layers
    value[layers // 2] = odd
    if key == "moe_intermediate_size":
        spec = from_hf_config({**config, key: value}, "config.json")
        noted = any(note.startswith(f"{key} [") for note in spec.notes)
        assert noted == (odd is not None)  # the other entries equal intermediate_size
        return
    with pytest.raises(InputError, match=key):
        from_hf_config({**config, key: value}, "config.json")


def test_llama4_maverick_interleaves_moe_layers() -> None:
    """interleave_moe_layer_step 2: 24 of 48 layers MoE (odd ones), each 128 experts of 8,192
    plus a shared one; dense layers use intermediate_size_mlp 16,384; chunked attention on
    three layers of every four (no_rope_layers' default), full on the fourth."""
    spec = from_hf_config(_load(
        "configs-2026-more/meta-llama--Llama-4-Maverick-17B-128E-Instruct.json"), "maverick")
    stack = spec.decoder
    assert stack is not None and stack.moe is not None
    assert [i for i in range(48) if stack.moe.is_moe_layer(i)] == list(range(1, 48, 2))
    assert stack.kinds()[:4] == ["chunked", "chunked", "chunked", "full"]
    assert stack.intermediate_size == 16384


@pytest.mark.parametrize(("base", "patch", "field"), [
    ("configs-2026/Hunyuan-A13B-Instruct.json", {"moe_topk": [8] * 31 + [4]}, "moe_topk"),
    ("configs-2026/Hunyuan-A13B-Instruct.json", {"moe_topk": [8] * 3}, "moe_topk"),
    ("configs-2026/MiMo-V2-Flash.json", {"hybrid_layer_pattern": [0, 2] + [1] * 46},
     "hybrid_layer_pattern"),
    ("configs-2026/MiMo-V2-Flash.json", {"moe_layer_freq": [0, 1]}, "mlp_layer_types"),
    ("configs-2026/Step-3.7-Flash.json", {"moe_layers_enum": "3,x"}, "moe_layers_enum"),
    ("configs-2026/Step-3.7-Flash.json", {"layer_types": ["full_attention"] * 7}, "layer_types"),
    ("transformers-defaults-2026/dbrx--attn-rope-theta.json",
     {"ffn_config": {"moe_num_experts": "16"}}, "moe_num_experts"),
])
def test_malformed_configs_name_the_field(base: str, patch: dict[str, Any],
                                          field: str) -> None:
    from llm_inventory.errors import InputError

    with pytest.raises(InputError, match=field):
        from_hf_config({**_load(base), **patch}, "config.json")
