"""kv, inventory, placement and compare run on every large-MoE model type (one real config,
or the class's defaults where no published file was found), exit 0 and say nothing on
stderr but warnings."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke
from tests.reference import DATA

CONFIGS = {
    "bailing_moe": "configs-2026-checkpoint-code/inclusionAI--Ling-lite.json",
    "dbrx": "transformers-defaults-2026/dbrx--attn-rope-theta.json",
    "dots1": "transformers-defaults-2026/dots1--experts-from-model-card.json",
    "ernie4_5_moe": "transformers-defaults-2026/ernie4_5_moe.json",
    "glm4_moe": "transformers-defaults-2026/glm4_moe.json",
    "granitemoe": "transformers-defaults-2026/granitemoe.json",
    "hunyuan": "configs-2026-checkpoint-code/Hunyuan-A13B-Instruct--use-cla.json",
    "hunyuan_v1_moe": "transformers-defaults-2026/hunyuan_v1_moe--head-dim.json",
    "llama4": "configs-2026-more/meta-llama--Llama-4-Maverick-17B-128E-Instruct.json",
    "mimo": "configs-2026/MiMo-7B-Base.json",
    "mimo_v2_flash": "configs-2026/MiMo-V2-Flash.json",
    "minimax_m2": "configs-2026/MiniMax-M2.5.json",
    "minimax_m3": "configs-2026/MiniMax-M3.json",
    "phimoe": "transformers-defaults-2026/phimoe.json",
    "step3p7": "configs-2026/Step-3.7-Flash.json",
}


def _quiet(stderr: str) -> bool:
    return all(line.startswith("inventory: warning:") for line in stderr.splitlines())


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_command_runs(invoke: Invoke, model_type: str) -> None:
    path = str(DATA / CONFIGS[model_type])
    kv = invoke("kv", "--model", path, "--tokens", "32k", "--format", "json")
    assert kv.code == 0 and _quiet(kv.stderr), kv.stderr
    assert kv.json()["bytes_per_token"] > 0
    inventory = invoke("inventory", path, "--context", "32k", "--format", "json")
    assert inventory.code == 0 and _quiet(inventory.stderr), inventory.stderr
    assert inventory.json()["parameters"]["total"] > 0
    placed = invoke("placement", path, "--device", "h100-sxm", "--count", "8", "--tp", "8",
                    "--format", "json")
    assert placed.code == 0 and _quiet(placed.stderr), placed.stderr
    compared = invoke("compare", path, str(DATA / CONFIGS["mimo"]), "--format", "json")
    assert compared.code == 0 and _quiet(compared.stderr), compared.stderr
    assert len(compared.json()) == 2
