"""A model's persistent-state layout: which layers keep what, for the state engine.

Each decoder layer's mixers say what they keep (see `engine/kinds/`): attention K and V per
token, MLA latents, Mamba state, cross-attention K and V over the encoder's tokens, nothing
for shared-KV layers. Encoder-only and diffusion models keep no state across steps.
"""

from __future__ import annotations

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds import StateLayer
from llm_inventory.engine.kinds.mamba import ssm_state_elements
from llm_inventory.spec.model import ModelSpec, Stack

__all__ = ["context_notes", "ssm_state_elements", "state_layers"]


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


def keeps_state(spec: ModelSpec) -> bool:
    """Whether the model runs a decode loop whose layers keep state between steps."""
    return spec.decoder is not None and spec.diffusion is None and spec.family.decodes


def state_layers(spec: ModelSpec, encoder_tokens: int = 0) -> tuple[StateLayer, ...]:
    """The state layout of `spec`'s decoder: each layer's own mixer, then the cross-attention
    every layer of a `cross_attention` stack adds (and the mixers beside it), then the
    further passes of looped layers; empty when the model keeps no state."""
    stack = spec.decoder
    if stack is None or not keeps_state(spec):
        return ()
    own: list[StateLayer] = []
    extra: list[StateLayer] = []
    for index in range(stack.layers):
        for position, (kind, _) in enumerate(kinds.mixers(stack, index)):
            layer = kind.state_layer(stack.at(index), index, encoder_tokens)
            if layer is not None:
                (own if position == 0 else extra).append(layer)
    return _runs(own) + _runs(extra) + _looped(stack, own + extra)


def _looped(stack: Stack, layers: list[StateLayer]) -> tuple[StateLayer, ...]:
    """The caches of a looped stack's further passes: passes − 1 more copies of each looped
    layer's state, on the same layer (so on its pipeline stage)."""
    loop = stack.loop
    if loop is None or loop.passes < 2:
        return ()
    inside = [layer for layer in layers if loop.start <= layer.first < loop.end]
    return _runs(inside) * (loop.passes - 1)


def context_notes(spec: ModelSpec, context: int) -> list[str]:
    """A context past the model's positions: vLLM refuses such a max_model_len."""
    if spec.max_context and context > spec.max_context:
        return [f"the context of {context:,} tokens exceeds the model's "
                f"{spec.max_context:,} positions; vLLM refuses it unless "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (and quality past it is not assured)"]
    return []
