"""GGUF metadata and tensor names → ModelSpec.

Shapes come from the `{arch}.*` keys llama.cpp writes (block_count, embedding_length,
feed_forward_length, attention.head_count / head_count_kv / key_length / value_length,
expert_count / expert_used_count / expert_feed_forward_length, the MLA ranks …); what the
keys do not carry — biases, q/k norms, tied embeddings, gated MLPs, shared-expert gates,
attention sinks — is read from which tensors the first layer holds. Architectures whose
layout is mapped build a full Stack; any other (or one whose keys vary by layer) becomes a
coarse spec with its totals from the tensor table, and a note says why. Multi-token-
prediction layers (`blk.N.nextn.*`) are not part of the stack.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from llm_inventory.bounds import LAYERS, config_bound
from llm_inventory.checkpoint.classify import build_facts
from llm_inventory.checkpoint.gguf import ArrayLength, GGUFCheckpoint
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.model import (
    MLA,
    CheckpointTensor,
    Coarse,
    Component,
    Family,
    LayerKind,
    ModelSpec,
    MoE,
    Quantization,
    Stack,
    TensorRole,
)

# Architectures whose tensors the Stack describes exactly (as transformers lays them out).
MAPPED = ("llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gemma", "gemma2", "gemma3",
          "deepseek2", "phi3", "gpt-oss", "olmoe")
_PLAIN = {"F32": "fp32", "F16": "fp16", "BF16": "bf16", "F64": "fp32"}
_INTEGER = {"I8", "I16", "I32", "I64"}
# A first-layer tensor `blk.0.<name>.weight`; which are layer norms is the classifier's call.
_FIRST_LAYER_WEIGHT = re.compile(r"^blk\.0\.[a-z0-9_]+\.weight$")


class _Unsure(Exception):
    """The metadata does not settle a field the Stack needs: fall back to the coarse form."""


class _Meta:
    def __init__(self, checkpoint: GGUFCheckpoint, arch: str) -> None:
        self.values = checkpoint.metadata
        self.arch = arch
        self.label = str(checkpoint.path)
        self.tensors = checkpoint.tensors
        self.names = {t.name: t for t in checkpoint.tensors}

    def raw(self, key: str) -> Any:
        return self.values.get(f"{self.arch}.{key}")

    def opt_int(self, key: str) -> int | None:
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, list):
            if not value or any(v != value[0] for v in value):
                raise _Unsure(f"{self.arch}.{key} varies by layer")
            value = value[0]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"{self.label}: {self.arch}.{key}",
                             f"must be a non-negative integer, got {excerpt(value)}")
        bound = config_bound(key)
        if value > bound.limit:
            raise InputError(f"{self.label}: {self.arch}.{key}", f"must be at most "
                             f"{bound.limit:,} {bound.unit}, got {excerpt(value)}")
        return value

    def need(self, key: str) -> int:
        value = self.opt_int(key)
        if not value:
            raise _Unsure(f"{self.arch}.{key} is missing")
        return value

    def tensor(self, name: str) -> CheckpointTensor | None:
        return self.names.get(name)

    def has(self, name: str) -> bool:
        return name in self.names


def _layers(m: _Meta) -> tuple[int, list[int]]:
    """(decoder layers, multi-token-prediction layer indices)."""
    indices = {t.layer for t in m.tensors if t.name.startswith("blk.") and t.layer is not None}
    mtp = sorted({t.layer for t in m.tensors if ".nextn." in t.name and t.layer is not None})
    try:
        blocks = m.opt_int("block_count")
    except _Unsure:
        blocks = None
    total = blocks or (max(indices) + 1 if indices else 0)
    LAYERS.check(f"{m.label}: {m.arch}.block_count (or the highest blk.N)", max(total, 1))
    layers = total - len([i for i in mtp if i < total]) if total else 0
    if layers < 1:
        raise InputError(m.label, f"{m.arch}.block_count is missing and no blk.N tensors "
                         "say how many layers there are")
    return layers, mtp


def _norms_per_layer(m: _Meta) -> int:
    """The first layer's norms, those inside attention (q/k norms) left to attention."""
    return sum(1 for t in m.tensors
               if t.component is Component.NORMS and _FIRST_LAYER_WEIGHT.match(t.name))


