"""`quantization_config` → Quantization: what a checkpoint really stores per weight.

Formats and what they keep beside each quantized weight (facts from each format's loader):
- fp8 (`quant_method: fp8`): 8-bit weights; `weight_block_size` [128, 128] adds one fp32
  scale per block (DeepSeek-V3), otherwise one per tensor. `expert_dtype: fp4` stores the
  routed experts apart: two e2m1 values a byte, one scale per 32 along the input
  (transformers integrations/finegrained_fp8.py FP8Experts, DeepSeek-V4).
- compressed-tensors: `config_groups[*].weights` gives num_bits, strategy (tensor, channel,
  group, block) and group size; scales are stored in the model dtype; asymmetric schemes add
  zero points; `ignore` lists modules left alone (typically `lm_head`).
- gptq: `bits`-wide packed weights, fp16 scales and packed zero points per group, and the
  activation-order index g_idx (one int32 per input feature).
- awq: packed weights, fp16 scales and packed zero points per group.
- mxfp4 (gpt-oss): 4-bit values in blocks of 32 with one 8-bit exponent scale each.
- modelopt NVFP4: 4-bit values, one FP8 scale per 16; MIXED_PRECISION: a scheme per module
  (modelopt_mixed.py).
- bitsandbytes: 4-bit NF4/FP4 with one absmax per 64 (fp32, or 8-bit with double
  quantization), or 8-bit with one fp32 scale per row.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.model import Quantization
from llm_inventory.units import dtype_bits


def _ignore(config: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for key in ("ignore", "modules_to_not_convert", "ignored_layers", "llm_int8_skip_modules",
                "exclude_modules"):
        value = config.get(key)
        if isinstance(value, list):
            found += [v for v in value if isinstance(v, str)]
    return found


def _positive(value: Any, field: str, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{label}: quantization_config.{field}",
                         f"must be a positive integer, got {value!r}")
    return value


def _compressed_tensors(q: dict[str, Any], label: str, model_dtype: str) -> Quantization:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise InputError(f"{label}: quantization_config.config_groups",
                         "compressed-tensors needs at least one config group")
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(weights, dict):
        raise InputError(f"{label}: quantization_config.config_groups",
                         "the first group has no `weights` scheme")
    bits = _positive(weights.get("num_bits", 8), "num_bits", label)
    strategy = weights.get("strategy", "tensor")
    group = weights.get("group_size")
    block = weights.get("block_structure")
    # Scales in the model dtype unless the scheme names theirs (MXFP4's are 8-bit
    # exponents, "torch.uint8"; NVFP4's FP8, "torch.float8_e4m3fn").
    named = str(weights.get("scale_dtype") or "").removeprefix("torch.")
    scale_bits = 8 if named in ("uint8", "float8_e4m3fn", "float8_e8m0fnu") else dtype_bits(
        model_dtype)
    return Quantization(
        method=f"compressed-tensors ({weights.get('type', 'int')}{bits}, {strategy})",
        bits=bits,
        group_size=_positive(group, "group_size", label) if strategy == "group" else None,
        block=tuple(block) if strategy == "block" and isinstance(block, list) else None,
        per_channel=strategy == "channel",
        scale_bits=scale_bits,
        zero_point=weights.get("symmetric") is False,
        zero_point_bits=bits if bits <= 8 else 8,
        ignore=_ignore(q),
    )


def _fp8_experts(q: dict[str, Any], label: str) -> Quantization | None:
    """The routed experts' scheme of an fp8 checkpoint: `expert_dtype` fp8 (or absent) is
    the checkpoint's own; fp4 packs two e2m1 values a byte with one scale per 32 inputs
    (FP8Experts' `sf_gran_k` 32, the block size ignored), a one-byte ue8m0 scale with
    `scale_fmt: ue8m0` (DeepSeek-V4), else fp32."""
    dtype = q.get("expert_dtype")
    if dtype is None or dtype == "fp8":
        return None
    if dtype == "fp4":
        return Quantization(method="fp4 (e2m1)", bits=4, group_size=32,
                            scale_bits=8 if q.get("scale_fmt") == "ue8m0" else 32)
    raise InputError(f"{label}: quantization_config.expert_dtype",
                     f"unsupported {dtype!r}; supported: fp8, fp4")


def from_quantization_config(q: Any, label: str, model_dtype: str) -> Quantization | None:
    """Read a config's `quantization_config`; None when absent."""
    if q is None:
        return None
    if not isinstance(q, dict):
        raise InputError(f"{label}: quantization_config", "must be a mapping")
    method = str(q.get("quant_method", "")).lower()
    ignore = _ignore(q)
    if method == "fp8":
        block = q.get("weight_block_size")
        return Quantization(
            method="fp8 (block-scaled)" if block else "fp8",
            bits=8,
            block=(block[0], block[1]) if isinstance(block, list) and len(block) == 2 else None,
            scale_bits=32,
            ignore=ignore,
            experts=_fp8_experts(q, label),
        )
    if method == "fbgemm_fp8":
        return Quantization(method="fp8 (per-channel)", bits=8, per_channel=True, scale_bits=32,
                            ignore=ignore)
    if method == "compressed-tensors":
        return _compressed_tensors(q, label, model_dtype)
    if method in ("gptq", "awq"):
        bits = _positive(q.get("bits", 4), "bits", label)
        group = q.get("group_size", 128)
        per_channel = group in (-1, None)
        return Quantization(
            method=method,
            bits=bits,
            group_size=None if per_channel else _positive(group, "group_size", label),
            per_channel=per_channel,
            scale_bits=16,
            zero_point=method == "gptq" or q.get("zero_point", True) is not False,
            zero_point_bits=bits,
            act_order_index=method == "gptq",
            ignore=ignore or ["lm_head"],
        )
    if method == "mxfp4":
        return Quantization(method="mxfp4", bits=4, group_size=32, scale_bits=8, ignore=ignore)
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        if algo == "NVFP4":
            return Quantization(method="nvfp4", bits=4, group_size=16, scale_bits=8,
                                ignore=ignore)
        if algo == "FP8":
            return Quantization(method="fp8 (modelopt)", bits=8, scale_bits=32, ignore=ignore)
        if algo == "MIXED_PRECISION":
            from llm_inventory.spec.hf.modelopt_mixed import mixed_precision

            return mixed_precision(q, label, ignore)
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            double = bool(q.get("bnb_4bit_use_double_quant"))
            return Quantization(
                method=f"bitsandbytes {q.get('bnb_4bit_quant_type', 'fp4')}",
                bits=4, group_size=64, scale_bits=8 if double else 32,
                ignore=ignore or ["lm_head"],
            )
        if q.get("load_in_8bit"):
            return Quantization(method="bitsandbytes int8", bits=8, per_channel=True,
                                scale_bits=32, ignore=ignore or ["lm_head"])
    raise InputError(
        f"{label}: quantization_config.quant_method",
        f"unsupported {method or 'missing'!r}; supported: fp8, fbgemm_fp8, compressed-tensors, "
        "gptq, awq, mxfp4, modelopt (nvfp4, fp8, mixed_precision), bitsandbytes",
    )
