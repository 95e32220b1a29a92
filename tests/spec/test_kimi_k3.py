"""Kimi-K3 held to its checkpoint's tensor listing (no transformers class, no public code).

tests/data/configs-2026-checkpoint-listing/ holds the real config and the listing of the
checkpoint's 497,220 tensors in 60 rows (README there says where both come from). The
parameters are summed here from the listing alone: a packed FP4 byte (`weight_packed`,
uint8) holds two parameters, a scale none.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import Component
from tests.reference import DATA

FOLDER = DATA / "configs-2026-checkpoint-listing"
CONFIG: dict[str, Any] = json.loads((FOLDER / "moonshotai--Kimi-K3.json").read_text())
LISTING: dict[str, Any] = json.loads((FOLDER / "Kimi-K3-tensors.json").read_text())
BYTES = {"BF16": 2, "F32": 4, "U8": 1}


def _parameters(row: dict[str, Any]) -> int:
    if row["name"].endswith("weight_scale"):
        return 0
    per = math.prod(row["shape"]) * (2 if row["name"].endswith("weight_packed") else 1)
    return int(row["copies"]) * per


def test_the_listing_is_complete() -> None:
    rows = LISTING["rows"]
    elements = sum(r["copies"] * math.prod(r["shape"]) for r in rows)
    assert elements == LISTING["checkpoint_figures"]["elements"] == 1_503_647_073_024


def test_total_equals_the_checkpoint() -> None:
    spec = from_hf_config(CONFIG, "config.json")
    assert spec.exact, spec.estimated
    expected = sum(_parameters(r) for r in LISTING["rows"])
    assert expected == 2_779_931_837_184
    assert count_parameters(spec).total == expected


def test_each_part_equals_the_checkpoint() -> None:
    """The tower, the projector and the embeddings / head row by row."""
    parts = {c.component: c.parameters
             for c in count_parameters(from_hf_config(CONFIG, "config.json")).by_component}
    rows = LISTING["rows"]

    def total(prefix: str) -> int:
        return sum(_parameters(r) for r in rows if r["name"].startswith(prefix))

    assert parts[Component.ENCODER] == total("vision_tower.")
    assert parts[Component.PROJECTOR] == total("mm_projector.")
    assert parts[Component.LM_HEAD] == total("language_model.lm_head")
    assert parts[Component.EMBEDDINGS] == total("language_model.model.embed_tokens")
    experts = sum(_parameters(r) for r in rows if ".experts." in r["name"])
    # Beside the experts: the latent norm (the latent projections count as MLP here).
    assert parts[Component.EXPERTS] - experts == 92 * 3584


def test_stored_bytes_differ_only_by_the_fp32_tensors() -> None:
    """The importer keeps every unquantized tensor at the model dtype; the checkpoint
    stores KDA's A_log, dt_bias, convolutions and o_norm, and the routers' correction
    bias, in fp32: exactly their second two bytes apart."""
    spec = from_hf_config(CONFIG, "config.json")
    stored = sum(r["copies"] * math.prod(r["shape"]) * BYTES[r["dtype"]]
                 for r in LISTING["rows"])
    fp32 = sum(r["copies"] * math.prod(r["shape"]) for r in LISTING["rows"]
               if r["dtype"] == "F32")
    assert stored - count_parameters(spec).weight_bytes == 2 * fp32 == 22_244_864


def test_cache_per_layer_kind() -> None:
    """24 MLA layers of 512 + 64 elements a token; 69 KDA layers with a fixed state of
    96 × 128 × 128 (fp32) and a conv window of 3 × 12,288 channels × 3."""
    layers = state_layers(from_hf_config(CONFIG, "config.json"))
    mla = [layer for layer in layers if layer.kind == "mla"]
    kda = [layer for layer in layers if layer.kind == "kda"]
    assert sum(layer.count for layer in mla) == 24
    assert {layer.elements_per_token() for layer in mla} == {576}
    assert sum(layer.count for layer in kda) == 69
    assert {layer.elements_per_token() for layer in kda} == {0}


@pytest.mark.parametrize(("path", "value", "field"), [
    (("text_config", "mla_use_output_gate"), False, "mla_use_output_gate"),
    (("text_config", "num_nextn_predict_layers"), 1, "num_nextn_predict_layers"),
    (("text_config", "model_type"), "deepseek_v3", "text_config: model_type"),
    (("vision_config", "merge_kernel_size"), [2], "merge_kernel_size"),
    (("vision_config", "attn_bias"), True, "attn_bias"),
])
def test_unsupported_variants_are_refused_by_name(path: tuple[str, str], value: Any,
                                                   field: str) -> None:
    data = copy.deepcopy(CONFIG)
    data[path[0]][path[1]] = value
    with pytest.raises(InputError) as caught:
        from_hf_config(data, "config.json")
    assert field in str(caught.value)


def test_the_parameters_are_exact_and_the_assumed_state_is_an_estimate() -> None:
    """The count is held to the checkpoint's listing; the KDA/MLA state follows Kimi
    Linear's rules with no Kimi-K3 code to hold it to, so its label says estimate."""
    from llm_inventory.engine.inventory import InventoryRequest, build_inventory
    from llm_inventory.spec.devices import resolve_device

    spec = from_hf_config(CONFIG, "config.json")
    assert spec.exact and spec.state_estimated
    result = build_inventory(spec, InventoryRequest(device=resolve_device("b200")))
    assert result.trust["parameters"].kind == "exact"
    assert result.trust["state"].kind == "estimate"
    assert "assumed" in result.trust["state"].basis
