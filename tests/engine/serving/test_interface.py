"""The serving-engine interface: a second engine plugs in through it alone.

"Everything usable is KV": no reserve, the whole device is the pool, one token per cell.
Placement must size with it exactly, and vLLM's figures must differ from it only by vLLM's
own rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvCapacity,
    KvLayer,
    LaunchSettings,
    PoolLayout,
    ReserveEstimate,
    ServingEngine,
    StageShape,
)
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device, resolve_device
from llm_inventory.spec.presets import load_preset


class Cells(PoolLayout):
    """One cell per token of every layer; a request holds max_model_len cells."""

    def __init__(self, per_token: int, context: int) -> None:
        self.page, self.fixed, self.context = per_token, 0, context

    def measure(self, pool_bytes: int) -> tuple[int, int, float]:
        tokens = max(0, pool_bytes) // self.page if self.page else 0
        return tokens, tokens, tokens / self.context

    def capacity(self, pool_bytes: int) -> KvCapacity:
        cells, tokens, concurrency = self.measure(pool_bytes)
        return KvCapacity(blocks=cells, tokens=tokens, max_concurrency=concurrency,
                          bytes_per_token=self.page, groups=1, request_blocks=self.context,
                          page_bytes=self.page, fixed_bytes_per_request=0)


class AllKv(ServingEngine):
    name = "allkv"
    versions = "any"
    version = "1"
    label = "all-KV"
    summary = "every byte the weights leave is KV"
    rules = (("pool = total − weights", "this test"),)

    def settings(self, device: Device, asked: LaunchSettings) -> EngineSettings:
        return EngineSettings(max_model_len=asked.context,
                              max_num_batched_tokens=asked.context,
                              max_num_seqs=asked.max_num_seqs or 1, block_size=1,
                              memory_fraction=1.0, kv_dtype=asked.kv_dtype)

    def reserve(self, shape: StageShape, settings: EngineSettings) -> ReserveEstimate:
        return ReserveEstimate(non_torch_bytes=0, forward_peak_bytes=0, sampler_peak_bytes=0,
                               activation_bytes=0, reserve_bytes=0)

    def pool_bytes(self, device: Device, settings: EngineSettings, shape: StageShape,
                   weight_bytes: int, reserve: ReserveEstimate) -> int:
        return device.memory_bytes - weight_bytes

    def pool_layout(self, layers: Sequence[KvLayer], settings: EngineSettings) -> PoolLayout:
        return Cells(sum(layer.bytes_per_token for layer in layers), settings.max_model_len)


@pytest.fixture
def all_kv() -> Iterator[ServingEngine]:
    engine = serving.register(AllKv())
    try:
        yield engine
    finally:
        serving.unregister(engine)


def test_a_trivial_engine_through_the_interface(all_kv: ServingEngine) -> None:
    device = resolve_device("h100-sxm")
    spec = load_preset("llama-3.1-8b")
    result = plan_placement(spec, PlacementRequest(device=device, count=1, engine="allkv",
                                                   context=8000))
    plan = result.plans[0]
    assert result.engine == "allkv" and plan.per_device is not None
    weights = plan.per_device.weight_bytes
    pool = device.memory_bytes - weights
    assert plan.per_device.reserve_bytes == 0
    assert plan.per_device.kv_pool_bytes == pool
    assert plan.per_device.kv_capacity_tokens == pool // 131_072  # 32 layers × 4,096 B
    vllm = plan_placement(spec, PlacementRequest(device=device, count=1, context=8000))
    # vLLM adds its rotary cache and 64-row vocabulary padding to the same weights.
    assert vllm.plans[0].per_device is not None
    assert vllm.plans[0].per_device.weight_bytes > weights


def test_engine_names_and_versions() -> None:
    assert serving.get("vllm").name == "vllm"
    assert serving.get("vllm@0.19").version == "0.19"
    with pytest.raises(InputError, match="unknown engine"):
        serving.get("tgi")
    with pytest.raises(InputError, match="not a dotted number"):
        serving.get("vllm@latest")
    with pytest.raises(InputError, match="predates"):
        serving.get("vllm@0.1")
