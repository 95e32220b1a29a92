"""Dtype resolution in one place: what weights, KV cache and activations are kept in.

- Weights: the checkpoint's own dtype and quantization, unless `dtype` overrides them: a
  16/32-bit float re-types every tensor; 8 bits and fewer quantize matmul weights at load
  time as an engine would (one scale per tensor; embeddings and lm_head unquantized); a GGUF
  type (`q8_0`, `Q4_K_M` …) types every tensor as llama.cpp's quantizer does.
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


def gguf_quantization(name: str, spec: ModelSpec) -> Quantization | None:
    """A GGUF file type (`Q4_K_M`, `q8_0`, `IQ4_XS` …) or ggml type (`q4_k`, read as
    llama-quantize's `--pure`) for `spec`: each tensor typed as llama.cpp's quantizer types
    it (`engine.gguf_tensors`), labelled by the bits of its default type. None for a name
    that is neither."""
    from llm_inventory.engine.gguf_tensors import gguf_quantization as typed

    return typed(name, spec)


def weight_dtypes(spec: ModelSpec, dtype: str | None) -> tuple[str, Quantization | None]:
    """(dtype of unquantized tensors, quantization) the weights are served at."""
    base = normalize_dtype(spec.dtype)
    if dtype is None:
        return base, spec.quantization
    gguf = gguf_quantization(dtype, spec)
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
