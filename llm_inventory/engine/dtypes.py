"""Dtype resolution in one place: what weights, KV cache and activations are kept in.

- Weights: the checkpoint's own dtype and quantization, unless `dtype` overrides them: a
  16/32-bit float re-types every tensor; 8 bits and fewer quantize matmul weights at load
  time as an engine would (one scale per tensor; embeddings and lm_head unquantized); a GGUF
  type (`q8_0`, `Q4_K_M` …) stores the matmul weights in ggml's blocks.
- KV cache: the request's, else the model's dtype; engines offer no KV dtype below 8 bits.
- Activations: the model's dtype when it is a 16/32-bit float, else bf16.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec, Quantization
from llm_inventory.units import DTYPE_BITS, dtype_bits, normalize_dtype


def runtime_quantization(dtype: str) -> Quantization | None:
    """The quantization an engine applies when asked to serve weights at `dtype` (None for
    16/32-bit floats): matmul weights at that width with one scale per tensor."""
    bits = dtype_bits(dtype)
    if bits >= 16:
        return None
    return Quantization(method=f"runtime-{normalize_dtype(dtype)}", bits=bits)


def gguf_quantization(name: str) -> Quantization | None:
    """A GGUF weight type (`q8_0`, `q4_k`, `iq4_xs`, or a file type such as `Q4_K_M`, sized
    as its dominant tensor type) as a quantization of the matmul weights: each ggml block of
    `values` takes `bytes` (`type_traits`, ggml/src/ggml.c), written as a 16-bit scale per
    block and the rest per value. None for a name that is not one."""
    from llm_inventory.engine.serving.ggml_types import FILE_TYPES, GGML_TYPES

    key = name.strip().lower().replace("-", "_")
    tensor_type = FILE_TYPES.get(key, key)
    if tensor_type not in GGML_TYPES or GGML_TYPES[tensor_type][0] == 1:
        return None
    values, size = GGML_TYPES[tensor_type]
    return Quantization(method=f"gguf-{key}", bits=(size * 8 - 16) / values,
                        group_size=values, scale_bits=16)


def weight_dtypes(spec: ModelSpec, dtype: str | None) -> tuple[str, Quantization | None]:
    """(dtype of unquantized tensors, quantization) the weights are served at."""
    base = normalize_dtype(spec.dtype)
    if dtype is None:
        return base, spec.quantization
    gguf = gguf_quantization(dtype)
    if gguf is not None:
        return base, gguf
    wanted = normalize_dtype(dtype, "dtype")
    if DTYPE_BITS[wanted] >= 16:
        return wanted, None
    return base, runtime_quantization(wanted)


def kv_dtype(spec: ModelSpec, requested: str | None, serving: bool = True) -> str:
    """The KV cache dtype: `requested`, else the model's; when `serving`, InputError below
    8 bits (no engine placement models offers one)."""
    found = normalize_dtype(requested or spec.dtype, "kv_dtype")
    if serving and DTYPE_BITS[found] < 8:
        raise InputError("kv_dtype", f"{found} is not a KV cache dtype engines offer; use "
                         "bf16, fp16, fp8 or fp32")
    return found


def activation_dtype(spec: ModelSpec) -> str:
    """Activations run in the model's dtype when it is a 16/32-bit float, else bf16."""
    base = normalize_dtype(spec.dtype)
    return base if DTYPE_BITS[base] >= 16 else "bf16"
