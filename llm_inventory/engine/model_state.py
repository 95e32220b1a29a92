"""A model's persistent-state layout: which layers keep what, for the state engine.

Per decoder layer kind: attention layers keep K and V per token (capped by a window or a
chunk); MLA layers one latent of kv_lora_rank + qk_rope_head_dim; Mamba layers a fixed
conv + SSM state per sequence; cross-attention layers K and V over the encoder's tokens;
shared-KV layers nothing. Encoder-only and diffusion models keep no state across steps.
"""

from __future__ import annotations

from llm_inventory.engine.state import StateKind, StateLayer
from llm_inventory.engine.tensors import ssm_dims
from llm_inventory.spec.model import LayerKind, ModelSpec, Stack

_KIND = {
    LayerKind.FULL: StateKind.FULL,
    LayerKind.SLIDING: StateKind.SLIDING,
    LayerKind.CHUNKED: StateKind.CHUNKED,
    LayerKind.MLA: StateKind.MLA,
    LayerKind.MAMBA: StateKind.RECURRENT,
    LayerKind.CROSS: StateKind.CROSS,
    LayerKind.SHARED: StateKind.SHARED,
}


def ssm_state_elements(stack: Stack) -> int:
    """Elements of one sequence's Mamba state in one layer: conv window + SSM state.

    Conv: (d_conv − 1) × conv channels; SSM: d_inner × d_state (Mamba-1) or
    heads × head_dim × d_state (Mamba-2).
    """
    assert stack.ssm is not None
    _, _, conv, ssm = ssm_dims(stack)
    return (stack.ssm.d_conv - 1) * conv + ssm


def _layer(stack: Stack, index: int, kind: LayerKind, encoder_tokens: int) -> StateLayer:
    state = _KIND[kind]
    heads, k, v = stack.n_kv_heads, stack.k_dim, stack.v_dim
    if kind is LayerKind.MLA:
        assert stack.mla is not None
        latent = stack.mla.kv_lora_rank + stack.mla.qk_rope_head_dim
        return StateLayer(kind=state, first=index, latent_dim=latent)
    if kind is LayerKind.MAMBA:
        assert stack.ssm is not None
        return StateLayer(kind=state, first=index, state_elements=ssm_state_elements(stack),
                          dtype=stack.ssm.state_dtype)
    if kind is LayerKind.CROSS:
        return StateLayer(kind=state, first=index, kv_heads=heads, k_head_dim=k, v_head_dim=v,
                          encoder_tokens=encoder_tokens)
    if kind is LayerKind.SHARED:
        return StateLayer(kind=state, first=index)
    window = stack.sliding_window if kind is LayerKind.SLIDING else (
        stack.chunk_size if kind is LayerKind.CHUNKED else None)
    return StateLayer(kind=state, first=index, kv_heads=heads, k_head_dim=k, v_head_dim=v,
                      window=window)


def _runs(layers: list[StateLayer]) -> tuple[StateLayer, ...]:
    """Merge consecutive identical layers into runs (first, count)."""
    runs: list[StateLayer] = []
    for layer in layers:
        last = runs[-1] if runs else None
        if (last is not None and last.first + last.count == layer.first
                and last.model_copy(update={"first": 0, "count": 1})
                == layer.model_copy(update={"first": 0})):
            runs[-1] = last.model_copy(update={"count": last.count + 1})
        else:
            runs.append(layer)
    return tuple(runs)


def state_layers(spec: ModelSpec, encoder_tokens: int = 0) -> tuple[StateLayer, ...]:
    """The state layout of `spec`'s decoder; empty when the model keeps no state."""
    stack = spec.decoder
    if stack is None or spec.family.value in ("encoder", "diffusion"):
        return ()
    self_layers: list[StateLayer] = []
    cross_layers: list[StateLayer] = []
    for index, kind in enumerate(stack.kinds()):
        if kind is not LayerKind.MAMBA and not stack.n_kv_heads and kind is not LayerKind.MLA:
            continue  # a coarse stack without attention shapes
        self_layers.append(_layer(stack, index, kind, encoder_tokens))
        if stack.cross_attention and kind is not LayerKind.CROSS:
            cross_layers.append(_layer(stack, index, LayerKind.CROSS, encoder_tokens))
    return _runs(self_layers) + _runs(cross_layers)


def context_notes(spec: ModelSpec, context: int) -> list[str]:
    """A context past the model's positions: vLLM refuses such a max_model_len."""
    if spec.max_context and context > spec.max_context:
        return [f"the context of {context:,} tokens exceeds the model's "
                f"{spec.max_context:,} positions; vLLM refuses it unless "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (and quality past it is not assured)"]
    return []
