"""The vision-language budget: vLLM's encoder cache and profiling batch, SGLang's fraction
scaled for the vision tower."""

from __future__ import annotations

import copy

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.mm_budget import (
    MultimodalRequest,
    max_tokens_per_item,
    parse_limits,
    vision_factor,
)
from llm_inventory.engine.placement import PlacementRequest, PlacementResult, plan_placement
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset


def _place(model: str, engine: str = "vllm", device: str = "h100", **pins: object
           ) -> PlacementResult:
    request = PlacementRequest.model_validate(
        {"device": resolve_device(device), "count": 1, "limit": 0, "engine": engine, **pins})
    return plan_placement(load_preset(model), request)


def test_qwen_vl_profiles_one_image_of_16384_tokens() -> None:
    """The line Qwen3-VL start-ups print at the default batch (vllm PR #34051's log for
    Qwen3-VL-2B; a Qwen3.x 27B start-up on an A6000 quotes the same line)."""
    found = _place("qwen3-vl-8b")
    plan = found.plans[0]
    line = ("Encoder cache will be initialized with a budget of 16384 tokens, and profiled "
            "with 1 image items of the maximum feature size.")
    assert line in plan.startup
    assert plan.startup.index(line) < next(
        i for i, s in enumerate(plan.startup) if s.startswith("Available KV cache memory"))
    mm = plan.per_device.multimodal if plan.per_device else None
    assert mm is not None and mm.tokens_per_item == 16384 and mm.profiled_items == 1
    spec = load_preset("qwen3-vl-8b")
    hidden = spec.decoder.hidden_size if spec.decoder else 0
    assert mm.cache_bytes == 16384 * hidden * 2


def test_vllm_18550_twelve_images_of_16384_tokens() -> None:
    """vllm#18550: a step budget of 200,000 tokens profiles 12 images × 16,384 tokens; their
    outputs alone stay in the reserve while the language model's profiling pass runs."""
    found = _place("qwen2.5-vl-7b", max_num_batched_tokens=200_000, context=200_000)
    mm = found.plans[0].per_device.multimodal  # type: ignore[union-attr]
    assert mm is not None
    assert (mm.profiled_items, mm.tokens_per_item) == (12, 16384)
    assert mm.profile_bytes >= 12 * 16384 * 3584 * 2


def test_limits_bound_the_profiled_items_and_zero_turns_it_off() -> None:
    """LLaVA-1.5: 576 tokens an image; 8,192 ÷ 576 = 14 images unless the prompt's limit
    times max_num_seqs is fewer."""
    many = _place("llava-1.5-7b").plans[0].per_device
    few = _place("llava-1.5-7b", max_num_seqs=3,
                 multimodal={"limit_per_prompt": {"image": 1}}).plans[0].per_device
    off = _place("llava-1.5-7b", multimodal={"limit_per_prompt": {"image": 0}}).plans[0]
    assert many is not None and many.multimodal is not None
    assert (many.multimodal.tokens_per_item, many.multimodal.profiled_items) == (576, 14)
    assert few is not None and few.multimodal is not None and few.multimodal.profiled_items == 3
    assert off.per_device is not None and off.per_device.multimodal is None
    assert off.per_device.reserve.encoder_bytes == 0
    assert not any("Encoder cache" in line for line in off.startup)


def test_skip_mm_profiling_keeps_the_cache_and_drops_the_pass() -> None:
    skipped = _place("qwen2.5-vl-7b", multimodal={"skip_profiling": True}).plans[0]
    assert skipped.per_device is not None and skipped.per_device.multimodal is not None
    assert skipped.per_device.multimodal.profile_bytes == 0
    assert skipped.per_device.reserve.encoder_bytes == 0


def test_max_pixels_sets_qwens_largest_image() -> None:
    encoder = load_preset("qwen2.5-vl-7b").encoder
    assert encoder is not None
    assert max_tokens_per_item(encoder, None) == 16384
    assert max_tokens_per_item(encoder, 1_003_520) == 1280  # 28 × 28 × 1280 px


