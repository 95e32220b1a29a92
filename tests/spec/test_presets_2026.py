"""This year's presets held to their references: tests/data/preset-oracle-2026.json holds what
`tools/reference_counts.py` read from each preset file with transformers 5.25.0 on the meta
device (total, active and the cache per token of each layer); Kimi-K3, which transformers has
no class for, is held to its checkpoint's tensor listing through the config beside it.

Rebuilt in a scratch environment (torch 2.13.0 CPU, transformers 5.25.0), from the
repository root, with the five preset files named one by one:

    python tools/reference_counts.py llm_inventory/data/presets/qwen3.6-35b-a3b.json
        (... nemotron-3-ultra-550b-a55b, hy3, laguna-xs.2, laguna-s-2.1)
        --out tests/data/preset-oracle-2026.json
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from importlib import resources
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.presets import load_preset
from tests.reference import DATA

ORACLE: list[dict[str, Any]] = json.loads((DATA / "preset-oracle-2026.json").read_text())
PRESETS = resources.files("llm_inventory") / "data" / "presets"


def _name(entry: dict[str, Any]) -> str:
    return str(entry["file"]).removesuffix(".json")


def test_the_reference_set_names_its_release() -> None:
    assert {e["versions"]["transformers"] for e in ORACLE} == {"5.25.0"}
    assert sorted(_name(e) for e in ORACLE) == ["hy3", "laguna-s-2.1", "laguna-xs.2",
                                                 "nemotron-3-ultra-550b-a55b",
                                                 "qwen3.6-35b-a3b"]


@pytest.mark.parametrize("entry", ORACLE, ids=_name)
def test_total_and_active_match_transformers(entry: dict[str, Any]) -> None:
    spec = load_preset(_name(entry))
    assert spec.exact, spec.estimated
    params = count_parameters(spec)
    assert params.total == entry["total_params"]
    assert params.active == entry["active_params"]


@pytest.mark.parametrize("entry", ORACLE, ids=_name)
def test_cache_per_token_of_each_layer_matches_transformers(entry: dict[str, Any]) -> None:
    """The elements each layer caches per token, grouped as the reference groups them (a
    layer keeping no per-token cache, as a linear-attention or Mamba layer, under 0)."""
    spec = load_preset(_name(entry))
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        if layer.kind != "cross" and layer.elements_per_token():
            found[layer.elements_per_token()] += layer.count
    expected = entry["kv_elems_per_token_per_layer"]
    if isinstance(expected, int):
        assert dict(found) == {expected: entry["kv_layers_with_kv"]}
        return
    want = {int(k): v for k, v in expected.items()}
    assert spec.decoder is not None
    found[0] = spec.decoder.layers - sum(found.values())
    assert dict(found) == want


def test_kimi_k3_preset_is_the_listed_checkpoint_config() -> None:
    """Byte for byte the preset is another vendored copy; key for key it is the config
    whose count tests/spec/test_kimi_k3.py sums from the checkpoint's tensors."""
    preset = json.loads((PRESETS / "kimi-k3.json").read_text())
    listed = json.loads((DATA / "configs-2026-checkpoint-listing" / "moonshotai--Kimi-K3.json")
                        .read_text())
    assert preset == listed
    assert count_parameters(load_preset("kimi-k3")).total == 2_779_931_837_184


def _laguna_s() -> dict[str, Any]:
    return dict(json.loads((PRESETS / "laguna-s-2.1.json").read_text()))


def test_laguna_keys_beside_transformers_agree_with_what_is_built() -> None:
    """Laguna-S-2.1's file carries gating_types, mlp_only_layers and decoder_sparse_step,
    which LagunaConfig (transformers 5.25) does not have: read where they say what
    `gating` and `mlp_layer_types` build, refused by name where they do not."""
    data = _laguna_s()
    assert data["gating_types"] == ["per_head"] * 48 and data["mlp_only_layers"] == [0]
    spec = from_hf_config(data, "config.json")
    assert spec.exact, spec.estimated
    gating = copy.deepcopy(data)
    gating["gating_types"][5] = "per_element"
    with pytest.raises(InputError, match="gating_types"):
        from_hf_config(gating, "config.json")
    dense = {**data, "mlp_only_layers": [0, 1]}
    with pytest.raises(InputError, match="mlp_only_layers"):
        from_hf_config(dense, "config.json")
    every_other = {**data, "decoder_sparse_step": 2}
    with pytest.raises(InputError, match="mlp_only_layers"):
        from_hf_config(every_other, "config.json")
    # the same dense layer said both ways is the same model
    both = {**data, "mlp_layer_types": ["dense"] + ["sparse"] * 47}
    assert count_parameters(from_hf_config(both, "config.json")).total == \
        count_parameters(spec).total


def test_laguna_bidirectional_flag_changes_no_tensor() -> None:
    """Laguna-XS.2's use_bidirectional_attention: LagunaModel builds a causal mask
    whatever it says (no LagunaConfig field), so neither the count nor the cache moves."""
    data = json.loads((PRESETS / "laguna-xs.2.json").read_text())
    assert data["use_bidirectional_attention"] is False
    flipped = {**data, "use_bidirectional_attention": True}
    a, b = (from_hf_config(d, "config.json") for d in (data, flipped))
    assert b.exact and count_parameters(a).total == count_parameters(b).total
    assert [x.elements_per_token() for x in state_layers(a)] == \
        [x.elements_per_token() for x in state_layers(b)]
