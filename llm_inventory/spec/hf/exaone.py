"""EXAONE 4 (transformers `models/exaone4`).

A Llama layout with per-head q/k RMS norms and its two norms after attention and after the MLP
(`post_attention_layernorm`, `post_feedforward_layernorm`). With `sliding_window` set, layers
are local or global by `layer_types` (else `sliding_window_pattern`), and the global layers
apply no rotary embedding (`Exaone4Attention.forward`: RoPE only when `sliding_window is None
or self.is_sliding`).
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types, present_or_default
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, Stack


def _pattern(c: HFConfig, layers: int) -> list[LayerKind]:
    """`sliding_window_pattern`: an int n makes every n-th layer global (Exaone4Config's
    `__post_init__`); a string of L (local) and G (global) repeats, as its docstring says."""
    pattern = c.raw("sliding_window_pattern")
    if isinstance(pattern, str):
        if not pattern or set(pattern) - {"L", "G"}:
            raise InputError(f"{c.label}: sliding_window_pattern",
                             f"must be an integer or a string of L and G, got {pattern!r}")
        return [LayerKind.SLIDING if pattern[i % len(pattern)] == "L" else LayerKind.FULL
                for i in range(layers)]
    every = c.integer("sliding_window_pattern")
    return [LayerKind.SLIDING if (i + 1) % every else LayerKind.FULL for i in range(layers)]


def exaone4(c: HFConfig) -> ModelSpec:
    """EXAONE 4: q/k norms per head; local layers with RoPE, global layers without."""
    fields = core(c, qk_norm="head")
    window = present_or_default(c, "sliding_window")
    if window is None:
        kinds = [LayerKind.FULL]
    else:
        kinds = layer_types(c) or _pattern(c, fields["layers"])
        if c.has("layer_types"):
            c.superseded("sliding_window_pattern")  # Exaone4Config derives only without
        fields.update(sliding_window=window,
                      overrides=[LayerOverride(kinds=[LayerKind.FULL], rope=False)])
    return decoder_model(c, Stack(**fields, layer_types=kinds))