def _moe(m: _Meta, layers: int) -> MoE | None:
    experts = m.opt_int("expert_count")
    if not experts:
        return None
    top_k = m.need("expert_used_count")
    expert_size = m.opt_int("expert_feed_forward_length") or m.need("feed_forward_length")
    moe_layers = sorted({t.layer for t in m.tensors if t.component is Component.EXPERTS
                         and t.layer is not None and t.layer < layers})
    if not moe_layers:
        raise _Unsure(f"{m.arch}.expert_count is set but no layer holds expert tensors")
    b = f"blk.{moe_layers[0]}."
    shared = m.opt_int("expert_shared_count") or 0
    shared_up = m.tensor(b + "ffn_up_shexp.weight")
    if shared_up is not None and not shared:
        shared = 1
    shared_size = 0
    if shared:
        if shared_up is not None and shared_up.shape:
            shared_size = shared_up.shape[0] // shared
        else:
            shared_size = m.need("expert_shared_feed_forward_length")
    placement: dict[str, Any] = (
        {"first_dense": moe_layers[0]} if moe_layers == list(range(moe_layers[0], layers))
        else {"layers": moe_layers})
    return MoE(
        experts=experts,
        top_k=top_k,
        expert_intermediate_size=expert_size,
        gated=m.has(b + "ffn_gate_exps.weight") or m.has(b + "ffn_gate_up_exps.weight"),
        expert_bias=any(m.has(f"{b}ffn_{p}_exps.bias") for p in ("gate", "up", "down",
                                                                  "gate_up")),
        router_bias=m.has(b + "ffn_gate_inp.bias"),
        shared_experts=shared,
        shared_intermediate_size=shared_size,
        shared_expert_gate=m.has(b + "ffn_gate_inp_shexp.weight"),
        **placement,
    )


def _layer_types(m: _Meta, layers: int, notes: list[str]) -> dict[str, Any]:
    window = m.opt_int("attention.sliding_window")
    if not window:
        return {}
    pattern = m.raw("attention.sliding_window_pattern")
    arch = m.arch
    if isinstance(pattern, list) and pattern and all(isinstance(p, bool) for p in pattern):
        kinds = [LayerKind.SLIDING if p else LayerKind.FULL for p in pattern]
    elif arch == "gemma3":
        every = m.opt_int("attention.sliding_window_pattern")
        if every is None:
            every = 6
            notes.append("gemma3: the file does not say which layers slide; five sliding "
                         "layers then one full, as llama.cpp and transformers lay Gemma 3 out")
        kinds = [LayerKind.SLIDING] * (every - 1) + [LayerKind.FULL]
    elif arch in ("gemma2", "gpt-oss"):
        notes.append(f"{arch}: layers alternate sliding ({window:,}) and full attention, as "
                     "llama.cpp lays the architecture out")
        kinds = [LayerKind.SLIDING, LayerKind.FULL]
    elif arch == "phi3":
        kinds = [LayerKind.SLIDING]
    else:
        notes.append(f"{arch}.attention.sliding_window is {window:,} but the file does not "
                     "say which layers use it; every layer is counted as full attention")
        return {}
    if LayerKind.SLIDING not in kinds:
        return {}
    return {"layer_types": kinds, "sliding_window": window}


