"""Tensor names → component, role and layer, for Hugging Face and GGUF (llama.cpp) names.

The rules read a name the way the reference loaders lay modules out: quantization scales,
zero points and GPTQ's g_idx are not parameters; buffers a checkpoint stores (DeepSeek's
`e_score_correction_bias`, llama.cpp's `rope_freqs`) are not either. Names differing only in
their numbers share one classification, so it is cached on the name with digits masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from llm_inventory.spec.model import (
    CheckpointFacts,
    CheckpointTally,
    CheckpointTensor,
    Component,
    TensorRole,
)

_ROLES: tuple[tuple[TensorRole, re.Pattern[str]], ...] = (
    (TensorRole.SCALE, re.compile(
        r"(weight_scale(_inv|_2)?|input_scale|output_scale|(^|[._])[kvq]_scale|global_scale"
        r"|\.scales|_scales|absmax|quant_map|quant_state(\..*)?|\.SCB)$")),
    (TensorRole.ZERO_POINT, re.compile(r"(qzeros|zero_point|\.zeros)$")),
    (TensorRole.INDEX, re.compile(r"g_idx$")),
    (TensorRole.BUFFER, re.compile(
        r"(e_score_correction_bias|inv_freq|rope_freqs\.weight|exp_probs_b\.bias"
        r"|rope_factors_(long|short)\.weight|position_ids|weight_format)$")),
)

_PROJECTOR = re.compile(
    r"(multi_modal_projector|mm_projector|(^|\.)visual\.merger|vision_projection|"
    r"(^|\.)connector\.|^mm\.|^resampler\.|audio_projector)")
_ENCODER = re.compile(
    r"(vision_tower|vision_model|(^|\.)visual\.|vision_encoder|audio_tower|audio_encoder|"
    r"image_encoder|^v\.|^a\.|(^|\.)encoder\.layers\.)")
_ATTENTION_NORM = re.compile(
    r"((^|\.)(self_attn|attention|attn|cross_attn|encoder_attn)\.[^.]*norm"
    r"|attn_(q|k|q_a|kv_a)_norm)")
_NORM = re.compile(r"(norm|(^|\.)ln_?(\d+|f)?\.|layernorm)")
_SHARED = re.compile(r"(shared_expert|shexp)")
_ROUTER = re.compile(
    r"(\.gate\.(weight|bias|e_score_correction_bias)$|(^|\.)router\.|ffn_gate_inp\.|exp_probs_b)")
_EXPERTS = re.compile(r"(\.experts\.|_exps\.|_chexps\.)")
_EMBEDDINGS = re.compile(
    r"(embed_tokens|(^|\.)wte\.|word_embeddings|tok_embeddings|token_embd\.|embed_positions"
    r"|(^|\.)wpe\.|position_embd|position_embeddings|token_type)")
_LM_HEAD = re.compile(r"((^|\.)lm_head\.|^output\.weight$|embed_out\.|shared_head\.head)")
_ATTENTION = re.compile(
    r"(self_attn|attention|(^|\.)attn|\.(q|k|v|o)_proj\.|query_key_value|c_attn|sinks"
    r"|attn_)")
_MIXER = re.compile(r"(mixer|mamba|ssm_|\.ssm\.|time_mix|channel_mix|shortconv|linear_attn)")
_MLP = re.compile(
    r"(mlp|feed_forward|ffn|(^|\.)fc\d\.|c_fc|intermediate\.dense|(^|\.)output\.dense)")
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blk|blocks|block)\.(\d+)\.")
# Bytes translation is the fastest way to mask digits (str.translate goes through a dict).
_MASK = bytes.maketrans(b"123456789", b"000000000")


def role_of(name: str) -> TensorRole:
    """Whether a tensor is a parameter, a quantization scale/zero point/index or a buffer."""
    for role, pattern in _ROLES:
        if pattern.search(name):
            return role
    return TensorRole.WEIGHT


def _component(name: str) -> Component:
    if _PROJECTOR.search(name):
        return Component.PROJECTOR
    if _ENCODER.search(name):
        return Component.ENCODER
    if _ATTENTION_NORM.search(name):
        return Component.ATTENTION
    if _NORM.search(name):
        return Component.NORMS
    if _SHARED.search(name):
        return Component.SHARED_EXPERTS
    if _ROUTER.search(name):
        return Component.ROUTER
    if _EXPERTS.search(name):
        return Component.EXPERTS
    if _EMBEDDINGS.search(name):
        return Component.EMBEDDINGS
    if _LM_HEAD.search(name):
        return Component.LM_HEAD
    if _ATTENTION.search(name):
        return Component.ATTENTION
    if _MIXER.search(name):
        return Component.MIXER
    if _MLP.search(name):
        return Component.MLP
    return Component.OTHER


@lru_cache(maxsize=16384)
def _classify_masked(masked: bytes) -> tuple[Component, TensorRole]:
    text = masked.decode("utf-8", errors="replace")
    return _component(text), role_of(text)


def classify(name: str) -> tuple[Component, TensorRole, int | None]:
    """(component, role, decoder layer index or None) of one tensor name."""
    component, role = _classify_masked(name.encode("utf-8", errors="replace").translate(_MASK))
    layer = None
    if component not in (Component.ENCODER, Component.PROJECTOR):
        match = _LAYER.search(name)
        if match is not None:
            layer = int(match.group(1))
    return component, role, layer


def _tally(totals: dict[str, list[int]]) -> list[CheckpointTally]:
    return [CheckpointTally(key=str(k), tensors=v[0], elements=v[1], bytes=v[2])
            for k, v in sorted(totals.items(), key=lambda kv: (-kv[1][2], kv[0]))]


def _add(totals: dict[str, list[int]], key: str, elements: int, size: int) -> None:
    entry = totals.get(key)
    if entry is None:
        totals[key] = [1, elements, size]
    else:
        entry[0] += 1
        entry[1] += elements
        entry[2] += size


def dtype_tallies(tensors: Iterable[CheckpointTensor]) -> list[CheckpointTally]:
    """Tensors, elements and bytes per stored dtype, largest first."""
    totals: dict[str, list[int]] = {}
    for t in tensors:
        _add(totals, t.dtype or "?", t.elements or 0, t.bytes or 0)
    return _tally(totals)


def component_key(tensor: CheckpointTensor, stack_layers: int | None) -> str:
    """The component a tensor is tallied under: `mtp` past the decoder's layer count."""
    if stack_layers is not None and tensor.layer is not None and tensor.layer >= stack_layers:
        return "mtp"
    return str(tensor.component)


