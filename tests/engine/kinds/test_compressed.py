"""DeepSeek-V4's kinds: a window of K = V entries on every layer, compressed entries at
one per ratio tokens (with indexer keys on CSA layers), the compressor's fixed state."""

from __future__ import annotations

import json

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.compressed import entry_bytes
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.serving.base import device_layers_by_index
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA


def _layers():  # type: ignore[no-untyped-def]
    path = DATA / "configs-2026" / "DeepSeek-V4-Flash.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    return {run.kind: run for run in state_layers(spec)}


def test_entry_bytes_follow_flashmla_at_fp8() -> None:
    """448 nope bytes in fp8 + 64 rope values in bf16 + 7 scale bytes + 1 pad = 584
    (vLLM's `head_bytes`); at bf16 an entry is 512 × 2."""
    assert entry_bytes(512, 64, "fp8") == 584
    assert entry_bytes(512, 64, "bf16") == 1024


def test_state_per_kind() -> None:
    runs = _layers()
    swa, csa, hca = runs["swa_kv"], runs["csa"], runs["hca"]
    tokens = 1_000
    # the window alone: min(tokens, 128) entries
    assert kinds.get("swa_kv").sequence_bytes(swa, tokens, "bf16", None) == 128 * 1024
    assert kinds.get("swa_kv").sequence_bytes(swa, 10, "bf16", None) == 10 * 1024
    # compressor state: kv_state + score_state, fp32 (coff·ratio × coff·head_dim each)
    csa_state = 2 * 8 * 1024 * 4 + 2 * 8 * 256 * 4
    hca_state = 2 * 128 * 512 * 4
    assert kinds.get("csa").sequence_bytes(csa, tokens, "bf16", None) == (
        250 * (1024 + 132) + 128 * 1024 + csa_state)
    assert kinds.get("hca").sequence_bytes(hca, tokens, "bf16", None) == (
        7 * 1024 + 128 * 1024 + hca_state)
    assert kinds.get("csa").fixed_bytes(csa, "bf16") == 128 * 1024 + csa_state
    assert kinds.get("hca").bytes_per_token(hca, "bf16") == 8  # 1,024 B per 128 tokens


def test_compressed_layers_page_as_one_group_and_windows_are_fixed() -> None:
    path = DATA / "configs-2026" / "DeepSeek-V4-Flash.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    layers = [x for one in device_layers_by_index(state_layers(spec), 1, "bf16", 43)
              for x in one]
    pool = pool_layout(layers, block_size=64, max_model_len=65536, max_num_batched_tokens=8192)
    assert pool.groups == 1 and pool.need == 65536 // 64
    assert pool.page == 64 * (21 * -(-(1024 + 132) // 4) + 20 * 8)
    windows = 43 * 128 * 1024
    state = 21 * (2 * 8 * 1024 * 4 + 2 * 8 * 256 * 4) + 20 * 2 * 128 * 512 * 4
    assert pool.fixed == windows + state


def test_release_rules_and_tp() -> None:
    assert "window" in kinds.get("csa").release and "compressed" in kinds.get("hca").release
    path = DATA / "configs-2026" / "DeepSeek-V4-Flash.json"
    spec = from_hf_config(json.loads(path.read_text()), str(path))
    assert spec.decoder is not None
    assert kinds.get("csa").tp_limits(spec.decoder, 16)[0]  # 8 output groups
    assert kinds.get("csa").tp_limits(spec.decoder, 8) == (
        [], ["the single K = V head and its cache are replicated on every TP rank"])
