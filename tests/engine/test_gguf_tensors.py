"""GGUF weights typed per tensor as llama.cpp's quantizer types them (engine.gguf_tensors).

File sizes are the ones Hugging Face shows for real GGUF files (sources beside each row). A
file holds the tensors plus metadata (the tokenizer chiefly: 0.5–10 MB) and 32-byte alignment
padding; Hugging Face rounds to two decimals (±5 MB) or, past 10 GB, often to one (±50 MB).
So a figure must land within 16 MB of a two-decimal quote and 60 MB of a one-decimal one.
"""

from __future__ import annotations

from collections import Counter

import pytest

from llm_inventory.engine.dtypes import weight_dtypes
from llm_inventory.engine.gguf_tensors import (
    GgufQuantization,
    fallback,
    gguf_quantization,
    gguf_tensors,
    gguf_trust,
)
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.weight_scheme import describe_weights
from llm_inventory.spec.presets import load_preset

MB = 1_000_000

_8B = "https://huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF (file pages)"
_70B = ("bartowski's Llama-3.1-70B table (Llama-3.1-Nemotron-70B quants, same shapes), "
        "quoted at ozeki.chat/p_8590-understanding-ai-model-files.html")
_QWEN = "https://huggingface.co/bartowski/Qwen2.5-7B-Instruct-GGUF (file page)"
_QWEN72 = "https://huggingface.co/bartowski/Qwen2.5-72B-Instruct-GGUF (file page)"
_QWEN3 = "https://huggingface.co/mradermacher/Qwen3-30B-A3B-python-coder-GGUF (Q4_K_M page)"

# (preset, file type, quoted size in GB, decimals quoted, source)
PUBLISHED = [
    ("llama-3.1-8b", "Q4_K_M", 4.92, 2, _8B),
    ("llama-3.1-8b", "Q3_K_M", 4.02, 2, _8B),
    ("qwen2.5-7b", "Q4_K_M", 4.68, 2, _QWEN),
    ("qwen2.5-vl-7b", "Q4_K_M", 4.68, 2, _QWEN + "; the VL model's LLM file is the same size, "
     "its vision tower is the separate mmproj"),
    ("llama-3.1-70b", "Q8_0", 74.98, 2, _70B),
    ("llama-3.1-70b", "Q6_K", 57.89, 2, _70B),
    ("llama-3.1-70b", "Q5_K_M", 49.95, 2, _70B),
    ("llama-3.1-70b", "Q5_K_S", 48.66, 2, _70B),
    ("llama-3.1-70b", "Q4_K_M", 42.52, 2, _70B),
    ("llama-3.1-70b", "Q4_K_S", 40.35, 2, _70B),
    ("llama-3.1-70b", "Q3_K_L", 37.14, 2, _70B),
    ("llama-3.1-70b", "Q3_K_M", 34.27, 2, _70B),
    ("llama-3.1-70b", "Q3_K_S", 30.91, 2, _70B),
    ("llama-3.1-70b", "Q2_K", 26.4, 1,
     "https://huggingface.co/bartowski/Meta-Llama-3.1-70B-Instruct-GGUF (Q2_K page)"),
    ("qwen2.5-72b", "Q4_K_M", 47.4, 1, _QWEN72),
    ("qwen3-30b-a3b", "Q4_K_M", 18.6, 1, _QWEN3),
]

# Mixtral-8x22B-v0.1, llama.cpp b2636 (bartowski/Mixtral-8x22B-v0.1-GGUF's table): 8 experts,
# so attn_v/attn_k Q8_0 and attn_output Q5_K, and the IQ mixes. That release stored the MoE
# router F16 (5.5 MB less than today's F32), which is why these land a few MB under ours.
MIXTRAL_8X22B = [("Q5_K_M", 99.96), ("Q5_K_S", 96.97), ("Q4_K_M", 85.58), ("Q4_K_S", 80.47),
                 ("Q3_K_L", 72.57), ("Q3_K_M", 67.78), ("Q3_K_S", 61.49), ("Q2_K", 52.10),
                 ("IQ4_XS", 76.35), ("IQ3_M", 64.49), ("IQ3_XS", 58.22)]


def _tolerance(decimals: int) -> int:
    return 16 * MB if decimals == 2 else 60 * MB


@pytest.mark.parametrize(("preset", "file_type", "quoted", "decimals", "source"), PUBLISHED)
def test_published_gguf_sizes(preset: str, file_type: str, quoted: float, decimals: int,
                              source: str) -> None:
    ours = count_parameters(load_preset(preset), file_type).weight_bytes
    assert abs(quoted * 1e9 - ours) <= _tolerance(decimals), (preset, file_type, ours, source)


@pytest.mark.parametrize(("file_type", "quoted"), MIXTRAL_8X22B)
def test_mixtral_8x22b_sizes(file_type: str, quoted: float) -> None:
    ours = count_parameters(load_preset("mixtral-8x22b"), file_type).weight_bytes
    assert abs(quoted * 1e9 - ours) <= 16 * MB, (file_type, ours)


def _types(preset: str, file_type: str) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for t in gguf_tensors(load_preset(preset), file_type):
        module = t.name.split(".")[-2] if t.layer is not None else t.name
        found[(module, t.type)] += 1
    return found


