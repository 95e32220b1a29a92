"""Media geometry: patches, merges, frames → feature tokens, and what they cost in the LM."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_inventory.engine.media import feature_tokens
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Media
from tests.conftest import Invoke

PATCH14 = Media(patch_size=14, image_size=448)


def test_seed_geometry() -> None:
    """448 × 448 at 14 px → 32 × 32 = 1,024 patches; doubling the side quadruples it."""
    assert feature_tokens(PATCH14).feature_tokens == 1024
    assert feature_tokens(PATCH14, width=896, height=896).feature_tokens == 4096


def test_merge_frames_and_class_token() -> None:
    qwen = Media(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, image_size=448)
    assert feature_tokens(qwen).feature_tokens == 256
    assert feature_tokens(qwen, frames=8).feature_tokens == 4 * 256
    clip = Media(patch_size=14, image_size=336, class_token=True)
    assert feature_tokens(clip).feature_tokens == 577


def test_given_tokens() -> None:
    assert feature_tokens(Media(tokens_per_item=2048)).feature_tokens == 2048


@pytest.mark.parametrize("side", [447, 450])
def test_sizes_must_tile(side: int) -> None:
    with pytest.raises(InputError):
        feature_tokens(PATCH14, width=side, height=side)


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 4))
def test_tokens_scale_with_area_and_frames(across: int, down: int, frames: int) -> None:
    media = Media(patch_size=14)
    one = feature_tokens(media, width=14 * across, height=14 * down)
    many = feature_tokens(media, width=14 * across, height=14 * down, frames=frames)
    assert one.feature_tokens == across * down
    assert many.feature_tokens == across * down * frames


def test_kv_counts_media_in_the_context(invoke: Invoke) -> None:
    text = invoke("kv", "-m", "qwen2.5-vl-7b", "--tokens", "1000", "-f", "json").json()
    with_image = invoke("kv", "-m", "qwen2.5-vl-7b", "--tokens", "1000", "--images", "1",
                        "--image-size", "448x448", "-f", "json").json()
    assert with_image["tokens"] == 1000 + 256
    assert with_image["total_bytes"] == text["total_bytes"] * 1256 // 1000


def test_inventory_reports_media(invoke: Invoke) -> None:
    data = invoke("inventory", "qwen2-vl-7b", "--image-size", "896x896", "-f", "json").json()
    assert data["media"]["feature_tokens"] == 1024
    assert data["state"]["media_tokens_per_request"] == 1024
    assert data["encoder"]["flops"] > 0
