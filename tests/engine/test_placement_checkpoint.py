"""Placement shards a checkpoint's real tensors: what stays BF16 stays BF16 on every device."""

from __future__ import annotations

from pathlib import Path

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model
from tests.checkpoint.synthetic import LLAMA_CONFIG, llama_tensors, shard, write_config


def _folder(tmp_path: Path, fp8: bool) -> Path:
    tensors = llama_tensors()
    if fp8:  # matmul weights in FP8, embeddings, norms and lm_head kept in BF16
        tensors = {name: ("F8_E4M3" if "proj" in name else dtype, shape)
                   for name, (dtype, shape) in tensors.items()}
    write_config(tmp_path, LLAMA_CONFIG)
    shard(tmp_path, tensors, 2)
    return tmp_path


def _weights(folder: Path, tp: int) -> int:
    request = PlacementRequest(device=resolve_device("h100-sxm"), count=tp, tp=tp, pp=1,
                               limit=0, context=1024)
    plan = next(p for p in plan_placement(load_model(str(folder)), request).plans
                if (p.tp, p.pp, p.ep) == (tp, 1, 1) and p.disaggregation is None)
    return plan.stages[0].weight_bytes


def test_fp8_checkpoint_keeps_bf16_tables_on_every_device(tmp_path: Path) -> None:
    h, i, v, layers = 64, 160, 128, 2
    rotary = 2048 * 16 * 2  # the cos/sin cache: positions × head dim × bf16
    embed = lm_head = v * h * 2
    linear = layers * (64 * 64 * 2 + 32 * 64 * 2 + 3 * i * h)  # q, o; k, v; gate, up, down
    norms = (2 * layers + 1) * h * 2
    folder = _folder(tmp_path, fp8=True)
    assert _weights(folder, 1) == embed + lm_head + linear + norms + rotary
    # TP 2: tables and matmuls halve, norms and the rotary cache stay whole.
    assert _weights(folder, 2) == (embed + lm_head) // 2 + linear // 2 + norms + rotary


def test_checkpoint_and_config_agree_when_nothing_is_quantized(tmp_path: Path) -> None:
    folder = _folder(tmp_path, fp8=False)
    from_headers = _weights(folder, 2)
    config_only = plan_placement(load_model(str(folder / "config.json")), PlacementRequest(
        device=resolve_device("h100-sxm"), count=2, tp=2, pp=1, limit=0, context=1024))
    plan = next(p for p in config_only.plans if (p.tp, p.pp, p.ep) == (2, 1, 1)
                and p.disaggregation is None)
    assert from_headers == plan.stages[0].weight_bytes
