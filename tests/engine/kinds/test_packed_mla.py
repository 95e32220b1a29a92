"""vLLM's packed sparse-MLA records (`fp8_ds_mla`, `nvfp4_ds_mla`): bytes per token per layer
from the record's layout, the indexer key beside it, paging as indexed MLA."""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.packed_mla import record_bytes
from llm_inventory.engine.model_state import state_layers
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

KIND = kinds.get("packed_mla")


def _v32():  # type: ignore[no-untyped-def]
    path = DATA / "configs-2026/DeepSeek-V3.2.json"
    return from_hf_config(json.loads(path.read_text()), str(path))


def test_fp8_ds_mla_is_656_bytes_of_latent_and_132_of_indexer_key() -> None:
    """512 fp8 NoPE + 4 fp32 scales (16 B) + 64 bf16 rope (128 B) = 656, as vLLM's
    FlashMLA sparse cache shape; the indexer key stays 128 fp8 + a 4-byte scale."""
    spec = _v32()
    layer = state_layers(spec)[0]
    assert spec.decoder is not None
    packed = kinds.get(layer.kind).sparse_record(layer, spec.decoder, "fp8_ds_mla")
    assert packed is not None and packed.kind == "packed_mla"
    assert KIND.bytes_per_token(packed, "bf16") == 656 + 132  # the record's own format
    assert KIND.sequence_bytes(packed, 100, "fp8", 64) == 128 * 788


def test_nvfp4_ds_mla_is_352_bytes() -> None:
    """FlashMLA's nvfp4.fp8rope record: 256 B e2m1 NoPE, 64 B fp8 rope, 32 e4m3 scales."""
    spec = _v32()
    layer = state_layers(spec)[0]
    assert spec.decoder is not None
    packed = kinds.get(layer.kind).sparse_record(layer, spec.decoder, "nvfp4_ds_mla")
    assert packed is not None
    assert KIND.bytes_per_token(packed, "fp8") == 352 + 132
    assert record_bytes(512, 64, "nvfp4") == 352


def test_other_kinds_and_layouts_have_no_record() -> None:
    spec = _v32()
    layer = state_layers(spec)[0]
    assert spec.decoder is not None
    assert kinds.get(layer.kind).sparse_record(layer, spec.decoder, "fp8_e4m3") is None
    assert kinds.get("mla").sparse_record(layer, spec.decoder, "fp8_ds_mla") is None
    with pytest.raises(InputError):
        record_bytes(512, 64, "bf16")
    with pytest.raises(InputError, match="rope"):
        KIND.validate(layer.model_copy(update={"kind": "packed_mla"}))
