"""vLLM 0.19's pool for models with Mamba or linear-attention layers: the attention block
enlarged until its page holds one state page, the state page padded to it, each state layer
one page per request, the layers grouped as for any hybrid model.

Real figures these are held to:
- vLLM 0.19.1, kaitchup/Qwen3.5-27B-autoround-W4A16 (Qwen3.5-27B's shapes), TP 1, KV dtype
  auto, prefix caching off (its default for hybrid models), a public start-up log:
  "[config.py:281] Setting attention block size to 784 tokens to ensure that attention page
  size is >= mamba page size." and "[config.py:312] Padding mamba page size by 0.13% to ensure
  that mamba page size and attention page size are exactly equal."
- A public deployment note on Qwen3.6-35B-A3B (Qwen3.5-35B-A3B's shapes), TP 2, fp8 KV, an
  8 GiB pool per rank, max_model_len 1,000,000, prefix caching off, quoting its engine's log:
  "Setting attention block size to 2096 tokens", group block sizes [1000000, 1000000,
  1000000, 2096] (three GDN groups, one attention group of 10 layers), num_gpu_blocks 800,
  481 blocks per request at 1,000,000 tokens, concurrency 1.6632.
"""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.serving.base import EngineSettings, KvLayer, device_layers_by_index
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.engine.serving.vllm import ENGINE
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

GIB = 2**30


def _layers(relative: str, tp: int = 1, kv_dtype: str = "bf16") -> list[KvLayer]:
    spec = from_hf_config(json.loads((DATA / relative).read_text()), relative)
    assert spec.decoder is not None
    per = device_layers_by_index(state_layers(spec), tp, kv_dtype, spec.decoder.layers)
    return [layer for layers in per for layer in layers]


def _settings(max_model_len: int, block_size: int = 16) -> EngineSettings:
    return EngineSettings(max_model_len=max_model_len, max_num_batched_tokens=8192,
                          max_num_seqs=1024, block_size=block_size, memory_fraction=0.92,
                          kv_dtype="bf16")


def test_qwen3_5_27b_prints_what_vllm_0_19_1_printed() -> None:
    layers = _layers("configs-2026/Qwen3.5-27B.json")
    settings = _settings(8192)
    capacity = ENGINE.pool_layout(layers, settings).capacity(40 * GIB)
    lines = ENGINE.startup_lines(capacity, 40 * GIB, settings)
    assert lines[:2] == [
        "Setting attention block size to 784 tokens to ensure that attention page size is "
        ">= mamba page size.",
        "Padding mamba page size by 0.13% to ensure that mamba page size and attention page "
        "size are exactly equal."]


