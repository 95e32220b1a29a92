"""Every file in examples/ loads, and the three topologies give the chapter's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_inventory.engine.catalog import model_figures
from llm_inventory.engine.media import feature_tokens
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.devices import load_devices_file, resolve_device
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.model import Family, ModelSpec
from llm_inventory.spec.presets import load_preset

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODEL_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "devices.yaml")


def _load(name: str) -> ModelSpec:
    return load_model(str(EXAMPLES / name))


def test_the_promised_examples_exist() -> None:
    for name in ("dense-70b.yaml", "moe-8x7b.yaml", "vlm-2048.yaml", "diffusion-flux.yaml",
                 "embedding-bge-large.yaml", "devices.yaml"):
        assert (EXAMPLES / name).is_file(), name


@pytest.mark.parametrize("name", MODEL_FILES)
def test_every_model_file_loads(name: str) -> None:
    spec = _load(name)
    assert spec.source
    assert model_figures(spec).parameters > 0


def _state(spec: ModelSpec, tokens: int) -> tuple[int, int, int | None]:
    result = size_state(StateRequest(layers=state_layers(spec), tokens=tokens, dtype="bf16"))
    return result.bytes_per_token, result.bytes_per_sequence, result.bytes_per_token_per_layer


def test_dense_70b_is_the_worked_example() -> None:
    """Seed: 70 B parameters at 2 bytes = 140 GB; 4,096 B per token per layer, 320 KiB per
    token across 80 layers, about 2.44 GiB for an 8,000-token sequence."""
    spec = _load("dense-70b.yaml")
    counted = count_parameters(spec)
    assert counted.total == 70_000_000_000
    assert counted.weight_bytes == 140_000_000_000
    assert counted.given
    assert _state(spec, 8000) == (327_680, 2_621_440_000, 4096)
    assert 327_680 == 320 * 2**10
    assert spec.decoder is not None and spec.decoder.heads == 64
    assert spec.decoder.hidden_size == 8192


def test_moe_8x7b_resident_versus_active() -> None:
    """Seed: eight 7 B experts keep about 56 B resident and apply about 14 B per token."""
    spec = _load("moe-8x7b.yaml")
    counted = count_parameters(spec)
    assert counted.total == 56_000_000_000
    assert counted.active == 14_000_000_000
    assert (counted.experts, counted.top_k) == (8, 2)
    assert counted.weight_bytes == 112_000_000_000
    # Mixtral-like KV: 2 x 8 KV heads x 128 x 2 B x 32 layers.
    assert _state(spec, 1)[0] == 131_072


def test_vlm_2048_feature_tokens_per_image() -> None:
    """Seed: a vision-language model that produces 2,048 feature tokens per image."""
    spec = _load("vlm-2048.yaml")
    assert spec.family is Family.VLM and spec.encoder is not None
    geometry = feature_tokens(spec.encoder.media)
    assert geometry.feature_tokens == 2048
    assert feature_tokens(spec.encoder.media, frames=2).feature_tokens == 4096
    counted = count_parameters(spec)
    assert counted.total == 7_420_000_000
    # The image's feature tokens occupy context: 2,048 positions of 128 KiB of KV each.
    assert _state(spec, 2048)[1] == 268_435_456


def test_diffusion_example_is_the_flux_dev_preset() -> None:
    example = _load("diffusion-flux.yaml")
    preset = load_preset("flux-dev")
    assert example.diffusion == preset.diffusion
    assert example.dtype == preset.dtype
    assert model_figures(example).kv_bytes_per_token is None


def test_embedding_example_matches_the_bge_large_config() -> None:
    """The hand-written stack counts what transformers allocates for BGE-large:
    335,141,888 (tests/data/preset-oracle-totals.json)."""
    spec = _load("embedding-bge-large.yaml")
    assert spec.family is Family.ENCODER
    assert count_parameters(spec).total == 335_141_888
    assert state_layers(spec) == ()
    assert count_parameters(spec).total == count_parameters(load_preset("bge-large")).total


def test_devices_file_holds_a_96_gib_card() -> None:
    devices = load_devices_file(EXAMPLES / "devices.yaml")
    card = resolve_device("ex96", devices)
    assert card.id == "example-96g"
    assert card.memory_bytes == 96 * 2**30
    assert all("hypothetical" in text for text in card.sources.values())
