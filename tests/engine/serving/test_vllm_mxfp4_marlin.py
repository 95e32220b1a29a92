"""MXFP4 experts on Hopper in vLLM up to 0.10: Marlin pads each rank's intermediate to a
multiple of 128 and the hidden size to 256, both where gate_up reduces over it and where
down writes it (`Mxfp4MoEMethod.create_weights`, MARLIN branch,
vllm/model_executor/layers/quantization/mxfp4.py). The 0.10.1 start-up of gpt-oss-120b on
an H100 (engine-logs-heldout, H07) printed "Model loading took 65.9651 GiB"."""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.base import ExpertPadding
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

GIB = 2**30
MXFP4_BITS = 4 + 8 / 32  # a 4-bit value and an 8-bit scale per 32


def _weights(engine: str, tp: int = 1) -> int:
    spec = from_hf_config(json.loads((DATA / "models" / "gpt-oss-120b.json").read_text()),
                          "gpt-oss-120b.json")
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=tp, tp=tp, pp=1,
                               ep=1, context=8192, engine=engine, limit=0)
    plan = next(p for p in plan_placement(spec, request).plans
                if (p.tp, p.pp, p.ep) == (tp, 1, 1) and p.disaggregation is None)
    return plan.stages[0].weight_bytes


def test_the_eras_pick_their_backends_padding() -> None:
    spec = from_hf_config(json.loads((DATA / "models" / "gpt-oss-120b.json").read_text()),
                          "gpt-oss-120b.json")
    assert serving.get("vllm@0.10").expert_padding(spec) == ExpertPadding(128, 256, True)
    assert serving.get("vllm@0.19").expert_padding(spec) == ExpertPadding(256, 256)


def test_marlin_layout_against_the_0_19_one_by_hand() -> None:
    """36 layers × 128 experts; intermediate and hidden 2,880."""
    marlin = 2 * 2944 * 3072 + 3072 * 2944  # gate_up [2 × 2,944, 3,072], down [3,072, 2,944]
    later = 2 * 3072 * 3072 + 2880 * 3072  # gate_up [2 × 3,072, 3,072], down [2,880, 3,072]
    bias = (2 * 2944 + 3072) - (2 * 3072 + 2880)
    expected = (marlin - later) * MXFP4_BITS / 8 + bias * 2
    diff = _weights("vllm@0.10") - _weights("vllm@0.19")
    assert diff == pytest.approx(expected * 36 * 128, abs=36 * 128)


def test_gpt_oss_120b_on_one_h100_as_0_10_1_loaded_it() -> None:
    assert _weights("vllm@0.10") / GIB == pytest.approx(65.9651, rel=0.01)
