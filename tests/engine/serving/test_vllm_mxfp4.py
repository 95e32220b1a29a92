"""MXFP4 experts in vLLM, by release and GPU generation (`mxfp4_experts`,
llm_inventory/engine/serving/vllm.py, read from vllm/model_executor/layers/quantization/
mxfp4.py, fused_moe/oracle/mxfp4.py and the triton_kernels copy each wheel ships).

Start-ups of gpt-oss on an H100: 0.10.1 printed "Model loading took 65.9651 GiB" for
gpt-oss-120b through Marlin (engine-logs/rule-records.json, H07), 0.14.1 "64.38 GiB" through Triton
(H09); 0.19.0 loaded gpt-oss-20b at TP 2 in 7.01 GiB (engine-logs/runs.json)."""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.vllm import (
    EXPERTS_FLASHINFER_TRTLLM,
    EXPERTS_MARLIN,
    EXPERTS_TRITON_HOPPER,
    EXPERTS_TRITON_HOPPER_PREPADDED,
)
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

GIB = 2**30
LAYERS, EXPERTS = 36, 128  # gpt-oss-120b; intermediate and hidden 2,880


def _spec() -> ModelSpec:
    return from_hf_config(json.loads((DATA / "models" / "gpt-oss-120b.json").read_text()),
                          "gpt-oss-120b.json")


def _weights(engine: str, device: str = "h100-sxm", tp: int = 1) -> int:
    request = PlacementRequest(device=custom_device(288 * GIB, resolve_device(device)),
                               count=tp, tp=tp, pp=1, ep=1, context=8192, engine=engine,
                               limit=0)
    plan = next(p for p in plan_placement(_spec(), request).plans
                if (p.tp, p.pp, p.ep) == (tp, 1, 1) and p.disaggregation is None)
    return plan.stages[0].weight_bytes


@pytest.mark.parametrize(("engine", "device", "layout"), [
    ("vllm@0.10", "h100-sxm", EXPERTS_MARLIN),
    ("vllm@0.10", "b200", EXPERTS_MARLIN),
    ("vllm@0.11", "h100-sxm", EXPERTS_MARLIN),  # no triton_kernels in the wheel
    ("vllm@0.11", "b200", EXPERTS_MARLIN),  # FlashInfer an extra in 0.11.0
    ("vllm@0.11.2", "b200", EXPERTS_FLASHINFER_TRTLLM),
    ("vllm@0.11.2", "h100-sxm", EXPERTS_MARLIN),
    ("vllm@0.12", "h100-sxm", EXPERTS_TRITON_HOPPER),
    ("vllm@0.14.1", "h200", EXPERTS_TRITON_HOPPER),
    ("vllm@0.16", "h100-sxm", EXPERTS_TRITON_HOPPER),
    ("vllm@0.17", "h100-sxm", EXPERTS_TRITON_HOPPER_PREPADDED),
    ("vllm@0.19", "h100-sxm", EXPERTS_TRITON_HOPPER_PREPADDED),
    ("vllm", "gh200", EXPERTS_TRITON_HOPPER_PREPADDED),
    ("vllm@0.14", "b200", EXPERTS_FLASHINFER_TRTLLM),
    ("vllm@0.19", "gb200", EXPERTS_FLASHINFER_TRTLLM),
    ("vllm@0.19", "a100-80gb", EXPERTS_MARLIN),
    ("vllm@0.19", "l40s", EXPERTS_MARLIN),
    ("vllm@0.19", "rtx-5090", EXPERTS_MARLIN),  # 12.0: past Triton's 9.0–10.x
    ("vllm@0.14", "rtx-pro-6000", EXPERTS_MARLIN),
])
def test_each_release_and_gpu_picks_its_backend(engine: str, device: str, layout: object) -> None:
    assert serving.get(engine).expert_padding(_spec(), resolve_device(device)) == layout


def test_a_device_of_unknown_generation_is_taken_as_hopper() -> None:
    spec = _spec()
    engine = serving.get("vllm@0.19")
    assert engine.expert_padding(spec, custom_device(80 * GIB)) == \
        engine.expert_padding(spec, resolve_device("h100-sxm"))


def _pad(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _triton(reduction_bytes: int, rows: int) -> int:
    """Bytes of one layer's experts through Triton on Hopper, counted by hand: values
    [rows, packed reduction] padded, scales once as loaded and once swizzled (rows to 256),
    fp32 biases."""
    up, hidden = 2 * 2880, 2880
    values = (_pad(up, rows) * _pad(hidden // 2, reduction_bytes)
              + _pad(hidden, rows) * _pad(2880 // 2, reduction_bytes))
    loaded = up * (hidden // 32) + hidden * (2880 // 32)
    swizzled = _pad(up, 256) * (hidden // 32) + _pad(hidden, 256) * (2880 // 32)
    return (values + loaded + swizzled + (up + hidden) * 4) * EXPERTS


def test_triton_layouts_against_marlin_by_hand() -> None:
    """Marlin: gate_up [2 × 2,944, 3,072], down [3,072, 2,944], one-byte scales per 32,
    bf16 biases; Triton 3.5: nothing padded at 2,880 but the scale rows (5,888 and 3,072);
    Triton 3.6: the packed reduction 1,440 B pre-padded to 1,472."""
    marlin = ((2 * 2944 * 3072 + 3072 * 2944) * (4 + 8 / 32) / 8
              + (2 * 2944 + 3072) * 2) * EXPERTS
    base = _weights("vllm@0.10")
    assert base - _weights("vllm@0.14") == pytest.approx(
        (marlin - _triton(32, 16)) * LAYERS, abs=LAYERS * EXPERTS)
    assert base - _weights("vllm@0.19") == pytest.approx(
        (marlin - _triton(64, 64)) * LAYERS, abs=LAYERS * EXPERTS)


def test_gpt_oss_120b_on_one_h100_as_0_10_1_loaded_it() -> None:
    assert _weights("vllm@0.10") / GIB == pytest.approx(65.9651, rel=0.01)


def test_gpt_oss_120b_on_one_h100_as_0_14_1_loaded_it() -> None:
    assert _weights("vllm@0.14.1") / GIB == pytest.approx(64.38, rel=0.01)
