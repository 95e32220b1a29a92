"""Exactness is earned per config: a count is `exact` only when its model type is read by
its own builder (or one tested for it), every sub-config was modelled, and every key of the
file was read by the builder or is on the reviewed shape-irrelevant list (spec/hf/
irrelevant.py). Anything else is an estimate naming the keys it did not understand.

tests/data/exactness-pinned.json pins, for every Hugging Face config under tests/data, the
keys that make it an estimate (an empty list: exact). A change is deliberate:
UPDATE_EXACTNESS=1 rewrites it from a fresh run.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.spec.hf import HFConfig, from_hf_config, reads
from llm_inventory.spec.hf.irrelevant import BY_CLASS, SHAPE_IRRELEVANT
from llm_inventory.spec.model import Family
from tests.conftest import Invoke
from tests.reference import DATA

PINNED = DATA / "exactness-pinned.json"
MARK = "keys the importer does not read, which may shape the model: "


def _load(relative: str) -> dict[str, Any]:
    return dict(json.loads((DATA / relative).read_text()))


def _unread(estimated: str | None) -> list[str]:
    if not estimated or MARK not in estimated:
        return []
    return estimated.split(MARK, 1)[1].split("; ")[0].split(", ")


def test_an_unknown_shape_key_turns_exact_into_estimate() -> None:
    data = _load("models/Llama-3.1-8B.json")
    assert from_hf_config(data, "config.json").exact
    spec = from_hf_config({**data, "expert_latent_dim": 3584}, "config.json")
    assert not spec.exact
    assert spec.estimated is not None and "expert_latent_dim" in spec.estimated
    assert any("expert_latent_dim" in note for note in spec.notes)


def test_an_unknown_key_in_a_sub_config_is_named_with_its_path() -> None:
    data = _load("models/Qwen2.5-VL-7B-Instruct.json")
    assert from_hf_config(data, "config.json").exact
    changed = copy.deepcopy(data)
    changed["vision_config"]["expert_latent_dim"] = 64
    spec = from_hf_config(changed, "config.json")
    assert not spec.exact and "vision_config.expert_latent_dim" in (spec.estimated or "")


def test_a_shape_irrelevant_key_keeps_it_exact() -> None:
    data = _load("models/Llama-3.1-8B.json")
    spec = from_hf_config({**data, "pad_token_id": 7, "router_aux_loss_coef": 0.01},
                          "config.json")
    assert spec.exact and spec.estimated is None


def test_a_switch_at_its_inert_value_is_moot_and_on_it_is_not() -> None:
    data = {**_load("models/Llama-3.1-8B.json"), "add_cross_attention": False}
    assert from_hf_config(data, "config.json").exact
    on = from_hf_config({**data, "add_cross_attention": True}, "config.json")
    assert not on.exact and "add_cross_attention" in (on.estimated or "")


def test_a_sub_config_never_opened_is_not_modelled() -> None:
    data = {**_load("models/Llama-3.1-8B.json"),
            "audio_config": {"hidden_size": 1280, "num_hidden_layers": 32}}
    spec = from_hf_config(data, "config.json")
    assert not spec.exact and "audio_config" in (spec.estimated or "")


def test_unknown_type_shaped_like_deepseek_is_an_estimate_naming_why() -> None:
    """A DeepSeek-V3-class file of a model type no builder is tested for, carrying latent
    expert keys the builder never reads (a synthetic stand-in): an estimate for both
    reasons, never exact."""
    data = {**_load("models/DeepSeek-V3.json"), "model_type": "kimi_k9",
            "n_routed_experts": 896, "expert_latent_dim": 3584, "expert_latent_proj": True}
    spec = from_hf_config(data, "config.json")
    assert not spec.exact
    assert spec.estimated is not None
    assert "'kimi_k9'" in spec.estimated and "expert_latent_dim" in spec.estimated


def test_kimi_k2_read_as_deepseek_v3_stays_exact() -> None:
    """kimi_k2 has no transformers class; read as DeepSeek-V3 it matches the reference
    (tests/data/oracle-2026.json), so it is on the tested list."""
    spec = from_hf_config(_load("configs-2026/Kimi-K2-Instruct.json"), "config.json")
    assert spec.exact


def test_an_unknown_wrapper_estimates_its_tower_instead_of_dropping_it() -> None:
    text = _load("models/Llama-3.1-8B.json")
    vision = {"model_type": "nonesuch_vision", "hidden_size": 1152, "num_hidden_layers": 27,
              "num_attention_heads": 16, "intermediate_size": 4304, "patch_size": 14,
              "num_channels": 3}
    wrapper = {"model_type": "nonesuch_vl", "text_config": text, "vision_config": vision}
    spec = from_hf_config(wrapper, "config.json")
    alone = from_hf_config(text, "config.json")
    assert not spec.exact and spec.family is Family.VLM and spec.encoder is not None
    extra = count_parameters(spec).total - count_parameters(alone).total
    # 27 pre-norm layers: 4·h² + 4·h attention, 2·h·i + h + i MLP, two LayerNorms (4·h).
    h, i = 1152, 4304
    layer = 4 * h * h + 4 * h + 2 * h * i + h + i + 4 * h
    tower = 27 * layer + 2 * h + h * 3 * 14 * 14
    projector = (h * 4096 + 4096) + (4096 * 4096 + 4096)
    assert extra == tower + projector
    assert any("generic vision transformer" in note for note in spec.notes)


def test_reads_are_recorded_through_every_accessor() -> None:
    with reads.recording() as seen:
        c = HFConfig({"a": 1, "b": 2.0, "c": True, "d": [1], "e": ["x"], "f": {"g": 1},
                      "h": 1}, "cfg")
        c.integer("a"), c.number("b"), c.flag("c"), c.int_list("d"), c.str_list("e")
        c.sub("f").integer("g")
        _ = "h" in c.data
    assert seen == {"cfg": {"a", "b", "c", "d", "e", "f", "h"}, "cfg: f": {"g"}}


def test_the_irrelevant_lists_hold_no_obvious_shape_key() -> None:
    shape = {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "vocab_size", "num_key_value_heads", "head_dim", "num_experts",
             "n_routed_experts", "moe_intermediate_size", "tie_word_embeddings",
             "sliding_window", "layer_types", "num_local_experts", "pruned_heads"}
    assert not shape & SHAPE_IRRELEVANT
    assert all(reason for keys in BY_CLASS.values() for reason in keys.values())


def _configs() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(DATA.rglob("*.json")):
        relative = str(path.relative_to(DATA))
        if "sub-configs" in relative:
            continue
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("model_type"), str):
            found[relative] = data
    return found


def _current() -> dict[str, list[str]]:
    status = {}
    for relative, data in _configs().items():
        try:
            spec = from_hf_config(data, relative)
        except Exception:  # noqa: BLE001 - a file no builder reads is not pinned
            continue
        if spec.exact:
            status[relative] = []
        elif MARK in (spec.estimated or ""):
            status[relative] = _unread(spec.estimated)
    return status


def test_every_config_s_exactness_is_pinned() -> None:
    current = _current()
    if os.environ.get("UPDATE_EXACTNESS"):
        PINNED.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(PINNED.read_text())
    assert current == pinned
    # Most files are exact; an estimate is the exception the list names.
    assert sum(1 for keys in current.values() if not keys) >= 140


@pytest.mark.parametrize("where", ["root", "after"])
def test_strict_refuses_a_config_with_an_unread_key(invoke: Invoke, tmp_path: Path,
                                                    where: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_load("models/Llama-3.1-8B.json"),
                                "expert_latent_dim": 3584}))
    command = ["inventory", str(path)]
    run = invoke(*(["--strict", *command] if where == "root" else [*command, "--strict"]))
    assert run.code == 2 and run.stdout == ""
    assert "expert_latent_dim" in run.stderr and "--strict" in run.stderr


def test_the_json_trust_basis_names_the_unread_key(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_load("models/Llama-3.1-8B.json"),
                                "expert_latent_dim": 3584}))
    run = invoke("kv", "--model", str(path), "--tokens", "1000", "-f", "json")
    assert run.code == 0
    data = run.json()
    assert data["exact"] is False
    assert data["trust"]["state"]["kind"] == "estimate"
    assert "expert_latent_dim" in data["trust"]["state"]["basis"]
    table = invoke("kv", "--model", str(path), "--tokens", "1000")
    assert "expert_latent_dim" in table.stdout + table.stderr


def test_the_checkpoint_is_the_truth_beside_an_estimated_count(invoke: Invoke,
                                                               tmp_path: Path) -> None:
    """A supported type with a key the importer does not read, in a folder with its
    safetensors: the count is an estimate, the weight bytes are the headers' (exact), and
    the comparison shows both parameter counts and their difference, never hiding it."""
    from tests.checkpoint.synthetic import write_config, write_safetensors

    h, kv, ff, v, layers = 256, 2 * 64, 512, 1000, 2
    write_config(tmp_path, {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": h,
        "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": v, "intermediate_size": ff, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
        "expert_latent_dim": 64})
    tensors: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": ("BF16", [v, h]), "lm_head.weight": ("BF16", [v, h]),
        "model.norm.weight": ("BF16", [h])}
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors |= {p + "self_attn.q_proj.weight": ("BF16", [h, h]),
                    p + "self_attn.k_proj.weight": ("BF16", [kv, h]),
                    p + "self_attn.v_proj.weight": ("BF16", [kv, h]),
                    p + "self_attn.o_proj.weight": ("BF16", [h, h]),
                    # what the unread key builds: the config's count cannot know it
                    p + "mlp.latent_proj.weight": ("BF16", [64, h]),
                    p + "mlp.gate_proj.weight": ("BF16", [ff, h]),
                    p + "mlp.up_proj.weight": ("BF16", [ff, h]),
                    p + "mlp.down_proj.weight": ("BF16", [h, ff]),
                    p + "input_layernorm.weight": ("BF16", [h]),
                    p + "post_attention_layernorm.weight": ("BF16", [h])}
    stored = write_safetensors(tmp_path / "model.safetensors", tensors)
    run = invoke("inventory", str(tmp_path), "-f", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["exact"] is False and "expert_latent_dim" in data["estimated"]
    assert data["weight_bytes"] == stored
    assert data["weight_bytes_source"] == "checkpoint headers"
    assert data["trust"]["weights"]["kind"] == "exact"
    assert data["trust"]["parameters"]["kind"] == "estimate"
    compared = data["checkpoint"]
    assert compared["checkpoint_parameters"] - compared["config_parameters"] == layers * 64 * h
    assert compared["difference"] == layers * 64 * h and compared["parameters_agree"] is False
