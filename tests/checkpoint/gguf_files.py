"""GGUF files for tests, written with llama.cpp's own `gguf` writer (zero-filled tensors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType
GGUFTensors = dict[str, tuple[Any, list[int]]]


def write_gguf(path: Path, arch: str, meta: dict[str, Any], tensors: GGUFTensors,
               split_max_tensors: int = 0) -> None:
    """A GGUF file of zero-filled tensors (logical shapes, outermost first)."""
    writer = gguf.GGUFWriter(str(path), arch, split_max_tensors=split_max_tensors)
    for key, value in meta.items():
        key = key.replace("{arch}", arch)
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        else:
            writer.add_array(key, value)
    for name, (kind, shape) in tensors.items():
        if kind == Q.F32:
            writer.add_tensor(name, np.zeros(shape, dtype=np.float32))
        elif kind == Q.F16:
            writer.add_tensor(name, np.zeros(shape, dtype=np.float16))
        else:
            block, size = gguf.GGML_QUANT_SIZES[kind]
            raw = [*shape[:-1], shape[-1] // block * size]
            writer.add_tensor(name, np.zeros(raw, dtype=np.uint8), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def llama_gguf(path: Path, layers: int = 2) -> GGUFTensors:
    """The tiny Llama of tests.checkpoint.synthetic as llama.cpp stores it: Q8_0 matmuls."""
    h, ff, heads, kv, vocab, d = 64, 160, 4, 2, 128, 16
    tensors: GGUFTensors = {"token_embd.weight": (Q.F16, [vocab, h])}
    for i in range(layers):
        b = f"blk.{i}."
        tensors[b + "attn_norm.weight"] = (Q.F32, [h])
        tensors[b + "attn_q.weight"] = (Q.Q8_0, [heads * d, h])
        tensors[b + "attn_k.weight"] = (Q.Q8_0, [kv * d, h])
        tensors[b + "attn_v.weight"] = (Q.Q8_0, [kv * d, h])
        tensors[b + "attn_output.weight"] = (Q.Q8_0, [h, heads * d])
        tensors[b + "ffn_norm.weight"] = (Q.F32, [h])
        tensors[b + "ffn_gate.weight"] = (Q.Q8_0, [ff, h])
        tensors[b + "ffn_up.weight"] = (Q.Q8_0, [ff, h])
        tensors[b + "ffn_down.weight"] = (Q.Q8_0, [h, ff])
    tensors["output_norm.weight"] = (Q.F32, [h])
    tensors["output.weight"] = (Q.Q8_0, [vocab, h])
    meta = {
        "general.name": "tiny-llama", "general.file_type": int(gguf.LlamaFileType.MOSTLY_Q8_0),
        "{arch}.block_count": layers, "{arch}.embedding_length": h,
        "{arch}.feed_forward_length": ff, "{arch}.attention.head_count": heads,
        "{arch}.attention.head_count_kv": kv, "{arch}.context_length": 2048,
        "{arch}.rope.dimension_count": d, "tokenizer.ggml.tokens": [f"t{i}" for i in range(vocab)],
    }
    write_gguf(path, "llama", meta, tensors)
    return tensors