def build_facts(
    *,
    fmt: str,
    path: str,
    files: list[str],
    tensors: list[CheckpointTensor],
    headers_read: bool,
    total_bytes: int,
    stack_layers: int | None,
    metadata: dict[str, str] | None = None,
    notes: list[str] | None = None,
) -> CheckpointFacts:
    """Summarise a tensor list into the facts a ModelSpec carries (one pass)."""
    dtypes: dict[str, list[int]] = {}
    components: dict[str, list[int]] = {}
    roles: dict[str, list[int]] = {}
    for t in tensors:
        elements, size = t.elements or 0, t.bytes or 0
        _add(dtypes, t.dtype or "?", elements, size)
        _add(components, component_key(t, stack_layers), elements, size)
        _add(roles, t.role, elements, size)
    return CheckpointFacts(
        format="gguf" if fmt == "gguf" else "safetensors",
        path=path,
        files=files,
        headers_read=headers_read,
        tensor_count=len(tensors),
        total_bytes=total_bytes,
        elements=sum(v[1] for v in dtypes.values()) if headers_read else None,
        by_dtype=_tally(dtypes) if headers_read else [],
        by_component=_tally(components),
        by_role=_tally(roles),
        metadata=metadata or {},
        notes=notes or [],
        tensors=tensors,
    )
