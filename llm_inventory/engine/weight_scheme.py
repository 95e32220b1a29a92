"""What a model's weights are stored as: the dtype and quantization scheme, in words and data.

Rules: with no quantization every tensor is at the weight dtype. With one, matmul weights
are at the scheme's bits (and scales); embeddings, norms, routers, biases and whatever the
ignore list names stay at the unquantized dtype; an experts-only scheme (gpt-oss MXFP4)
leaves attention and dense MLPs unquantized too. A `dtype` override re-types every tensor
(16/32-bit) or quantizes matmul weights at load time as an engine would (8 bits and fewer).
"""

from __future__ import annotations

from pydantic import BaseModel

from llm_inventory.engine.dtypes import weight_dtypes
from llm_inventory.engine.gguf_tensors import GgufQuantization, describe
from llm_inventory.spec.model import ModelSpec, Quantization
from llm_inventory.units import DTYPE_BITS


class WeightScheme(BaseModel):
    """How the weights are stored, for labels and for scripts."""

    label: str  # "fp8, 128×128 block scales; embeddings, norms and lm_head bf16"
    short: str  # "fp8", "int4", "mxfp4 experts" — for narrow columns
    unquantized_dtype: str  # the dtype of every tensor the scheme leaves alone
    method: str | None  # the quantization method, None when unquantized
    bits: float | None
    group_size: int | None
    block: tuple[int, int] | None
    per_channel: bool
    scale_bits: int | None
    zero_point: bool
    experts_only: bool
    ignored: list[str]  # module patterns left unquantized by the checkpoint
    runtime: bool  # quantized at load time (a --dtype override), not stored so


def _scales(q: Quantization) -> str:
    if q.block is not None:
        return f"{q.block[0]}×{q.block[1]} block scales"
    if q.group_size is not None:
        return f"groups of {q.group_size}"
    if q.per_channel:
        return "per-channel scales"
    return "one scale per tensor"


def describe_weights(spec: ModelSpec, dtype: str | None = None) -> WeightScheme:
    """The stored (or served, with `dtype`) weight scheme of `spec`, labelled."""
    base, q = weight_dtypes(spec, dtype)
    if q is None:
        return WeightScheme(label=base, short=base, unquantized_dtype=base, method=None,
                            bits=None, group_size=None, block=None, per_channel=False,
                            scale_bits=None, zero_point=False, experts_only=False, ignored=[],
                            runtime=False)
    if isinstance(q, GgufQuantization):
        label, short = describe(q)
        return WeightScheme(label=label, short=short, unquantized_dtype=base, method=q.method,
                            bits=q.bits, group_size=q.group_size, block=None,
                            per_channel=False, scale_bits=q.scale_bits, zero_point=False,
                            experts_only=False, ignored=[], runtime=False)
    runtime = q.method.startswith("runtime-")
    method = q.method.removeprefix("runtime-")
    bits = f"{q.bits:g}-bit"
    # "fp8 (block-scaled)" and "int4" already say their bits; "compressed-tensors" does not
    named = any(word.strip("(),").endswith(bits.split("-")[0]) for word in method.split())
    detail = [f"{method}" + ("" if named else f" {bits}"),
              _scales(q)]
    if q.zero_point:
        detail.append("zero points")
    if q.experts is not None:  # routed experts stored apart (DeepSeek-V4's fp4)
        detail.append(f"routed experts {q.experts.method}, {_scales(q.experts)}")
    if runtime:
        detail.append("quantized at load")
    kept = ("attention, dense MLPs, embeddings, norms and lm_head" if q.experts_only else
            "embeddings, norms and lm_head")
    if q.ignore and not q.experts_only:
        kept += " (and the modules the checkpoint lists as unquantized)"
    scope = "experts " if q.experts_only else ""
    label = f"{scope}{', '.join(detail)}; {kept} {base}"
    if q.per_module:  # modelopt MIXED_PRECISION: each module its own scheme
        counts: dict[str, int] = {}
        for scheme in q.per_module.values():
            part = f"{scheme.method} ({_scales(scheme)})"
            counts[part] = counts.get(part, 0) + 1
        parts = [f"{part} on {n} module{'s' if n > 1 else ''}"
                 for part, n in sorted(counts.items(), key=lambda kv: -kv[1])]
        label = f"per module: {'; '.join(parts)}; every other tensor {base}"
    # In a word for narrow columns: the dtype a container format names inside its
    # parentheses ("compressed-tensors (int4, group)": int4), else the method's first word
    inner = method.partition("(")[2].split(",")[0].rstrip(")").strip()
    word = inner if inner in DTYPE_BITS else method.split(" ")[0]
    short = (word if named else f"{word} {bits}") + (" experts" if q.experts_only else "")
    if q.experts is not None:
        short += "+" + q.experts.method.split(" ")[0]
    return WeightScheme(label=label, short=short, unquantized_dtype=base, method=method,
                        bits=q.bits, group_size=q.group_size, block=q.block,
                        per_channel=q.per_channel, scale_bits=q.scale_bits,
                        zero_point=q.zero_point, experts_only=q.experts_only,
                        ignored=list(q.ignore), runtime=runtime)
