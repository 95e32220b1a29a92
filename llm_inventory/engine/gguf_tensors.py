"""GGUF weights per tensor, typed as llama.cpp's quantizer types them.

A GGUF file type (`Q4_K_M`, `Q3_K_L`, `IQ4_XS` …) names a mix, not one type: llama.cpp's
`llama-quantize` picks each tensor's ggml type by its role, its layer and the model's shape.
The rules here are those of `src/llama-quant.cpp` (ggml-org/llama.cpp at commit 007dbbf3;
the K-quant mixes have stood since the b2xxx releases of early 2024, except that `attn_qkv`
had a branch of its own, Q5_K throughout for Q4_K_M, before it joined the attn_v rules):

- `llama_ftype_get_default_type`: the file type's default tensor type (`FILE_DEFAULTS`);
  a bare ggml type name that is no file type (`q4_k`) is read as `llama-quantize --pure`:
  every quantizable tensor at that type.
- `tensor_allows_quantization`: only 2-D and 3-D (expert) tensors whose names end in
  `weight` are quantized; norms, the MoE router (`ffn_gate_inp`), position and token-type
  embeddings and convolution kernels keep the converter's type. `convert_hf_to_gguf.py`
  (`ModelBase.prepare_tensors`) writes 1-D tensors, norms, routers and anything not named
  `.weight` as F32 and the other 2-D weights at the 16-bit source type.
- `llama_tensor_get_type_impl`: the output tensor (`output.weight`, or `token_embd` when the
  embeddings are tied) Q6_K, Q8_0 when its rows are not whole blocks of the default type (or
  for Falcon and MXFP4_MOE), Q5_K for the 1–2-bit IQ mixes; `attn_v` (and the attn_v-like
  `attn_qkv`, `attn_kv_b`) and `ffn_down` bumped on `use_more_bits` layers
  (`i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2`) for Q4_K_M/Q5_K_M, on the first layers for
  Q3_K_M/Q4_K_S and friends; attn_v Q5_K on a 70B-type model (`LLM_TYPE_70B`: 80 layers of
  Llama with grouped KV heads, Qwen2 or DeciLM) where it would be Q3_K/Q4_K; an 8-expert
  model's attn_v and attn_k Q8_0 and attn_output Q5_K; and the rest of the per-category
  table.
- `tensor_type_fallback`: a row (`ne[0]`, the input width) that is not a whole number of
  the chosen type's blocks falls back (IQ* 256 → IQ4_NL, Q2_K/Q3_K → Q4_0, Q4_K → Q5_0,
  Q5_K → Q5_1, Q6_K → Q8_0), and to F16 when even that does not divide.

The vision tower and projector are not in the language model's GGUF: llama.cpp keeps them in
a separate `mmproj` file, so they count for nothing here. Tensors are matched to llama.cpp's
categories by their Hugging Face module names; the architectures whose GGUF layout was checked
tensor by tensor against llama.cpp's (`EXACT_ARCHITECTURES`) are labelled exact, the others
engine rule (a fused `attn_qkv` or a split MLA `attn_k_b`/`attn_v_b` may type differently).
Multi-token-prediction layers, which some converters write into the file, are not counted.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from llm_inventory.engine.serving.ggml_types import GGML_TYPES
from llm_inventory.engine.tensors import TensorGroup, model_tensors
from llm_inventory.engine.trust import Trust, engine_rule, exact
from llm_inventory.spec.model import Component, Family, ModelSpec, Quantization
from llm_inventory.units import dtype_bits, normalize_dtype

Category = Literal["token_embd", "output", "attn_q", "attn_k", "attn_v", "attn_qkv",
                   "attn_kv_b", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "other"]

# `llama_ftype_get_default_type`: file type → the type its tensors default to.
FILE_DEFAULTS: dict[str, str] = {
    "q4_0": "q4_0", "q4_1": "q4_1", "q5_0": "q5_0", "q5_1": "q5_1", "q8_0": "q8_0",
    "mxfp4_moe": "mxfp4",
    "q2_k_s": "q2_k", "q2_k": "q2_k", "iq3_xs": "iq3_s",
    "q3_k_s": "q3_k", "q3_k_m": "q3_k", "q3_k_l": "q3_k",
    "q4_k_s": "q4_k", "q4_k_m": "q4_k", "q5_k_s": "q5_k", "q5_k_m": "q5_k", "q6_k": "q6_k",
    "tq1_0": "tq1_0", "tq2_0": "tq2_0",
    "iq2_xxs": "iq2_xxs", "iq2_xs": "iq2_xs", "iq2_s": "iq2_xs", "iq2_m": "iq2_s",
    "iq3_xxs": "iq3_xxs", "iq1_s": "iq1_s", "iq1_m": "iq1_m", "iq4_nl": "iq4_nl",
    "iq4_xs": "iq4_xs", "iq3_s": "iq3_s", "iq3_m": "iq3_s",
}

#: Architectures (Hugging Face `model_type`) whose GGUF tensors are the separate q/k/v,
#: gate/up/down and expert tensors this inventory lists, one to one.
EXACT_ARCHITECTURES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe",
                                 "qwen2_moe", "phi3"})

# `LLM_TYPE_70B` (llama-model.cpp, `load_hparams`): 80 layers of these architectures.
_SEVENTY_B = frozenset({"llama", "mistral", "qwen2", "deci", "nemotron-nas"})
# Architectures whose GGUF fuses q, k and v into one `attn_qkv` (convert_hf_to_gguf.py
# writes Phi-3's `qkv_proj` as it is): all three are typed as that one attn_v-like tensor.
FUSED_QKV = frozenset({"phi3"})
# Converted to llama.cpp's LLM_ARCH_LLAMA (Mistral and Mixtral included).
_LLAMA_ARCH = frozenset({"llama", "mistral", "mixtral"})

_IQ12 = frozenset({"iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"})
_FALLBACK = {"iq1_s": "iq4_nl", "iq1_m": "iq4_nl", "iq2_xxs": "iq4_nl", "iq2_xs": "iq4_nl",
             "iq2_s": "iq4_nl", "iq3_xxs": "iq4_nl", "iq3_s": "iq4_nl", "iq4_xs": "iq4_nl",
             "q2_k": "q4_0", "q3_k": "q4_0", "tq1_0": "q4_0", "tq2_0": "q4_0",
             "q4_k": "q5_0", "q5_k": "q5_1", "q6_k": "q8_0"}


class GgufContext(BaseModel):
    """The model facts `llama_tensor_get_type` reads besides a tensor's own name and shape."""

    model_config = ConfigDict(frozen=True)

    arch: str
    n_layer: int
    attn_v_layers: tuple[int, ...]  # the layers holding an attn_v-like tensor, in order
    n_gqa: int  # query heads per KV head (hparams.n_gqa())
    n_expert: int
    type_70b: bool
    tied: bool  # no output.weight: token_embd is typed as the output
    mmproj: bool = False  # a vision-language model: its tower and projector are the mmproj