def test_sglang_scales_its_default_fraction_for_the_tower() -> None:
    """`adjust_mem_fraction_for_vlm`: 0.95 for a ViT-L/14 (24 × 1024: LLaVA-1.5); Qwen2.5-VL's
    32 × 1280 tower: 0.95 × (1 − 0.1 × (32 · 1280² ÷ (24 · 1024²) − 1)) = 0.8471."""
    llava, qwen = load_preset("llava-1.5-7b").encoder, load_preset("qwen2.5-vl-7b").encoder
    assert llava is not None and qwen is not None
    assert vision_factor(llava) == pytest.approx(0.95)
    assert vision_factor(qwen) == pytest.approx(0.95 * (1 - 0.1 * (32 * 1280**2
                                                                  / (24 * 1024**2) - 1)))
    # Qwen2-VL's vision_config.hidden_size is the merger's 3,584 (its tower's is embed_dim):
    # 32 · 3584² ÷ (24 · 1024²) = 16.3, the factor at its floor, 0.95 × 0.8
    qwen2 = load_preset("qwen2-vl-7b")
    assert qwen2.encoder is not None and qwen2.decoder is not None
    assert vision_factor(qwen2.encoder, qwen2.model_type,
                         qwen2.decoder.hidden_size) == pytest.approx(0.76)
    era = serving.get("sglang")
    bare = copy.copy(era)
    bare.mm_rule = None  # type: ignore[misc]
    scaled = _place("llava-1.5-7b", "sglang").gpu_memory_utilization
    serving.register(bare)
    try:
        plain = _place("llava-1.5-7b", "sglang").gpu_memory_utilization
    finally:
        serving.unregister(bare)
    assert scaled == pytest.approx(plain * 0.95)
    asked = _place("llava-1.5-7b", "sglang", gpu_memory_utilization=0.8)
    assert asked.gpu_memory_utilization == 0.8  # an asked fraction is kept


def test_v0_refuses_an_asked_budget() -> None:
    with pytest.raises(InputError) as caught:
        _place("qwen2.5-vl-7b", "vllm@0.8", multimodal={"limit_per_prompt": {"image": 2}})
    assert caught.value.field == "limit_mm_per_prompt"


@pytest.mark.parametrize(("text", "expected"), [
    ("image=4,video=0", {"image": 4, "video": 0}),
    ('{"image": 2}', {"image": 2}),
    ('{"image": {"count": 3, "width": 512, "height": 512}}', {"image": 3}),
])
def test_limits_parse(text: str, expected: dict[str, int]) -> None:
    assert parse_limits(text) == expected


@pytest.mark.parametrize("text", ["image", "picture=2", "image=-1", "image=x", "{", "[1]",
                                  "image=99999999999"])
def test_bad_limits_are_refused(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_limits(text)
    assert caught.value.field == "limit_mm_per_prompt"


def test_text_models_ignore_the_budget() -> None:
    found = _place("llama-3.1-8b", multimodal=MultimodalRequest(
        limit_per_prompt={"image": 4}))
    assert found.plans[0].per_device is not None
    assert found.plans[0].per_device.multimodal is None


@pytest.mark.parametrize(("context", "seqs", "items"), [
    # 1,024 ÷ 576: one image fits a prompt, one sequence: one item, not 8,192 ÷ 576 = 14
    (1024, 1, 1),
    # 4,096 ÷ 576 = 7 images a prompt, one sequence: 7
    (4096, 1, 7),
    # two sequences of 7 would be 14; the budget's 14 binds
    (4096, 2, 14),
])
def test_the_items_one_prompt_holds_bound_the_profiled_items(context: int, seqs: int,
                                                             items: int) -> None:
    """vLLM profiles at most max_num_seqs × max(1, min(limit, max_model_len ÷ T)) items
    (`MultiModalBudget.get_max_items`, vllm/v1/worker/utils.py): a context shorter than
    the budget's items bounds them."""
    mm = _place("llava-1.5-7b", context=context, max_num_seqs=seqs).plans[0].per_device
    assert mm is not None and mm.multimodal is not None
    assert (mm.multimodal.tokens_per_item, mm.multimodal.encoder_budget_tokens) == (576, 8192)
    assert mm.multimodal.profiled_items == items
