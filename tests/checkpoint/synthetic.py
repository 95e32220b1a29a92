"""Synthetic checkpoints built with the standard library: real layouts, no weights.

`write_safetensors` writes a valid header and extends the file to its full length with
`truncate`, so the data region is a hole that costs no disk space however large it is.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "I16": 16, "F16": 16,
        "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "F64": 64, "F4": 4}

Tensors = dict[str, tuple[str, list[int]]]


def tensor_bytes(dtype: str, shape: list[int]) -> int:
    return math.prod(shape) * BITS[dtype] // 8


def header_bytes(tensors: Tensors, metadata: dict[str, str] | None = None) -> tuple[bytes, int]:
    """The JSON header (padded to 8 bytes as the reference writer does) and data size."""
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = tensor_bytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return raw + b" " * (-len(raw) % 8), offset


def write_safetensors(path: Path, tensors: Tensors,
                      metadata: dict[str, str] | None = None) -> int:
    """Write a well-formed file (data left as a hole); returns its tensor bytes."""
    raw, data = header_bytes(tensors, metadata)
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(raw)))
        handle.write(raw)
        handle.truncate(8 + len(raw) + data)
    return data


def write_raw(path: Path, header: bytes, total: int | None = None, length: int | None = None,
              ) -> None:
    """A file with an arbitrary header (for malformed inputs), padded to `total` bytes."""
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(header) if length is None else length))
        handle.write(header)
        if total is not None:
            handle.truncate(total)


def write_config(folder: Path, config: dict[str, Any]) -> None:
    (folder / "config.json").write_text(json.dumps(config))


def write_index(folder: Path, weight_map: dict[str, str], total: int | None) -> None:
    data: dict[str, Any] = {"weight_map": weight_map}
    if total is not None:
        data["metadata"] = {"total_size": total}
    (folder / "model.safetensors.index.json").write_text(json.dumps(data))


def shard(folder: Path, tensors: Tensors, shards: int) -> int:
    """Split `tensors` over `shards` files with an index, as transformers saves them."""
    names = list(tensors)
    per = -(-len(names) // shards)
    weight_map: dict[str, str] = {}
    total = 0
    for i in range(shards):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[i * per:(i + 1) * per]}
        total += write_safetensors(folder / file, part)
        weight_map.update(dict.fromkeys(part, file))
    write_index(folder, weight_map, total)
    return total


# --- a small Llama ------------------------------------------------------------------------

LLAMA_CONFIG: dict[str, Any] = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 128, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "max_position_embeddings": 2048,
}


def llama_tensors(config: dict[str, Any] = LLAMA_CONFIG, dtype: str = "BF16") -> Tensors:
    """Every tensor of a Llama checkpoint, named as transformers saves them."""
    h, i = config["hidden_size"], config["intermediate_size"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    d = h // heads
    t: Tensors = {"model.embed_tokens.weight": (dtype, [config["vocab_size"], h])}
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}."
        t[p + "self_attn.q_proj.weight"] = (dtype, [heads * d, h])
        t[p + "self_attn.k_proj.weight"] = (dtype, [kv * d, h])
        t[p + "self_attn.v_proj.weight"] = (dtype, [kv * d, h])
        t[p + "self_attn.o_proj.weight"] = (dtype, [h, heads * d])
        t[p + "mlp.gate_proj.weight"] = (dtype, [i, h])
        t[p + "mlp.up_proj.weight"] = (dtype, [i, h])
        t[p + "mlp.down_proj.weight"] = (dtype, [h, i])
        t[p + "input_layernorm.weight"] = (dtype, [h])
        t[p + "post_attention_layernorm.weight"] = (dtype, [h])
    t["model.norm.weight"] = (dtype, [h])
    t["lm_head.weight"] = (dtype, [config["vocab_size"], h])
    return t


# --- a small DeepSeek-V3 ------------------------------------------------------------------

DEEPSEEK_CONFIG: dict[str, Any] = {
    "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 16,
    "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
    "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": 24, "kv_lora_rank": 16,
    "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "vocab_size": 256,
    "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "max_position_embeddings": 4096, "n_group": 1, "topk_group": 1,
}
# transformers 5.23.0, meta device (quantization_config dropped): DeepseekV3ForCausalLM
# built from DEEPSEEK_CONFIG has 117,560 parameters.
DEEPSEEK_PARAMETERS = 117_560


def _linear(t: Tensors, name: str, out: int, inp: int, fp8: bool) -> None:
    """A matmul weight; block-FP8 adds one F32 scale per 128 × 128 block (DeepSeek-V3)."""
    if fp8:
        t[name + ".weight"] = ("F8_E4M3", [out, inp])
        t[name + ".weight_scale_inv"] = ("F32", [-(-out // 128), -(-inp // 128)])
    else:
        t[name + ".weight"] = ("BF16", [out, inp])


def deepseek_tensors(config: dict[str, Any] = DEEPSEEK_CONFIG, *, fp8: bool = False,
                     mtp: bool = True) -> Tensors:
    """DeepSeek-V3's checkpoint layout: per-expert weights, e_score_correction_bias, and
    the multi-token-prediction layer stored as `model.layers.<num_hidden_layers>.*`."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    ql, kvl = config["q_lora_rank"], config["kv_lora_rank"]
    rope, nope, v = config["qk_rope_head_dim"], config["qk_nope_head_dim"], config["v_head_dim"]
    e, mi = config["n_routed_experts"], config["moe_intermediate_size"]
    vocab = config["vocab_size"]
    t: Tensors = {"model.embed_tokens.weight": ("BF16", [vocab, h])}
    count = config["num_hidden_layers"] + (config["num_nextn_predict_layers"] if mtp else 0)
    for n in range(count):
        p = f"model.layers.{n}."
        if n >= config["num_hidden_layers"]:
            t[p + "embed_tokens.weight"] = ("BF16", [vocab, h])
            t[p + "enorm.weight"] = ("BF16", [h])
            t[p + "hnorm.weight"] = ("BF16", [h])
            t[p + "eh_proj.weight"] = ("BF16", [h, 2 * h])
            t[p + "shared_head.norm.weight"] = ("BF16", [h])
            t[p + "shared_head.head.weight"] = ("BF16", [vocab, h])
        t[p + "input_layernorm.weight"] = ("BF16", [h])
        t[p + "post_attention_layernorm.weight"] = ("BF16", [h])
        _linear(t, p + "self_attn.q_a_proj", ql, h, fp8)
        t[p + "self_attn.q_a_layernorm.weight"] = ("BF16", [ql])
        _linear(t, p + "self_attn.q_b_proj", heads * (nope + rope), ql, fp8)
        _linear(t, p + "self_attn.kv_a_proj_with_mqa", kvl + rope, h, fp8)
        t[p + "self_attn.kv_a_layernorm.weight"] = ("BF16", [kvl])
        _linear(t, p + "self_attn.kv_b_proj", heads * (nope + v), kvl, fp8)
        _linear(t, p + "self_attn.o_proj", h, heads * v, fp8)
        if n < config["first_k_dense_replace"]:
            i = config["intermediate_size"]
            _linear(t, p + "mlp.gate_proj", i, h, fp8)
            _linear(t, p + "mlp.up_proj", i, h, fp8)
            _linear(t, p + "mlp.down_proj", h, i, fp8)
            continue
        t[p + "mlp.gate.weight"] = ("BF16", [e, h])
        t[p + "mlp.gate.e_score_correction_bias"] = ("F32", [e])
        for x in range(e):
            _linear(t, p + f"mlp.experts.{x}.gate_proj", mi, h, fp8)
            _linear(t, p + f"mlp.experts.{x}.up_proj", mi, h, fp8)
            _linear(t, p + f"mlp.experts.{x}.down_proj", h, mi, fp8)
        shared = config["n_shared_experts"] * mi
        _linear(t, p + "mlp.shared_experts.gate_proj", shared, h, fp8)
        _linear(t, p + "mlp.shared_experts.up_proj", shared, h, fp8)
        _linear(t, p + "mlp.shared_experts.down_proj", h, shared, fp8)
    t["model.norm.weight"] = ("BF16", [h])
    t["lm_head.weight"] = ("BF16", [vocab, h])
    return t
