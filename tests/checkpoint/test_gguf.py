"""GGUF files written with llama.cpp's own `gguf` writer, read back: shapes, bytes, specs."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

# The dev extra installs gguf (and numpy with it): these tests fail, never skip, without it.
import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest

from llm_inventory.checkpoint.gguf import _reader_class, check_magic, read_gguf
from llm_inventory.engine.checkpoint_compare import checkpoint_weight_bytes, compare_checkpoint
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.model import Family, LayerKind
from tests.checkpoint.gguf_files import GGUFTensors, llama_gguf, write_gguf  # noqa: E402

Q = gguf.GGMLQuantizationType


def test_llama_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "tiny-llama-Q8_0.gguf"
    written = llama_gguf(path)
    checkpoint = read_gguf(path)
    assert checkpoint.files == [path.name]
    by_name = {t.name: t for t in checkpoint.tensors}
    assert set(by_name) == set(written)
    for name, (kind, shape) in written.items():
        tensor = by_name[name]
        assert tensor.dtype == kind.name and tensor.shape == tuple(shape)
    # Q8_0: 34 bytes per block of 32 (one fp16 scale, 32 int8 values).
    q = by_name["blk.0.ffn_up.weight"]
    assert (q.elements, q.bytes) == (160 * 64, 160 * 64 // 32 * 34)
    assert checkpoint.metadata["tokenizer.ggml.tokens"].length == 128

    spec = load_model(str(path))
    assert spec.name == "tiny-llama" and spec.family is Family.DENSE
    stack = spec.decoder
    assert stack is not None
    assert (stack.layers, stack.hidden_size, stack.heads, stack.kv_heads, stack.head_dim,
            stack.intermediate_size, stack.vocab_size) == (2, 64, 4, 2, 16, 160, 128)
    assert not stack.tied_embeddings and stack.mlp == "gated" and stack.norms_per_layer == 2
    assert spec.max_context == 2048 and spec.dtype == "fp16"
    assert spec.quantization is not None and spec.quantization.method == "gguf Q8_0"
    assert spec.quantization.bits == 8.5
    # The same shapes as the config-derived Llama: 102,720 parameters (transformers 5.23.0,
    # meta device, LlamaForCausalLM for tests.checkpoint.synthetic.LLAMA_CONFIG).
    assert count_parameters(spec).total == 102_720
    facts = spec.checkpoint
    assert facts is not None and facts.format == "gguf"
    assert {t.key: t.bytes for t in facts.by_dtype} == {
        "Q8_0": 94_208 // 32 * 34, "F16": 128 * 64 * 2, "F32": 5 * 64 * 4}
    assert checkpoint_weight_bytes(spec) == facts.total_bytes == 117_760
    comparison = compare_checkpoint(spec)
    assert comparison.parameters_agree and comparison.disagreements == []
    assert all(check.agrees for check in comparison.checks)


def qwen3moe_tensors(layers: int = 2, experts: int = 4) -> tuple[dict[str, Any], GGUFTensors]:
    h, heads, kv, d, eff, vocab = 256, 4, 2, 64, 256, 64
    tensors: GGUFTensors = {"token_embd.weight": (Q.Q4_K, [vocab, h])}
    for i in range(layers):
        b = f"blk.{i}."
        tensors.update({
            b + "attn_norm.weight": (Q.F32, [h]),
            b + "attn_q.weight": (Q.Q4_K, [heads * d, h]),
            b + "attn_k.weight": (Q.Q4_K, [kv * d, h]),
            b + "attn_v.weight": (Q.Q4_K, [kv * d, h]),
            b + "attn_output.weight": (Q.Q4_K, [h, heads * d]),
            b + "attn_q_norm.weight": (Q.F32, [d]),
            b + "attn_k_norm.weight": (Q.F32, [d]),
            b + "ffn_norm.weight": (Q.F32, [h]),
            b + "ffn_gate_inp.weight": (Q.F32, [experts, h]),
            b + "ffn_gate_exps.weight": (Q.Q4_K, [experts, eff, h]),
            b + "ffn_up_exps.weight": (Q.Q4_K, [experts, eff, h]),
            b + "ffn_down_exps.weight": (Q.Q4_K, [experts, h, eff]),
        })
    tensors["output_norm.weight"] = (Q.F32, [h])
    tensors["output.weight"] = (Q.Q6_K, [vocab, h])
    meta = {
        "{arch}.block_count": layers, "{arch}.embedding_length": h,
        "{arch}.feed_forward_length": 768, "{arch}.expert_feed_forward_length": eff,
        "{arch}.attention.head_count": heads, "{arch}.attention.head_count_kv": kv,
        "{arch}.attention.key_length": d, "{arch}.attention.value_length": d,
        "{arch}.expert_count": experts, "{arch}.expert_used_count": 2,
        "{arch}.context_length": 4096,
        "general.file_type": int(gguf.LlamaFileType.MOSTLY_Q4_K_M),
    }
    return meta, tensors


def test_qwen3moe_with_k_quants(tmp_path: Path) -> None:
    path = tmp_path / "moe.gguf"
    meta, tensors = qwen3moe_tensors()
    write_gguf(path, "qwen3moe", meta, tensors)
    spec = load_model(str(path))
    stack = spec.decoder
    assert spec.family is Family.MOE and stack is not None and stack.moe is not None
    moe = stack.moe
    assert (moe.experts, moe.top_k, moe.expert_intermediate_size, moe.first_dense) == (4, 2,
                                                                                      256, 0)
    assert stack.qk_norm == "head" and stack.head_dim == 64
    facts = spec.checkpoint
    assert facts is not None
    by = {t.key: (t.elements, t.bytes) for t in facts.by_dtype}
    # Q4_K: 144 bytes per 256 elements; Q6_K: 210 bytes per 256.
    q4 = 64 * 256 + 2 * (256 * 256 * 2 + 128 * 256 * 2 + 3 * 4 * 256 * 256)
    assert by["Q4_K"] == (q4, q4 // 256 * 144)
    assert by["Q6_K"] == (64 * 256, 64 * 256 // 256 * 210)
    assert spec.quantization is not None and spec.quantization.method == "gguf Q4_K_M"
    comparison = compare_checkpoint(spec)
    assert comparison.parameters_agree, comparison.disagreements
    experts = next(c for c in comparison.checks if c.what == "experts per MoE layer")
    assert experts.checkpoint == 4 and experts.agrees


def test_deepseek2_mla_and_nextn_layer(tmp_path: Path) -> None:
    """DeepSeek's MLA as newer conversions write it (multi-query form plus *_mla widths),
    with one multi-token-prediction layer stored as blk.<n>.nextn.*."""
    h, heads, ql, kvl, rope, nope, v, vocab = 64, 4, 24, 16, 8, 16, 16, 256
    layers = 2
    tensors: GGUFTensors = {"token_embd.weight": (Q.F32, [vocab, h])}
    for i in range(layers + 1):
        b = f"blk.{i}."
        tensors.update({
            b + "attn_norm.weight": (Q.F32, [h]),
            b + "attn_q_a.weight": (Q.F32, [ql, h]),
            b + "attn_q_a_norm.weight": (Q.F32, [ql]),
            b + "attn_q_b.weight": (Q.F32, [heads * (nope + rope), ql]),
            b + "attn_kv_a_mqa.weight": (Q.F32, [kvl + rope, h]),
            b + "attn_kv_a_norm.weight": (Q.F32, [kvl]),
            b + "attn_k_b.weight": (Q.F32, [heads, kvl, nope]),
            b + "attn_v_b.weight": (Q.F32, [heads, v, kvl]),
            b + "attn_output.weight": (Q.F32, [h, heads * v]),
            b + "ffn_norm.weight": (Q.F32, [h]),
            b + "ffn_gate.weight": (Q.F32, [96, h]),
            b + "ffn_up.weight": (Q.F32, [96, h]),
            b + "ffn_down.weight": (Q.F32, [h, 96]),
        })
    tensors[f"blk.{layers}.nextn.eh_proj.weight"] = (Q.F32, [h, 2 * h])
    tensors[f"blk.{layers}.nextn.enorm.weight"] = (Q.F32, [h])
    tensors["output_norm.weight"] = (Q.F32, [h])
    tensors["output.weight"] = (Q.F32, [vocab, h])
    meta = {
        "{arch}.block_count": layers + 1, "{arch}.nextn_predict_layers": 1,
        "{arch}.embedding_length": h, "{arch}.feed_forward_length": 96,
        "{arch}.attention.head_count": heads, "{arch}.attention.head_count_kv": 1,
        "{arch}.attention.key_length": kvl + rope, "{arch}.attention.value_length": kvl,
        "{arch}.attention.key_length_mla": nope + rope, "{arch}.attention.value_length_mla": v,
        "{arch}.attention.q_lora_rank": ql, "{arch}.attention.kv_lora_rank": kvl,
        "{arch}.rope.dimension_count": rope, "{arch}.context_length": 4096,
    }
    path = tmp_path / "ds.gguf"
    write_gguf(path, "deepseek2", meta, tensors)
    spec = load_model(str(path))
    stack = spec.decoder
    assert stack is not None and stack.mla is not None
    assert stack.layers == 2 and stack.kinds() == [LayerKind.MLA, LayerKind.MLA]
    assert (stack.mla.kv_lora_rank, stack.mla.qk_rope_head_dim, stack.mla.qk_nope_head_dim,
            stack.mla.v_head_dim, stack.mla.q_lora_rank) == (kvl, rope, nope, v, ql)
    assert any("multi-token-prediction" in n for n in spec.notes)
    comparison = compare_checkpoint(spec)
    assert comparison.parameters_agree, comparison.disagreements
    (extra,) = comparison.extra_layers
    assert extra.layer == layers and extra.kind == "multi-token prediction"
    facts = spec.checkpoint
    assert facts is not None
    assert "mtp" in {t.key for t in facts.by_component}
    assert checkpoint_weight_bytes(spec) == facts.total_bytes - (extra.bytes or 0)


def test_gemma3_default_sliding_pattern_is_noted(tmp_path: Path) -> None:
    h, heads, d, vocab = 64, 2, 32, 32
    tensors: GGUFTensors = {"token_embd.weight": (Q.F32, [vocab, h])}
    for i in range(6):
        b = f"blk.{i}."
        for norm in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"):
            tensors[f"{b}{norm}.weight"] = (Q.F32, [h])
        tensors.update({
            b + "attn_q.weight": (Q.F32, [heads * d, h]),
            b + "attn_k.weight": (Q.F32, [d, h]),
            b + "attn_v.weight": (Q.F32, [d, h]),
            b + "attn_output.weight": (Q.F32, [h, heads * d]),
            b + "attn_q_norm.weight": (Q.F32, [d]),
            b + "attn_k_norm.weight": (Q.F32, [d]),
            b + "ffn_gate.weight": (Q.F32, [128, h]),
            b + "ffn_up.weight": (Q.F32, [128, h]),
            b + "ffn_down.weight": (Q.F32, [h, 128]),
        })
    tensors["output_norm.weight"] = (Q.F32, [h])
    meta = {"{arch}.block_count": 6, "{arch}.embedding_length": h,
            "{arch}.feed_forward_length": 128, "{arch}.attention.head_count": heads,
            "{arch}.attention.head_count_kv": 1, "{arch}.attention.key_length": d,
            "{arch}.attention.value_length": d, "{arch}.attention.sliding_window": 512}
    path = tmp_path / "g3.gguf"
    write_gguf(path, "gemma3", meta, tensors)
    spec = load_model(str(path))
    stack = spec.decoder
    assert stack is not None
    assert stack.kinds() == [LayerKind.SLIDING] * 5 + [LayerKind.FULL]
    assert stack.sliding_window == 512 and stack.tied_embeddings
    assert stack.norms_per_layer == 4 and stack.qk_norm == "head"
    assert any("five sliding" in n for n in spec.notes)
    assert spec.dtype == "fp32" and spec.quantization is None
    assert compare_checkpoint(spec).parameters_agree


def test_split_set(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    tensors = llama_gguf(path)
    path.unlink()
    meta = {"{arch}.block_count": 2, "{arch}.embedding_length": 64,
            "{arch}.feed_forward_length": 160, "{arch}.attention.head_count": 4,
            "{arch}.attention.head_count_kv": 2}
    write_gguf(path, "llama", meta, tensors, split_max_tensors=8)
    files = sorted(p.name for p in tmp_path.glob("*.gguf"))
    assert files == [f"tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    second = tmp_path / files[1]
    checkpoint = read_gguf(second)  # any split names the whole set
    assert checkpoint.files == files and len(checkpoint.tensors) == len(tensors)
    spec = load_model(str(tmp_path))  # a folder of one split model
    assert spec.name == "tiny" and spec.decoder is not None and spec.decoder.layers == 2
    assert spec.checkpoint is not None and spec.checkpoint.total_bytes == 117_760
    (tmp_path / files[2]).unlink()
    with pytest.raises(InputError, match="1 are missing"):
        read_gguf(tmp_path / files[0])


def test_unknown_architecture_is_coarse(tmp_path: Path) -> None:
    path = tmp_path / "odd.gguf"
    tensors = {"token_embd.weight": (Q.F32, [32, 64]), "blk.0.ffn_up.weight": (Q.F32, [64, 64]),
               "blk.1.ffn_up.weight": (Q.F32, [64, 64])}
    write_gguf(path, "rwkv7", {"{arch}.embedding_length": 64}, tensors)
    spec = load_model(str(path))
    assert spec.coarse is not None and spec.coarse.total == 32 * 64 + 2 * 64 * 64
    assert spec.decoder is not None and spec.decoder.layers == 2
    assert "not mapped" in spec.notes[0]
    assert count_parameters(spec).total == 10_240


def test_bad_magic_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(b"GGML" + struct.pack("<I", 3) + b"\0" * 64)
    with pytest.raises(InputError, match="not a GGUF file"):
        check_magic(path)
    path.write_bytes(b"GGUF" + struct.pack("<I", 1) + b"\0" * 64)
    with pytest.raises(InputError, match="version 1"):
        load_model(str(path))
    path.write_bytes(b"GGUF")
    with pytest.raises(InputError, match="too short"):
        load_model(str(path))


def test_truncated_tensor_data_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    llama_gguf(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])
    with pytest.raises(InputError) as caught:
        load_model(str(path))
    assert str(path) in str(caught.value)


def test_big_endian_file(tmp_path: Path) -> None:
    path = tmp_path / "be.gguf"
    writer = gguf.GGUFWriter(str(path), "llama", endianess=gguf.GGUFEndian.BIG)
    writer.add_block_count(1)
    writer.add_tensor("blk.0.ffn_up.weight", np.zeros((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    (tensor,) = read_gguf(path).tensors
    assert (tensor.shape, tensor.bytes) == ((4, 32), 512)


def test_long_metadata_arrays_are_stepped_over(tmp_path: Path) -> None:
    # Longer than the arrays kept whole: strings of varied lengths, then numbers, then keys
    # and tensors that must still be found at the right offsets.
    path = tmp_path / "vocab.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"tok{'x' * (i % 7)}{i}" for i in range(5000)])
    writer.add_token_scores([float(i) for i in range(5000)])
    writer.add_block_count(3)
    writer.add_name("after-the-arrays")
    writer.add_tensor("token_embd.weight", np.zeros((5000, 32), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    checkpoint = read_gguf(path)
    meta = checkpoint.metadata
    assert meta["tokenizer.ggml.tokens"].length == 5000
    assert meta["tokenizer.ggml.scores"].length == 5000
    assert meta["llama.block_count"] == 3 and meta["general.name"] == "after-the-arrays"
    (tensor,) = checkpoint.tensors
    assert (tensor.shape, tensor.bytes) == ((5000, 32), 5000 * 32 * 2)
    stock, fast = gguf.GGUFReader(path), _reader_class(gguf)(path)
    assert fast is not stock and type(fast) is not gguf.GGUFReader
    assert fast.data_offset == stock.data_offset
    assert list(fast.fields) == list(stock.fields)
    assert fast.tensors[0].data_offset == stock.tensors[0].data_offset
