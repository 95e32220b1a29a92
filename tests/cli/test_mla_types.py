"""`kv`, `inventory`, `placement` and `compare` run on every MLA and sparse-attention type
of this year (one real config each; LongCat-Flash's class defaults stand in)."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke
from tests.reference import DATA

CONFIGS = {
    "deepseek_v32": "configs-2026/DeepSeek-V3.2.json",
    "deepseek_v4": "configs-2026/DeepSeek-V4-Flash.json",
    "glm4_moe_lite": "configs-2026-reported/zai-org--GLM-4.7-Flash.json",
    "glm_moe_dsa": "configs-2026-more/zai-org--GLM-5.2.json",
    "kimi_k2": "configs-2026/Kimi-K2-Instruct.json",
    "kimi_k25": "configs-2026/Kimi-K2.5.json",
    "longcat_flash": "transformers-defaults-2026/longcat_flash.json",
}


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_command_runs(invoke: Invoke, model_type: str) -> None:
    path = str(DATA / CONFIGS[model_type])
    kv = invoke("kv", "--model", path, "--tokens", "100000", "-f", "json")
    assert kv.code == 0 and kv.json()["bytes_per_sequence"] > 0
    inventory = invoke("inventory", path, "-f", "json")
    assert inventory.code == 0
    assert inventory.json()["parameters"]["total"] > 0
    placement = invoke("placement", path, "--device", "h200", "--count", "8", "-f", "json")
    assert placement.code == 0, placement.stderr
    assert invoke("compare", path, "deepseek-v3").code == 0


def test_inventory_shows_the_active_range_and_the_mtp_layers(invoke: Invoke) -> None:
    longcat = invoke("inventory", str(DATA / CONFIGS["longcat_flash"])).stdout
    assert "active per token is a range" in longcat and "19.5 B" in longcat
    assert "gate_up_proj rows" in longcat
    v32 = invoke("inventory", str(DATA / CONFIGS["deepseek_v32"])).stdout
    assert "multi-token prediction: 13.5 B" in v32