class GgufQuantization(Quantization):
    """A GGUF file type: `Quantization` for labels (bits of its default type), typed per
    tensor by `tensor_type` when sizes are counted."""

    file_type: str
    pure: bool = False
    context: GgufContext


def file_type(name: str) -> tuple[str, str, bool] | None:
    """(key, default tensor type, pure) for a GGUF file type or ggml type name (`Q4_K_M`,
    `q8_0`, `q4_k`); None for a name that is neither a file type nor a quantized ggml type."""
    key = name.strip().lower().replace("-", "_")
    if key in FILE_DEFAULTS:
        return key, FILE_DEFAULTS[key], False
    if key in GGML_TYPES and GGML_TYPES[key][0] > 1:
        return key, key, True
    return None


_CONTEXTS: dict[int, tuple[ModelSpec, GgufContext]] = {}


def context_of(spec: ModelSpec) -> GgufContext:
    """The facts of `spec` the type choice reads (all zero for a model with no decoder).

    Kept for the last specs asked (a search asks for the same spec's once per candidate)."""
    found = _CONTEXTS.get(id(spec))
    if found is not None and found[0] is spec:
        return found[1]
    if len(_CONTEXTS) >= 64:
        _CONTEXTS.clear()
    context = _context(spec)
    _CONTEXTS[id(spec)] = (spec, context)
    return context


def _context(spec: ModelSpec) -> GgufContext:
    stack = spec.decoder
    arch = (spec.model_type or "").lower()
    if stack is None:
        return GgufContext(arch=arch, n_layer=0, attn_v_layers=(), n_gqa=0, n_expert=0,
                           type_70b=False, tied=False)
    heads, kv = stack.heads or 0, stack.kv_heads or stack.heads or 0
    v_layers: set[int] = set()
    for group in model_tensors(spec):
        if group.stack == "decoder" and _category(group, arch) in ("attn_v", "attn_qkv",
                                                                    "attn_kv_b"):
            v_layers.update(group.layers)
    seventy = stack.layers == 80 and arch in _SEVENTY_B and (
        arch not in _LLAMA_ARCH or heads != kv)
    return GgufContext(
        arch=arch, n_layer=stack.layers, attn_v_layers=tuple(sorted(v_layers)),
        n_gqa=heads // kv if kv else 0, n_expert=stack.moe.experts if stack.moe else 0,
        type_70b=seventy, tied=stack.tied_embeddings or not stack.lm_head,
        mmproj=spec.family is Family.VLM)