def test_qwen3_5_35b_tp2_fp8_pool_as_the_engine_reported() -> None:
    layers = _layers("configs-2026/Qwen3.5-35B-A3B.json", tp=2, kv_dtype="fp8")
    layout = pool_layout(layers, block_size=16, max_model_len=1_000_000,
                         max_num_batched_tokens=8192)
    assert layout.attention_block == 2096
    assert layout.layer_page == 2096 * 512 == layout.state_page  # no padding needed
    assert layout.groups == 4 and layout.page == 10 * 1_073_152
    blocks, tokens, concurrency = layout.measure(8 * GIB)
    assert blocks == 800
    assert layout.need == 3 + -(-1_000_000 // 2096) == 481
    assert round(concurrency, 4) == 1.6632
    # 0.19 prints blocks ÷ groups × the smallest group block (2096 here).
    assert tokens == 800 // 4 * 2096


def test_the_block_is_aligned_to_16_and_a_larger_ask_is_kept() -> None:
    layers = _layers("configs-2026/Qwen3-Next-80B-A3B.json")
    # 2 KV heads × 256 × 2 × 2 B per token; state 8,192 × 3 × 2 + 32 × 128 × 128 × 2 B (bf16).
    state = 8192 * 3 * 2 + 32 * 128 * 128 * 2
    layout = pool_layout(layers, block_size=16, max_model_len=32_768,
                         max_num_batched_tokens=8192)
    assert layout.attention_block == 16 * -(-state // (16 * 2048)) == 544
    asked = pool_layout(layers, block_size=1024, max_model_len=32_768,
                        max_num_batched_tokens=8192)
    assert asked.attention_block == 1024 and asked.layer_page == 1024 * 2048


def test_latent_attention_aligns_the_block_to_64() -> None:
    """Kimi Linear's MLA layers: MLA backends' kernel block of 64
    (`HybridAttentionMambaModelConfig`)."""
    layers = _layers("transformers-defaults-2026/kimi_linear.json")
    layout = pool_layout(layers, block_size=16, max_model_len=32_768,
                         max_num_batched_tokens=8192)
    state = 12_288 * 3 * 2 + 32 * 128 * 128 * 4
    assert layout.attention_block == 64 * -(-state // (64 * 576 * 2))


@pytest.mark.parametrize(("relative", "groups"), [
    # Nemotron 3 Nano: 6 attention and 23 Mamba layers: groups of 6, the last Mamba one
    # padded; the MoE layers keep nothing.
    ("configs-2026/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", 1 + 4),
    # Falcon-H1: attention and Mamba in all 32 layers: one group of each.
    ("transformers-defaults-2026/falcon_h1.json", 2),
    # Qwen3-Next: 12 attention, 36 GDN layers.
    ("configs-2026/Qwen3-Next-80B-A3B.json", 4),
])
def test_state_layers_join_the_groups(relative: str, groups: int) -> None:
    layout = pool_layout(_layers(relative), block_size=16, max_model_len=16_384,
                         max_num_batched_tokens=8192)
    assert layout.groups == groups
    attention_groups = 1
    block = layout.attention_block
    assert block is not None
    assert layout.need == attention_groups * -(-16_384 // block) + (groups - 1)
    assert layout.fixed == 0  # nothing is charged beside the pages


def test_mamba_alone_is_one_page_of_every_layer_per_request() -> None:
    """No attention: the Mamba layers form one uniform group whose block is max_model_len
    tokens (`MambaModelConfig`: mamba_block_size = max_model_len)."""
    state = 10 * 1000
    layers = [KvLayer(kind="recurrent", fixed_bytes=1000, split_kv=False)] * 10
    layout = pool_layout(layers, block_size=16, max_model_len=4096,
                         max_num_batched_tokens=8192)
    assert (layout.page, layout.groups, layout.need) == (state, 1, 1)
    blocks, tokens, concurrency = layout.measure(25 * state + 7)
    assert (blocks, tokens, concurrency) == (25, 25 * 4096, 25)


def test_a_model_without_fixed_state_pages_as_before() -> None:
    layers = [KvLayer(kind="full", bytes_per_token=4096)] * 32
    layout = pool_layout(layers, block_size=16, max_model_len=8192,
                         max_num_batched_tokens=8192)
    assert layout.attention_block is None and layout.state_page == 0
    assert (layout.page, layout.groups, layout.need) == (16 * 4096 * 32, 1, 512)


def test_jamba_pages_its_mamba_layers_too() -> None:
    """vLLM applies the same rule to Jamba (a hybrid model): 4 attention layers of 8 KV
    heads × 128, 28 Mamba-1 layers of (8,192 × 3) + (8,192 × 16) bf16 elements."""
    from llm_inventory.spec.presets import load_preset

    spec = load_preset("jamba-v0.1")
    assert spec.decoder is not None
    per = device_layers_by_index(state_layers(spec), 1, "bf16", spec.decoder.layers)
    layers = [layer for group in per for layer in group]
    layout = pool_layout(layers, block_size=16, max_model_len=8192,
                         max_num_batched_tokens=8192)
    state = (8192 * 3 + 8192 * 16) * 2
    assert layout.attention_block == 16 * -(-state // (16 * 4096)) == 80
    assert layout.groups == 1 + 7 and layout.need == -(-8192 // 80) + 7
