"""LoRA adapter buffers: the engines' stacks per module and TP rank, and what they do to the
KV pool in each era (vLLM V1 inside its budget, V0 outside it as vllm#14450 reports)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm_inventory.engine import serving
from llm_inventory.engine.lora import LoraRequest, slot_bytes, target_modules
from llm_inventory.engine.placement import PlacementRequest, PlacementResult, plan_placement
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset

LLAMA = load_preset("llama-3.1-8b")


def _place(model: str = "llama-3.1-8b", device: str = "h100", count: int = 1,
           **pins: object) -> PlacementResult:
    request = PlacementRequest.model_validate(
        {"device": resolve_device(device), "count": count, "limit": 0, **pins})
    return plan_placement(load_preset(model), request)


def _plan(found: PlacementResult, tp: int = 1, pp: int = 1) -> dict[str, object]:
    plan = next(p for p in found.plans if (p.tp, p.pp, p.ep) == (tp, pp, 1)
                and p.disaggregation is None)
    return plan.model_dump()


def test_llama_stacks_match_vllms_shapes() -> None:
    """Llama 3.1 8B, rank 64, one layer and one slot, by `create_lora_weights`' shapes:
    q, o: 64 × 4096 twice; k, v: 64 × 4096 + 1024 × 64; gate, up, down: 64 × 4096 +
    14336 × 64 (down's A is 64 × 14336, its B 4096 × 64)."""
    stack = LLAMA.decoder
    assert stack is not None
    per_layer = 2 * (2 * 64 * 4096) + 2 * (64 * 4096 + 1024 * 64) + 3 * (64 * 4096 + 14336 * 64)
    assert per_layer == 5_242_880
    assert slot_bytes(stack, range(1), target_modules(None), 64, 1, "bf16", 1) == per_layer * 2
    # four slots over 32 layers
    assert slot_bytes(stack, range(32), target_modules(None), 64, 4, "bf16", 1) == 1_342_177_280


def test_tensor_parallel_shards_one_side_and_fully_sharded_the_other() -> None:
    """TP 2: column B and row A split; --fully-sharded-loras also column A's rank and row
    B's output (`BaseLinearLayerWithLoRA.create_lora_weights`)."""
    stack = LLAMA.decoder
    assert stack is not None
    modules = target_modules(None)
    q = 64 * 4096 + 2048 * 64
    kv = 64 * 4096 + 512 * 64
    o = 64 * 2048 + 4096 * 64
    mlp = 64 * 4096 + 7168 * 64
    down = 64 * 7168 + 4096 * 64
    assert slot_bytes(stack, range(1), modules, 64, 1, "bf16", 2) == 2 * (
        q + 2 * kv + o + 2 * mlp + down)
    sharded = (32 * 4096 + 2048 * 64) + 2 * (32 * 4096 + 512 * 64) + (64 * 2048 + 2048 * 64) \
        + 2 * (32 * 4096 + 7168 * 64) + (64 * 7168 + 2048 * 64)
    assert slot_bytes(stack, range(1), modules, 64, 1, "bf16", 2, sharded=True) == 2 * sharded


def test_target_modules_unpack_and_refuse_unknown_names() -> None:
    assert target_modules(("qkv_proj",)) == ("q_proj", "k_proj", "v_proj")
    assert target_modules(("all",)) == target_modules(None)
    with pytest.raises(InputError) as caught:
        target_modules(("lm_head_typo",))
    assert caught.value.field == "lora_modules"


def test_vllm_v1_pool_loses_exactly_the_buffers() -> None:
    """V1 loads the stacks inside `load_model`'s profiler: the pool shrinks by them."""
    lora = LoraRequest(max_loras=4, max_lora_rank=64)
    off, on = _plan(_place()), _plan(_place(lora=lora))
    per_off, per_on = off["per_device"], on["per_device"]
    assert isinstance(per_off, dict) and isinstance(per_on, dict)
    assert per_on["lora"]["device_bytes"] == 1_342_177_280
    assert per_on["lora"]["in_budget"] is True
    assert per_off["kv_pool_bytes"] - per_on["kv_pool_bytes"] == 1_342_177_280
    assert per_on["weight_bytes"] == per_off["weight_bytes"]
    assert per_on["reserve_bytes"] == per_off["reserve_bytes"]


@settings(max_examples=6, deadline=None)
@given(rank=st.sampled_from([8, 16, 64, 256]), slots=st.integers(1, 16))
def test_vllm_v0_blocks_do_not_see_lora(rank: int, slots: int) -> None:
    """vllm#14450 (V0): "using different LoRA rank and max LoRAs did not affect the number
    of kv cache blocks"; the buffers are still on the device, and said to be."""
    lora = LoraRequest(max_loras=slots, max_lora_rank=rank)
    off = _plan(_place(engine="vllm@0.8"))
    on = _plan(_place(engine="vllm@0.8", lora=lora))
    per_off, per_on = off["per_device"], on["per_device"]
    assert isinstance(per_off, dict) and isinstance(per_on, dict)
    assert per_on["kv_blocks"] == per_off["kv_blocks"]
    assert per_on["lora"]["in_budget"] is False
    assert per_on["lora"]["device_bytes"] == slot_bytes(
        LLAMA.decoder, range(32), target_modules(None), rank, slots, "bf16", 1)  # type: ignore[arg-type]
    assert any("outside the engine's KV budget" in w for w in on["warnings"])  # type: ignore[union-attr]


def test_sglang_allocates_every_layer_on_each_pipeline_stage() -> None:
    """SGLang's `LoRAMemoryPool.init_buffers` loops over every layer of the model; vLLM only
    wraps the modules on the worker's stage."""
    lora = LoraRequest(max_loras=8, max_lora_rank=16)
    sglang = _plan(_place(count=2, engine="sglang", lora=lora, pp=2), pp=2)
    vllm = _plan(_place(count=2, engine="vllm", lora=lora, pp=2), pp=2)
    full = slot_bytes(LLAMA.decoder, range(32), target_modules(None), 16, 8, "bf16", 1)  # type: ignore[arg-type]
    assert sglang["per_device"]["lora"]["device_bytes"] == full  # type: ignore[index]
    assert vllm["per_device"]["lora"]["device_bytes"] == full // 2  # type: ignore[index]


def test_sglang_needs_a_rank_and_trtllm_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        _place(engine="sglang", lora=LoraRequest())
    assert caught.value.field == "lora_rank"
    with pytest.raises(InputError) as caught:
        _place(engine="trtllm", lora=LoraRequest(max_lora_rank=16))
    assert caught.value.field == "lora"
    with pytest.raises(InputError) as caught:
        _place(engine="sglang", lora=LoraRequest(max_lora_rank=16, fully_sharded=True))
    assert caught.value.field == "fully_sharded_loras"


def test_llamacpp_adapter_files_sit_with_their_layers() -> None:
    """llama.cpp allocates each adapter tensor beside the base tensor it adapts: the files'
    bytes, shared by the devices as the layers are."""
    lora = LoraRequest(adapter_bytes=(100 << 20, 60 << 20), adapters=("a.gguf", "b.gguf"))
    one = _plan(_place(engine="llamacpp", lora=lora))
    assert one["per_device"]["lora"]["device_bytes"] == 160 << 20  # type: ignore[index]


def test_moe_experts_get_slots_only_where_the_era_has_moe_lora() -> None:
    lora = LoraRequest(max_loras=1, max_lora_rank=8)
    v1 = _place("qwen3-30b-a3b", "h100", 1, lora=lora).plans[0].per_device
    v0 = _place("qwen3-30b-a3b", "h100", 1, lora=lora, engine="vllm@0.8").plans[0].per_device
    assert v1 is not None and v0 is not None and v1.lora is not None and v0.lora is not None
    assert v1.lora.device_bytes > 10 * v0.lora.device_bytes  # 128 experts a layer
    assert v0.lora.uncounted and not v1.lora.uncounted


ENGINES = ["vllm", "vllm@0.8", "sglang", "llamacpp", "trtllm"]


@settings(max_examples=12, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-8b", "mistral-7b", "qwen2.5-vl-7b",
                              "gemma-2-9b"]),
       engine=st.sampled_from(ENGINES))
def test_features_off_leave_every_figure_unchanged(model: str, engine: str) -> None:
    """With LoRA off and images at 0 per prompt, every figure equals the engine's without
    the feature rules at all (its era with `lora_rule` and `mm_rule` taken away). SGLang
    scales its default fraction for any multimodal model, images or not: not a switch."""
    assume(not (engine == "sglang" and model == "qwen2.5-vl-7b"))
    era = serving.get(engine)
    bare = copy.copy(era)
    bare.lora_rule = None  # type: ignore[misc]
    bare.mm_rule = None  # type: ignore[misc]
    found = _place(model, "h100", 2, engine=engine,
                   multimodal={"limit_per_prompt": {"image": 0}})
    serving.register(bare)
    try:
        baseline = _place(model, "h100", 2, engine=era.name)
    finally:
        serving.unregister(bare)
    # a run-time engine is its own era: its trust wording names no release
    keep = {"engine", "engine_version", "trust"}
    assert found.model_dump(exclude=keep) == baseline.model_dump(exclude=keep)