def _stack(m: _Meta, layers: int, notes: list[str]) -> Stack:
    hidden = m.need("embedding_length")
    heads = m.need("attention.head_count")
    kv_heads = m.opt_int("attention.head_count_kv") or heads
    key_length = m.opt_int("attention.key_length")
    value_length = m.opt_int("attention.value_length")
    embed = m.tensor("token_embd.weight")
    vocab = embed.shape[0] if embed is not None and embed.shape else m.opt_int("vocab_size")
    tokens = m.values.get("tokenizer.ggml.tokens")
    if not vocab and isinstance(tokens, ArrayLength):
        vocab = tokens.length
    if not vocab:
        raise _Unsure("no token_embd.weight, vocab_size or token list gives the vocabulary")
    fields: dict[str, Any] = {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "vocab_size": vocab,
        "tied_embeddings": not m.has("output.weight"),
        "final_norm": m.has("output_norm.weight"),
    }
    kv_lora = m.opt_int("attention.kv_lora_rank")
    if kv_lora:
        rope = m.need("rope.dimension_count")
        # Newer conversions store MLA as multi-query (key_length = latent); the per-head
        # widths are then under key_length_mla / value_length_mla.
        k_mla = m.opt_int("attention.key_length_mla") or key_length
        v_mla = m.opt_int("attention.value_length_mla") or value_length
        if not k_mla or not v_mla or k_mla <= rope:
            raise _Unsure("the MLA head widths (key_length_mla, value_length_mla) are missing")
        mla = MLA(kv_lora_rank=kv_lora, qk_rope_head_dim=rope, qk_nope_head_dim=k_mla - rope,
                  v_head_dim=v_mla, q_lora_rank=m.opt_int("attention.q_lora_rank") or None)
        fields.update(kv_heads=heads, head_dim=k_mla, v_head_dim=v_mla, mla=mla)
    else:
        head_dim = key_length or hidden // heads
        fields.update(kv_heads=kv_heads, head_dim=head_dim)
        if value_length and value_length != head_dim:
            fields["v_head_dim"] = value_length
        rotary = m.opt_int("rope.dimension_count")
        if rotary and rotary < head_dim:
            fields["partial_rotary_factor"] = rotary / head_dim
    head_dim = fields["head_dim"]
    b = "blk.0."
    fields["qkv_bias"] = m.has(b + "attn_q.bias") or m.has(b + "attn_qkv.bias")
    fields["o_bias"] = m.has(b + "attn_output.bias")
    q_norm = m.tensor(b + "attn_q_norm.weight")
    if q_norm is not None and q_norm.shape:
        width = q_norm.shape[-1]
        if width == head_dim:
            fields["qk_norm"] = "head"
        elif width == heads * head_dim:
            fields["qk_norm"] = "full"
        else:
            raise _Unsure(f"attn_q_norm has {width} elements, neither a head nor all heads")
    fields["sinks"] = any(n.startswith(b + "attn_sinks") for n in m.names)
    fields["norm"] = "layer" if m.has(b + "attn_norm.bias") else "rms"
    fields["norms_per_layer"] = _norms_per_layer(m)

    moe = _moe(m, layers)
    dense = next((i for i in range(layers) if moe is None or not moe.is_moe_layer(i)), None)
    size = m.opt_int("feed_forward_length")
    if dense is not None:
        d = f"blk.{dense}."
        up = m.tensor(d + "ffn_up.weight")
        if up is None or not up.shape:
            fields["mlp"] = "none"
            fields["intermediate_size"] = 0
        else:
            size = size or up.shape[0]
            gated = m.has(d + "ffn_gate.weight") or up.shape[0] == 2 * size
            fields["mlp"] = "gated" if gated else "plain"
            fields["intermediate_size"] = size
            fields["mlp_bias"] = m.has(d + "ffn_up.bias") or m.has(d + "ffn_down.bias")
    else:
        fields["intermediate_size"] = size or 0
    if moe is not None:
        fields["moe"] = moe
    fields.update(_layer_types(m, layers, notes))
    return Stack(**fields)


def _coarse(m: _Meta, layers: int, weights: list[CheckpointTensor], reason: str,
            notes: list[str]) -> tuple[Stack, Coarse, Family]:
    notes.append(f"{m.arch}: {reason}; parameters are the tensor table's totals and the "
                 "layer shapes (so the KV cache) are not known")
    total = sum(t.elements or 0 for t in weights)
    stack = Stack(layers=layers)
    try:
        experts = m.opt_int("expert_count")
        top_k = m.opt_int("expert_used_count")
    except _Unsure:
        experts = top_k = None
    expert_elements = sum(t.elements or 0 for t in weights if t.component is Component.EXPERTS)
    if experts and top_k and expert_elements and top_k <= experts:
        per_expert = expert_elements // experts
        return stack, Coarse(
            total=total, experts=experts, top_k=top_k, expert_parameters=per_expert,
            shared_parameters=total - per_expert * experts,
        ), Family.MOE
    return stack, Coarse(total=total), Family.DENSE