def gguf_quantization(name: str, spec: ModelSpec) -> GgufQuantization | None:
    """The GGUF file type `name` for `spec`, or None when `name` is none."""
    found = file_type(name)
    if found is None:
        return None
    key, default, pure = found
    values, size = GGML_TYPES[default]
    return GgufQuantization(method=f"gguf-{key}", bits=(size * 8 - 16) / values,
                            group_size=values, scale_bits=16, file_type=key, pure=pure,
                            context=context_of(spec))


def _category(group: TensorGroup, arch: str = "") -> Category:
    """llama.cpp's `tensor_get_category` for this tensor, read from its module name (q, k
    and v as one `attn_qkv` where `arch`'s GGUF fuses them)."""
    name = group.name
    if group.component is Component.LM_HEAD and name.endswith("weight"):
        return "output"
    if group.component is Component.EMBEDDINGS and name.endswith("embed_tokens.weight"):
        return "token_embd"
    leaf = name.rsplit(".", 2)[-2] if name.endswith(".weight") else name.rsplit(".", 1)[-1]
    if leaf in ("qkv_proj", "query_key_value", "c_attn", "Wqkv", "in_proj_qkv"):
        return "attn_qkv"
    if leaf == "kv_b_proj":
        return "attn_kv_b"
    if arch in FUSED_QKV and leaf in ("q_proj", "k_proj", "v_proj"):
        return "attn_qkv"
    if leaf in ("v_proj", "value"):
        return "attn_v"
    if leaf in ("k_proj", "key"):
        return "attn_k"
    if leaf in ("q_proj", "query"):
        return "attn_q"
    if leaf in ("o_proj", "out_proj", "dense") and "attn" in name:
        return "attn_output"
    if leaf in ("gate_proj", "gate_up_proj", "w1"):
        return "ffn_gate"
    if leaf in ("up_proj", "w3"):
        return "ffn_up"
    if leaf in ("down_proj", "w2"):
        return "ffn_down"
    return "other"


def _quantizable(group: TensorGroup) -> bool:
    """`tensor_allows_quantization`: 2-D/3-D weights other than norms, routers, position
    and token-type tables and convolution kernels."""
    if group.component in (Component.EMBEDDINGS, Component.LM_HEAD):
        return _category(group) in ("token_embd", "output") and len(group.shape) >= 2
    if not group.linear or len(group.shape) < 2:
        return False
    if group.component is Component.ROUTER:
        return False
    return "norm" not in group.name and "conv" not in group.name