def test_q4_k_m_bumps_attn_v_and_ffn_down_on_use_more_bits_layers() -> None:
    spec = load_preset("llama-3.1-8b")
    tensors = gguf_tensors(spec, "Q4_K_M")
    n = 32
    more = {i for i in range(n) if i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2}
    assert len(more) == 16
    for module in ("v_proj", "down_proj"):
        wide = {t.layer for t in tensors if f".{module}." in t.name and t.type == "q6_k"}
        assert wide == more
    types = _types("llama-3.1-8b", "Q4_K_M")
    assert types[("lm_head.weight", "q6_k")] == 1
    assert types[("model.embed_tokens.weight", "q4_k")] == 1
    assert types[("q_proj", "q4_k")] == 32 and types[("norm_0", "f32")] == 32


def test_seventy_b_attn_v_is_q5_k_where_it_would_be_q4_k() -> None:
    """LLM_TYPE_70B (80 Llama layers with grouped KV heads): attn_v Q5_K, not Q4_K."""
    types = _types("llama-3.1-70b", "Q4_K_M")
    assert types[("v_proj", "q4_k")] == 0
    assert types[("v_proj", "q5_k")] + types[("v_proj", "q6_k")] == 80
    # the 8B is no 70B type: its attn_v keeps Q4_K off the bumped layers
    assert _types("llama-3.1-8b", "Q4_K_M")[("v_proj", "q4_k")] == 16


def test_eight_experts_widen_attention() -> None:
    types = _types("mixtral-8x7b", "Q4_K_M")
    assert types[("k_proj", "q8_0")] == 32 and types[("v_proj", "q8_0")] == 32
    assert types[("o_proj", "q5_k")] == 32
    assert types[("gate", "f32")] == 32  # the router is never quantized
    # a 128-expert model keeps the plain rules
    assert _types("qwen3-30b-a3b", "Q4_K_M")[("k_proj", "q4_k")] == 48


def test_rows_that_are_not_whole_blocks_fall_back() -> None:
    assert fallback("q4_k", 2880) == "q5_0"
    assert fallback("q6_k", 2880) == "q8_0"
    assert fallback("iq4_xs", 2880) == "iq4_nl"
    assert fallback("q3_k", 2880) == "q4_0"
    assert fallback("q4_k", 4096) == "q4_k"
    assert fallback("q4_k", 100) == "f16"  # not even whole blocks of 32
    # gpt-oss's 2,880-wide rows: the output falls back to Q8_0 (not whole Q4_K blocks)
    types = _types("gpt-oss-20b", "Q4_K_M")
    assert types[("lm_head.weight", "q8_0")] == 1
    assert types[("q_proj", "q5_0")] == 24  # 2,880-wide rows: Q4_K falls back to Q5_0
    assert types[("o_proj", "q4_k")] == 24  # 4,096-wide rows keep Q4_K


def test_tied_embeddings_are_typed_as_the_output() -> None:
    spec = load_preset("gemma-2-9b")
    assert spec.decoder is not None and spec.decoder.tied_embeddings
    types = Counter(t.type for t in gguf_tensors(spec, "Q4_K_M") if "embed" in t.name)
    assert types == Counter({"q6_k": 1})


def test_pure_ggml_type_and_q8_0() -> None:
    spec = load_preset("llama-3.1-8b")
    pure = Counter(t.type for t in gguf_tensors(spec, "q4_k"))
    assert set(pure) == {"q4_k", "f32"}
    q8 = Counter(t.type for t in gguf_tensors(spec, "Q8_0"))
    assert set(q8) == {"q8_0", "f32"}
    assert gguf_quantization("bf16", spec) is None
    assert gguf_quantization("q4_k_xl", spec) is None


def test_vision_tower_is_the_separate_mmproj() -> None:
    vl = count_parameters(load_preset("qwen2.5-vl-7b"), "Q4_K_M")
    text = count_parameters(load_preset("qwen2.5-7b"), "Q4_K_M")
    assert vl.weight_bytes == text.weight_bytes
    encoder = [c for c in vl.by_component if c.component.value in ("encoder", "projector")]
    assert encoder and all(c.weight_bytes == 0 for c in encoder)


def test_phi3_fused_qkv_matches_the_log_but_for_the_rule_change() -> None:
    """L03 (Phi-3-mini Q4, 2025): CUDA0 2,228.82 MiB + CPU-mapped token_embd 52.84 MiB. That
    file types attn_qkv Q5_K in every layer (llama.cpp's separate QKV branch); today's
    quantizer types it as attn_v (Q6_K on the 16 use_more_bits layers, Q4_K elsewhere):
    9,216 × 3,072 values × 32 layers × 1/256 byte more, 3.375 MiB."""
    spec = load_preset("phi-3-mini")
    ours = count_parameters(spec, "Q4_K_M").weight_bytes
    rows = 9216 * 3072 // 256
    change = 16 * rows * 210 + 16 * rows * 144 - 32 * rows * 176
    printed = (2228.82 + 52.84) * 2**20
    assert abs(ours - change - printed) <= 0.01 * 2**20
    embd = [t for t in gguf_tensors(spec, "Q4_K_M") if "embed" in t.name]
    assert round(embd[0].bytes / 2**20, 2) == 52.84


def test_labels_say_how_far_the_rules_were_checked() -> None:
    llama = load_preset("llama-3.1-8b")
    _, q = weight_dtypes(llama, "Q4_K_M")
    assert isinstance(q, GgufQuantization)
    trust = gguf_trust(llama, q)
    assert trust is not None and trust.kind == "exact"
    deepseek = load_preset("deepseek-v3")
    _, q = weight_dtypes(deepseek, "Q4_K_M")
    found = gguf_trust(deepseek, q)
    assert found is not None and found.kind == "engine rule"
    assert gguf_trust(llama, None) is None
    scheme = describe_weights(llama, "Q4_K_M")
    assert "per tensor" in scheme.label and scheme.short == "gguf q4_k_m"
