"""ggml's tensor types: how many values one block holds and how many bytes it takes.

Source: the type traits table of ggml (`type_traits`, ggml/src/ggml.c: `blck_size` and
`type_size` per `enum ggml_type`), the figures the `gguf` package also carries as
`GGML_QUANT_SIZES` (the tests hold this table to it). A row of `n` values of type `t` takes
`n ÷ blck_size × type_size` bytes (`ggml_row_size`); `n` must be a multiple of the block.

`KV_CACHE_TYPES` are the types llama.cpp's `--cache-type-k/-v` accept (`kv_cache_types`,
common/arg.cpp); file types (`Q4_K_M` …) name the dominant tensor type of a GGUF
(`llama_ftype`, include/llama.h) and map to it in `FILE_TYPES`.
"""

from __future__ import annotations

from llm_inventory.errors import InputError

# name: (values per block, bytes per block)
GGML_TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "f64": (1, 8),
    "i8": (1, 1),
    "i16": (1, 2),
    "i32": (1, 4),
    "i64": (1, 8),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "q8_0": (32, 34),
    "q8_1": (32, 40),
    "q2_k": (256, 84),
    "q3_k": (256, 110),
    "q4_k": (256, 144),
    "q5_k": (256, 176),
    "q6_k": (256, 210),
    "q8_k": (256, 292),
    "iq2_xxs": (256, 66),
    "iq2_xs": (256, 74),
    "iq2_s": (256, 82),
    "iq3_xxs": (256, 98),
    "iq3_s": (256, 110),
    "iq1_s": (256, 50),
    "iq1_m": (256, 56),
    "iq4_nl": (32, 18),
    "iq4_xs": (256, 136),
    "tq1_0": (256, 54),
    "tq2_0": (256, 66),
    "mxfp4": (32, 17),
}

KV_CACHE_TYPES: tuple[str, ...] = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl",
                                   "q5_0", "q5_1")

# GGUF file types (`llama_ftype`) and the tensor type most of their matmul weights take
# (`llama_tensor_get_type`, src/llama-quant.cpp); the K-quant mixes keep a few tensors wider.
FILE_TYPES: dict[str, str] = {
    "q4_k_s": "q4_k", "q4_k_m": "q4_k", "q5_k_s": "q5_k", "q5_k_m": "q5_k",
    "q3_k_s": "q3_k", "q3_k_m": "q3_k", "q3_k_l": "q3_k", "q2_k_s": "q2_k",
    "iq3_xs": "iq3_s", "iq3_m": "iq3_s", "iq2_m": "iq2_s", "mxfp4_moe": "mxfp4",
}


def ggml_type(name: str, field: str = "type") -> str:
    """The canonical ggml type name (`Q8_0` → `q8_0`); InputError for an unknown one."""
    key = name.strip().lower()
    if key not in GGML_TYPES:
        raise InputError(field, f"unknown ggml type {name!r}; known: {', '.join(GGML_TYPES)}")
    return key


def kv_cache_type(name: str, field: str) -> str:
    """A type llama.cpp accepts for its KV cache; InputError naming the allowed ones."""
    key = name.strip().lower()
    if key not in KV_CACHE_TYPES:
        raise InputError(field, f"unsupported cache type {name!r}; allowed: "
                         + ", ".join(KV_CACHE_TYPES))
    return key


def row_bytes(type_name: str, values: int) -> int:
    """Bytes of one row of `values` values (`ggml_row_size`); the row must fill whole
    blocks (ggml asserts it)."""
    block, size = GGML_TYPES[type_name]
    if values % block:
        raise InputError("cache_type", f"a row of {values} values does not fill whole "
                         f"{type_name} blocks of {block}")
    return values // block * size


def bits_per_value(type_name: str) -> float:
    """Bits one value takes, block scales included (q8_0: 34 × 8 / 32 = 8.5)."""
    block, size = GGML_TYPES[type_name]
    return size * 8 / block


def quantized(type_name: str) -> bool:
    return GGML_TYPES[type_name][0] > 1