def _stored_type(group: TensorGroup, dtype: str) -> str | None:
    """The converter's type for a tensor llama-quantize leaves alone (None: the 16-bit
    source dtype): F32 for 1-D tensors, norms, routers, convolutions and non-`.weight`
    tensors (`convert_hf_to_gguf.py`)."""
    named_weight = group.name.endswith("weight") or (
        bool(group.experts) and not group.name.endswith("bias"))
    if (len(group.shape) <= 1 or "norm" in group.name or group.component is Component.ROUTER
            or "conv" in group.name or not named_weight):
        return "f32"
    return None


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _mix_type(q: GgufQuantization, category: Category, layer: int | None, ncols: int,
              default: str, experts: bool) -> str:
    """`llama_tensor_get_type_impl` for the file types this module names."""
    ft, c = q.file_type, q.context
    if category == "output" or (c.tied and category == "token_embd"):
        block = GGML_TYPES[default][0]
        if ft == "mxfp4_moe" or c.arch == "falcon" or ncols % block:
            return "q8_0"
        if ft in ("iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
            return "q5_k"
        return default if default == "q8_0" else "q6_k"
    if ft == "mxfp4_moe":
        return "mxfp4" if experts else "q8_0"  # 3-D expert tensors (ne[2] > 1)
    if category == "token_embd":
        if ft in ("iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"):
            return "q2_k"
        if ft in ("iq2_s", "iq2_m", "iq3_xxs"):
            return "iq3_s"
        if ft in ("tq1_0", "tq2_0"):
            return "q4_k"
        return default
    i = layer or 0
    n = c.n_layer
    attn_v_like = category in ("attn_v", "attn_qkv", "attn_kv_b")
    iv = c.attn_v_layers.index(i) if attn_v_like and i in c.attn_v_layers else 0
    nv = len(c.attn_v_layers)
    if ft in _IQ12:
        small = "iq3_s" if ft in ("iq2_s", "iq2_m") else "q2_k"
        if attn_v_like:
            return "q4_k" if c.n_gqa >= 4 or c.n_expert >= 4 else small
        if c.n_expert == 8 and category == "attn_k":
            return "q4_k"
        if category == "ffn_down":
            return small if i < n // 8 else default
        if category == "attn_output":
            if c.n_expert == 8:
                return "q5_k"
            if ft in ("iq1_s", "iq1_m"):
                return "iq2_xxs"
            return "iq3_s" if ft in ("iq2_s", "iq2_m") else default
        return default
    if attn_v_like:  # category_is_attn_v: attn_v, attn_qkv and attn_kv_b alike
        return _attn_v(ft, c, iv, nv, default)
    if category == "attn_k":
        if c.n_expert == 8:
            return "q8_0"
        return {"iq3_xs": "iq3_xxs", "iq3_xxs": "iq2_s"}.get(ft, default)
    if category == "attn_q":
        return {"iq3_xs": "iq3_xxs", "iq3_xxs": "iq2_s"}.get(ft, default)
    if category == "ffn_down":
        return _ffn_down(ft, c, i, n, default)
    if category == "attn_output":
        return _attn_output(ft, c, default)
    if category in ("ffn_gate", "ffn_up"):
        if ft == "iq3_xs" and n // 8 <= i < 7 * n // 8:
            return "iq3_xxs"
    return default


def _attn_v(ft: str, c: GgufContext, iv: int, nv: int, default: str) -> str:
    t = default
    if ft == "q2_k":
        t = "q4_k" if c.n_gqa >= 4 else "q3_k"
    elif ft == "q2_k_s" and c.n_gqa >= 4:
        t = "q4_k"
    elif ft == "iq3_xxs":
        t = "q4_k" if c.n_gqa >= 4 else "iq3_s"  # without an importance matrix
    elif ft in ("iq3_xs", "iq3_s") and c.n_gqa >= 4:
        t = "q4_k"
    elif ft == "iq3_m":
        t = "q4_k"
    elif ft == "q3_k_m":
        t = "q5_k" if iv < 2 else "q4_k"
    elif ft == "q3_k_l":
        t = "q5_k"
    elif ft in ("iq4_nl", "iq4_xs") and c.n_gqa >= 4:
        t = "q5_k"
    elif ft in ("q4_k_m", "q5_k_m") and _use_more_bits(iv, nv):
        t = "q6_k"
    elif ft == "q4_k_s" and iv < 4:
        t = "q5_k"
    if c.type_70b and t in ("q3_k", "q4_k"):
        t = "q5_k"
    if c.n_expert == 8:
        t = "q8_0"
    return t


def _ffn_down(ft: str, c: GgufContext, i: int, n: int, default: str) -> str:
    falcon = c.arch == "falcon"
    if ft == "q2_k":
        return "q3_k"
    if ft == "q2_k_s":
        return "q4_k" if i < n // 8 else default
    if ft == "iq3_xxs":  # without an importance matrix
        return "q4_k" if i < n // 8 else "q3_k"
    if ft == "q3_k_m":
        if i < n // 16:
            return "q5_k"
        return "q4_k" if not falcon or _use_more_bits(i, n) else "q3_k"
    if ft == "iq3_m" and (i < n // 8 or (c.n_expert == 8 and _use_more_bits(i, n))):
        return "q4_k"
    if ft == "q3_k_l":
        return "q4_k" if falcon else "q5_k"
    if ft == "q4_k_m":
        if falcon:
            return "q6_k" if i < n // 16 else "q5_k" if _use_more_bits(i, n) else "q4_k"
        return "q6_k" if _use_more_bits(i, n) else default
    if ft in ("iq4_nl", "iq4_xs") and i < n // 8:  # without an importance matrix
        return "q5_k"
    if ft == "q5_k_m" and _use_more_bits(i, n):
        return "q6_k"
    if ft == "q4_k_s" and not falcon and i < n // 8:
        return "q5_k"
    return default


def _attn_output(ft: str, c: GgufContext, default: str) -> str:
    if c.arch == "falcon":
        return "q4_k" if ft == "q3_k_l" else default
    if c.n_expert == 8:
        if ft in ("q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s",
                  "q4_k_m", "iq3_s", "iq3_m", "iq4_xs"):
            return "q5_k"
        return default
    return {"q2_k": "q3_k", "iq3_xxs": "iq3_s", "q3_k_m": "q4_k", "q3_k_l": "q5_k",
            "iq3_m": "q4_k"}.get(ft, default)


def fallback(type_name: str, ncols: int) -> str:
    """`tensor_type_fallback`: the type a row of `ncols` values can take."""
    block = GGML_TYPES[type_name][0]
    if ncols % block == 0:
        return type_name
    other = _FALLBACK.get(type_name, "f16")
    return other if ncols % GGML_TYPES[other][0] == 0 else "f16"


def tensor_type(group: TensorGroup, layer: int | None, q: GgufQuantization,
                dtype: str) -> str | None:
    """The ggml type llama-quantize gives this tensor in `layer` (None: the unquantized
    16-bit `dtype`; a tensor not in the language model's file is `"absent"`)."""
    if group.stack != "decoder" and q.context.mmproj:
        return "absent"
    if not _quantizable(group):
        return _stored_type(group, dtype)
    default = FILE_DEFAULTS.get(q.file_type, q.file_type) if not q.pure else q.file_type
    ncols = group.shape[-1]
    if q.pure:
        return fallback(default, ncols)
    category = _category(group, q.context.arch)
    chosen = _mix_type(q, category, layer, ncols, default, bool(group.experts))
    return fallback(chosen, ncols)


def tensor_bytes(group: TensorGroup, layer: int | None, q: GgufQuantization,
                 dtype: str) -> int:
    """Bytes one copy of `group` (its tensor in `layer`) takes in the GGUF: `ggml_nbytes`,
    rows × `ggml_row_size`; a tensor outside the language model's file takes none."""
    typed = tensor_type(group, layer, q, dtype)
    if typed == "absent":
        return 0
    if typed is None:
        return -(-group.elements * dtype_bits(normalize_dtype(dtype)) // 8)
    block, size = GGML_TYPES[typed]
    ncols = group.shape[-1] if group.shape else 1
    rows = group.elements // ncols if ncols else 0
    return rows * (ncols // block * size)


class GgufTensor(BaseModel):
    """One tensor of the GGUF as llama-quantize writes it."""

    name: str
    layer: int | None
    type: str  # the ggml type, or the unquantized dtype
    elements: int
    bytes: int


def gguf_tensors(spec: ModelSpec, name: str) -> list[GgufTensor]:
    """Every tensor of `spec`'s language-model GGUF at file type `name`, typed and sized."""
    q = gguf_quantization(name, spec)
    if q is None:
        raise ValueError(f"{name!r} is no GGUF file type")
    dtype = normalize_dtype(spec.dtype)
    out: list[GgufTensor] = []
    for group in model_tensors(spec):
        for layer in group.layers or (None,):
            typed = tensor_type(group, layer, q, dtype)
            if typed == "absent":
                continue
            out.append(GgufTensor(
                name=group.name.replace("{i}", str(layer)) if layer is not None else group.name,
                layer=layer, type=typed or dtype, elements=group.elements,
                bytes=tensor_bytes(group, layer, q, dtype)))
    return out


def describe(q: GgufQuantization) -> tuple[str, str]:
    """(label, short word) of a GGUF file type for weight-scheme lines."""
    default = FILE_DEFAULTS.get(q.file_type, q.file_type)
    if q.pure:
        return (f"gguf {q.file_type} (pure): every 2-D weight {default}, norms and 1-D "
                "tensors f32", f"gguf {q.file_type}")
    return (f"gguf {q.file_type.upper()}, typed per tensor as llama-quantize does (mostly "
            f"{default})", f"gguf {q.file_type}")


def gguf_trust(spec: ModelSpec, q: Quantization | None) -> Trust | None:
    """How GGUF weight bytes were obtained: `exact` where llama.cpp's per-tensor rules were
    reproduced for this architecture's tensor layout, else `engine rule`; None when `q` is
    no GGUF file type."""
    if not isinstance(q, GgufQuantization):
        return None
    basis = (f"{q.file_type.upper()} typed per tensor as llama.cpp's quantizer types them "
             "(src/llama-quant.cpp, llama_tensor_get_type)")
    if spec.exact and q.context.arch in EXACT_ARCHITECTURES:
        return exact(basis)
    return engine_rule(basis + "; this architecture's GGUF tensor layout not checked")
