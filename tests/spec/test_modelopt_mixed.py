"""modelopt MIXED_PRECISION: each module's weights stored as the checkpoint's table says.

The architecture is Qwen3.5-35B-A3B's real config (tests/data/configs-2026), the layout of
NVIDIA's Qwen3.6-35B-A3B-NVFP4; its `quantized_layers` table is written here in the form
NVIDIA's tables take (module name → quant_algo, group_size; routed experts under
`model.language_model.layers.N.mlp.experts`, attention, linear-attention projections and
the shared expert in FP8, lm_head in W4A16_NVFP4), since no verbatim table of that
checkpoint is in the repository. The expected bytes are worked out here from the formats'
storage rules (NVFP4: 4 bits a value and one 8-bit scale per 16 inputs; FP8: 8 bits a value
and one fp32 scale per tensor), independently of the importer.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.engine.weights import group_bytes
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import Component, ModelSpec
from tests.conftest import Invoke
from tests.reference import DATA

BASE = json.loads((DATA / "configs-2026" / "Qwen3.5-35B-A3B.json").read_text())
P = "model.language_model."
TEXT = BASE["text_config"]
KINDS: list[str] = TEXT["layer_types"]


def _table(per_expert: bool = False) -> dict[str, Any]:
    nvfp4 = {"quant_algo": "W4A16_NVFP4", "group_size": 16}
    table: dict[str, Any] = {"lm_head": dict(nvfp4)}
    for i, kind in enumerate(KINDS):
        if per_expert:
            for e in range(TEXT["num_experts"]):
                for proj in ("gate_proj", "up_proj", "down_proj"):
                    table[f"{P}layers.{i}.mlp.experts.{e}.{proj}"] = dict(nvfp4)
        else:
            table[f"{P}layers.{i}.mlp.experts"] = dict(nvfp4)
        for proj in ("gate_proj", "up_proj", "down_proj"):
            table[f"{P}layers.{i}.mlp.shared_expert.{proj}"] = {"quant_algo": "FP8"}
        mods = (["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
                if kind == "full_attention" else
                ["linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj"])
        for mod in mods:
            table[f"{P}layers.{i}.{mod}"] = {"quant_algo": "FP8"}
    return table


def _config(quant: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["quantization_config"] = quant
    return data


def _mixed(**more: Any) -> dict[str, Any]:
    return {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
            "quantized_layers": _table(), "ignore": ["mtp*"], **more}


def _bytes_by_component(spec: ModelSpec) -> dict[Component, int]:
    found: dict[Component, int] = {}
    q = spec.quantization
    for group in model_tensors(spec):
        found[group.component] = found.get(group.component, 0) + group_bytes(
            group, "bf16", q)
    return found


def _nvfp4(out: int, inp: int) -> int:
    return (4 * out * inp + out * -(-inp // 16) * 8) // 8


def _fp8(out: int, inp: int) -> int:
    return out * inp + 4


def test_each_module_is_stored_as_the_table_says() -> None:
    spec = from_hf_config(_config(_mixed()), "config.json")
    assert spec.quantization is not None
    assert spec.quantization.method == "modelopt mixed (fp8 (modelopt), nvfp4)"
    got = _bytes_by_component(spec)
    h, layers, experts = TEXT["hidden_size"], len(KINDS), TEXT["num_experts"]
    inter, shared = TEXT["moe_intermediate_size"], TEXT["shared_expert_intermediate_size"]
    full = KINDS.count("full_attention")
    assert got[Component.EXPERTS] == layers * experts * (
        _nvfp4(2 * inter, h) + _nvfp4(h, inter))
    assert got[Component.LM_HEAD] == _nvfp4(TEXT["vocab_size"], h)
    # The shared expert's three projections are FP8; its sigmoid gate is not in the table.
    assert got[Component.SHARED_EXPERTS] == layers * (
        2 * _fp8(shared, h) + _fp8(h, shared) + 2 * h)
    heads, kv, hd = TEXT["num_attention_heads"], TEXT["num_key_value_heads"], TEXT["head_dim"]
    # q_proj holds the output gate too (2 × heads × head_dim); q/k norms stay bf16.
    assert got[Component.ATTENTION] == full * (
        _fp8(2 * heads * hd, h) + 2 * _fp8(kv * hd, h) + _fp8(h, heads * hd) + 2 * 2 * hd)
    # Never in the table: the router, embeddings and the vision tower stay bf16.
    params = {c.component: c.parameters for c in count_parameters(spec).by_component}
    for part in (Component.ROUTER, Component.EMBEDDINGS, Component.ENCODER,
                 Component.NORMS):
        assert got[part] == 2 * params[part], part


def test_one_row_per_expert_and_the_folded_row_store_the_same() -> None:
    folded = from_hf_config(_config(_mixed()), "config.json")
    each = from_hf_config(_config(_mixed(quantized_layers=_table(per_expert=True))),
                          "config.json")
    assert _bytes_by_component(each) == _bytes_by_component(folded)


def test_hf_quant_config_shape_and_its_excluded_modules() -> None:
    """hf_quant_config.json nests the table under `quantization`, with exclude_modules;
    an excluded module stays unquantized even where the table names it."""
    nested = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
              "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": _table(),
                               "exclude_modules": ["lm_head"]}}
    got = _bytes_by_component(from_hf_config(_config(nested), "config.json"))
    flat = _bytes_by_component(from_hf_config(_config(_mixed()), "config.json"))
    assert got[Component.LM_HEAD] == 2 * TEXT["vocab_size"] * TEXT["hidden_size"]
    assert {k: v for k, v in got.items() if k is not Component.LM_HEAD} == {
        k: v for k, v in flat.items() if k is not Component.LM_HEAD}


def test_config_groups_alone_name_the_modules() -> None:
    table = _table()
    groups = {
        "group_0": {"weights": {"num_bits": 8, "type": "float"},
                    "targets": sorted(k for k, v in table.items() if v["quant_algo"] == "FP8")},
        "group_1": {"weights": {"num_bits": 4, "type": "float", "group_size": 16},
                    "targets": sorted(k for k, v in table.items() if v["quant_algo"] != "FP8")},
    }
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
             "config_groups": groups}
    got = _bytes_by_component(from_hf_config(_config(quant), "config.json"))
    assert got == _bytes_by_component(from_hf_config(_config(_mixed()), "config.json"))


@pytest.mark.parametrize(("quant", "field"), [
    ({"quantized_layers": {"lm_head": {"quant_algo": "W4A8_AWQ"}}},
     "quantized_layers.lm_head.quant_algo"),
    ({"quantized_layers": {}}, "quantization_config.quantized_layers"),
    ({"quantized_layers": {"lm_head": {"quant_algo": "UNQUANTIZED"}}},
     "quantization_config.quantized_layers"),
    ({"quantized_layers": ["lm_head"]}, "quantization_config.quantized_layers"),
    ({}, "quantization_config.quantized_layers"),
    ({"config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}, "targets": []}}},
     "config_groups.g.weights"),
])
def test_malformed_tables_name_the_field(quant: dict[str, Any], field: str) -> None:
    data = _config({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", **quant})
    with pytest.raises(InputError) as caught:
        from_hf_config(data, "config.json")
    assert field in str(caught.value)


def test_the_cli_reads_it_where_it_exited_2(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config(_mixed())))
    run = invoke("inventory", str(path), "--format", "json")
    assert run.code == 0, run.stderr
    spec = from_hf_config(_config(_mixed()), "config.json")
    assert run.json()["weight_bytes"] == count_parameters(spec).weight_bytes
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_config(_mixed(quantized_layers={"x": {"quant_algo": "Q"}}))))
    process = subprocess.run([sys.executable, "-m", "llm_inventory", "inventory", str(bad)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert process.returncode == 2 and not process.stdout
    assert "quant_algo" in process.stderr and "Traceback" not in process.stderr


def test_the_label_says_each_scheme_and_what_stays_unquantized() -> None:
    from llm_inventory.engine.weight_scheme import describe_weights

    label = describe_weights(from_hf_config(_config(_mixed()), "config.json")).label
    layers = len(KINDS)
    full = KINDS.count("full_attention")
    fp8 = 3 * layers + 4 * full + 3 * (layers - full)
    assert label == (f"per module: fp8 (modelopt) (one scale per tensor) on {fp8} modules; "
                     f"nvfp4 (groups of 16) on {layers + 1} modules; every other tensor bf16")
