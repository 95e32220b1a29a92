"""Config against checkpoint, on synthetic tensor tables (no files: the engine is pure)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.checkpoint.classify import build_facts, classify
from llm_inventory.engine.checkpoint_compare import checkpoint_weight_bytes, compare_checkpoint
from llm_inventory.engine.params import count_parameters
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import CheckpointTensor, ModelSpec, TensorRole
from tests.checkpoint.synthetic import (
    BITS,
    DEEPSEEK_CONFIG,
    DEEPSEEK_PARAMETERS,
    LLAMA_CONFIG,
    Tensors,
    deepseek_tensors,
    llama_tensors,
)


def with_checkpoint(config: dict[str, Any], tensors: Tensors, *,
                    headers: bool = True) -> ModelSpec:
    spec = from_hf_config(config, "config.json", "synthetic")
    table = []
    for name, (dtype, shape) in tensors.items():
        component, role, layer = classify(name)
        elements = math.prod(shape)
        table.append(CheckpointTensor(
            name=name, dtype=dtype if headers else None,
            shape=tuple(shape) if headers else None,
            elements=elements if headers else None,
            bytes=elements * BITS[dtype] // 8 if headers else None,
            file="model.safetensors", component=component, role=role, layer=layer))
    total = sum(math.prod(s) * BITS[d] // 8 for d, s in tensors.values())
    facts = build_facts(fmt="safetensors", path="synthetic", files=["model.safetensors"],
                        tensors=table, headers_read=headers, total_bytes=total,
                        stack_layers=spec.decoder.layers if spec.decoder else None)
    return spec.model_copy(update={"checkpoint": facts})


# One DeepSeek-V3 MoE decoder layer of DEEPSEEK_CONFIG: MLA attention 11,560 (q_a 24×64,
# q_a norm 24, q_b 96×24, kv_a 24×64, kv_a norm 16, kv_b 128×16, o 64×64), router 4×64,
# 4 experts × 3 × 16×64, one shared expert 3 × 16×64, two norms of 64: 27,304. The MTP layer
# adds its embed_tokens and shared_head.head (256×64 each), enorm, hnorm, shared_head.norm
# (64 each) and eh_proj (64×128): 27,304 + 41,152 = 68,456.
MTP_PARAMETERS = 68_456


def test_deepseek_extra_layer_is_multi_token_prediction() -> None:
    spec = with_checkpoint(DEEPSEEK_CONFIG, deepseek_tensors())
    result = compare_checkpoint(spec)
    assert result.config_parameters == DEEPSEEK_PARAMETERS
    assert result.checkpoint_parameters == DEEPSEEK_PARAMETERS
    assert result.parameters_agree and result.difference == 0
    assert all(c.difference == 0 for c in result.components)
    assert all(check.agrees for check in result.checks)
    (extra,) = result.extra_layers
    assert (extra.layer, extra.kind, extra.parameters) == (3, "multi-token prediction",
                                                          MTP_PARAMETERS)
    assert result.extra_layer_parameters == MTP_PARAMETERS
    # e_score_correction_bias: a stored buffer (4 fp32) in layers 1, 2 and the MTP layer.
    (buffers,) = result.auxiliary
    assert (buffers.role, buffers.tensors, buffers.bytes) == (TensorRole.BUFFER, 3, 48)
    assert result.disagreements == [
        "layer 3 is past the config's 3 layers (multi-token prediction, 32 tensors: "
        "68,456 parameters, 136,928 B)"]
    everything = sum(math.prod(s) * 2 if d == "BF16" else math.prod(s) * 4
                     for d, s in deepseek_tensors().values())
    assert result.checkpoint_bytes == everything == checkpoint_weight_bytes(
        spec, include_extra_layers=True)
    assert result.model_bytes == checkpoint_weight_bytes(spec) == everything - (extra.bytes or 0)


def test_block_fp8_scales_are_scales() -> None:
    config = dict(DEEPSEEK_CONFIG, quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3"})
    spec = with_checkpoint(config, deepseek_tensors(fp8=True))
    result = compare_checkpoint(spec)
    assert result.parameters_agree
    roles = {a.role: (a.tensors, a.bytes) for a in result.auxiliary}
    # One fp32 scale per FP8 matmul weight (each fits one 128 × 128 block): 8 in the dense
    # layer, 20 per MoE layer (5 attention, 12 expert, 3 shared), the MTP layer included.
    assert roles[TensorRole.SCALE] == (68, 272)
    assert result.extra_layers[0].parameters == MTP_PARAMETERS


def test_kv_head_count_that_no_tensor_shape_matches() -> None:
    # The checkpoint's k_proj/v_proj are 2 heads × 16 wide; the config claims 4 KV heads.
    config = dict(LLAMA_CONFIG, num_key_value_heads=4)
    spec = with_checkpoint(config, llama_tensors())
    result = compare_checkpoint(spec)
    failed = {c.what: (c.config, c.checkpoint) for c in result.checks if not c.agrees}
    assert failed == {"key width (KV heads × head_dim)": (64, 32),
                      "value width (KV heads × value head_dim)": (64, 32)}
    # 2 layers × (k + v) × 32 rows × 64 fewer parameters than the config implies.
    assert result.difference == -2 * 2 * 32 * 64
    assert not result.parameters_agree
    assert any("key width" in d and "has 32" in d for d in result.disagreements)


def test_unexplained_tensor_is_listed() -> None:
    tensors = dict(llama_tensors(), **{"model.layers.0.mystery.weight": ("BF16", [3, 5])})
    result = compare_checkpoint(with_checkpoint(LLAMA_CONFIG, tensors))
    assert result.unexplained == ["model.layers.0.mystery.weight"]
    assert result.difference == 15


def gptq_tensors(config: dict[str, Any], bits: int = 4, group: int = 128) -> Tensors:
    """GPTQ layout: qweight int32 [in × bits / 32, out], qzeros, fp16 scales, g_idx."""
    plain = llama_tensors(config, "F16")
    tensors: Tensors = {}
    for name, (dtype, shape) in plain.items():
        if ".layers." in name and name.endswith("proj.weight"):
            base = name.removesuffix(".weight")
            out, inp = shape
            tensors[base + ".qweight"] = ("I32", [inp * bits // 32, out])
            tensors[base + ".qzeros"] = ("I32", [-(-inp // group), out * bits // 32])
            tensors[base + ".scales"] = ("F16", [-(-inp // group), out])
            tensors[base + ".g_idx"] = ("I32", [inp])
        else:
            tensors[name] = (dtype, shape)
    return tensors


def test_gptq_packed_weights_unpack_to_the_config_count() -> None:
    config = dict(LLAMA_CONFIG, hidden_size=128, intermediate_size=256, torch_dtype="float16",
                  quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128})
    spec = with_checkpoint(config, gptq_tensors(config))
    result = compare_checkpoint(spec)
    assert result.checkpoint_parameters == result.config_parameters == count_parameters(
        spec).total
    roles = {a.role for a in result.auxiliary}
    assert roles == {TensorRole.SCALE, TensorRole.ZERO_POINT, TensorRole.INDEX}
    assert any("packed integer weights counted at 4 bits" in n for n in result.notes)


def test_index_only_still_names_extra_layers() -> None:
    spec = with_checkpoint(DEEPSEEK_CONFIG, deepseek_tensors(), headers=False)
    result = compare_checkpoint(spec)
    assert not result.headers_read and result.checkpoint_parameters is None
    assert result.parameters_agree is None and result.checks == []
    (extra,) = result.extra_layers
    assert extra.kind == "multi-token prediction" and extra.parameters is None
    assert checkpoint_weight_bytes(spec) == result.checkpoint_bytes


def test_no_checkpoint() -> None:
    spec = from_hf_config(LLAMA_CONFIG, "config.json")
    assert checkpoint_weight_bytes(spec) is None
    with pytest.raises(ValueError, match="no checkpoint facts"):
        compare_checkpoint(spec)


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 4),
    kv=st.sampled_from([1, 2, 4]),
    group=st.sampled_from([1, 2]),
    head_dim=st.sampled_from([8, 16]),
    intermediate=st.integers(1, 64),
    vocab=st.integers(1, 300),
    tied=st.booleans(),
)
def test_llama_checkpoints_match_their_config(layers: int, kv: int, group: int, head_dim: int,
                                              intermediate: int, vocab: int,
                                              tied: bool) -> None:
    heads = kv * group
    config = dict(LLAMA_CONFIG, num_hidden_layers=layers, num_key_value_heads=kv,
                  num_attention_heads=heads, hidden_size=heads * head_dim,
                  intermediate_size=intermediate, vocab_size=vocab, tie_word_embeddings=tied)
    tensors = llama_tensors(config)
    if tied:
        del tensors["lm_head.weight"]
    result = compare_checkpoint(with_checkpoint(config, tensors))
    assert result.parameters_agree, result.disagreements
    assert result.disagreements == []
    assert result.model_bytes == result.checkpoint_bytes == 2 * result.config_parameters


def test_the_comparison_is_pure() -> None:
    import subprocess
    import sys

    code = ("import sys, llm_inventory.engine.checkpoint_compare\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'typer', 'rich', 'click', 'yaml', 'gguf', 'numpy'}))\n"
            "print(sorted(m for m in sys.modules if m.startswith('llm_inventory.checkpoint')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split("\n")[:2] == ["[]", "[]"]