def _weights_format(m: _Meta, weights: list[CheckpointTensor],
                    notes: list[str]) -> tuple[str, Quantization | None]:
    """The spec's dtype and quantization: the plain float type, or the quantized mix."""
    quantized = [t for t in weights if t.dtype not in _PLAIN and t.dtype not in _INTEGER]
    if not quantized:
        mass: dict[str, int] = {}
        for t in weights:
            if t.dtype in _PLAIN and t.shape and len(t.shape) >= 2:
                mass[t.dtype] = mass.get(t.dtype, 0) + (t.elements or 0)
        main = max(mass, key=lambda k: mass[k]) if mass else "F32"
        return _PLAIN[main], None
    elements = sum(t.elements or 0 for t in quantized)
    size = sum(t.bytes or 0 for t in quantized)
    bits = round(8 * size / elements, 4) if elements else 8.0
    import gguf

    file_type: Any = m.values.get("general.file_type")
    try:
        label = gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
    except (ValueError, TypeError):
        label = "/".join(sorted({t.dtype or "?" for t in quantized}))
    notes.append(f"weights are GGUF {label} ({bits:g} bits per weight on average over the "
                 "quantized tensors); dtype fp16 is llama.cpp's default KV-cache type")
    return "fp16", Quantization(method=f"gguf {label}", bits=min(bits, 16.0))


def _metadata(values: dict[str, Any], arch: str) -> dict[str, str]:
    kept: dict[str, str] = {}
    for key, value in values.items():
        if not key.startswith(("general.", f"{arch}.", "split.")):
            continue
        if isinstance(value, ArrayLength):
            text = f"array of {value.length:,}"
        else:
            text = str(value)
        kept[key] = text if len(text) <= 200 else text[:197] + "..."
    return kept


def spec_from_gguf(checkpoint: GGUFCheckpoint) -> ModelSpec:
    """A ModelSpec (with its checkpoint facts) for a GGUF model."""
    from llm_inventory.spec.errors import from_validation

    try:
        return _spec_from_gguf(checkpoint)
    except ValidationError as exc:  # a field past its bound (a name, a context …)
        raise from_validation(exc, str(checkpoint.path)) from exc


def _spec_from_gguf(checkpoint: GGUFCheckpoint) -> ModelSpec:
    arch = checkpoint.metadata.get("general.architecture")
    label = str(checkpoint.path)
    if not isinstance(arch, str) or not arch:
        raise InputError(f"{label}: general.architecture", "missing; not a model GGUF "
                         "(a projector or LoRA file?)")
    m = _Meta(checkpoint, arch)
    notes: list[str] = []
    layers, mtp = _layers(m)
    if mtp:
        notes.append(f"the file carries {len(mtp)} multi-token-prediction layer(s) "
                     f"(blk.{mtp[0]}.nextn.*), which the decoder stack leaves out")
    weights = [t for t in checkpoint.tensors if t.role is TensorRole.WEIGHT
               and (t.layer is None or t.layer < layers)]
    coarse: Coarse | None = None
    family = Family.DENSE
    try:
        if arch not in MAPPED:
            raise _Unsure(f"the {arch!r} architecture's layout is not mapped (mapped: "
                          f"{', '.join(MAPPED)})")
        stack = _stack(m, layers, notes)
        family = Family.MOE if stack.moe else Family.DENSE
    except (_Unsure, ValidationError) as exc:
        reason = str(exc) if isinstance(exc, _Unsure) else "its keys do not form a valid stack"
        stack, coarse, family = _coarse(m, layers, weights, reason, notes)
    dtype, quantization = _weights_format(m, weights, notes)
    name = checkpoint.metadata.get("general.name")
    facts = build_facts(
        fmt="gguf",
        path=label,
        files=checkpoint.files,
        tensors=checkpoint.tensors,
        headers_read=True,
        total_bytes=checkpoint.total_bytes,
        stack_layers=layers,
        metadata=_metadata(checkpoint.metadata, arch),
    )
    try:
        context = m.opt_int("context_length")
    except _Unsure:
        context = None
    stem = checkpoint.path.name.removesuffix(".gguf")
    return ModelSpec(
        name=name if isinstance(name, str) and name else re.sub(r"-\d{5}-of-\d{5}$", "", stem),
        family=family,
        source=f"GGUF metadata ({arch}): {label}",
        model_type=str(arch) if arch else None,
        dtype=dtype,
        decoder=stack,
        coarse=coarse,
        quantization=quantization,
        max_context=context or None,
        notes=notes,
        checkpoint=facts,
    )
