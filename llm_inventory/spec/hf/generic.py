"""A generic estimate for a decoder whose architecture no importer models.

A config whose `model_type` (and `architectures[0]`, and wrapped `text_config`) no builder
reads, but which carries the standard keys — `hidden_size`, `num_hidden_layers`,
`num_attention_heads`, `vocab_size`, `intermediate_size`, and optionally
`num_key_value_heads`, `head_dim`, expert counts (`num_experts`, `num_local_experts` or
`n_routed_experts`, with `num_experts_per_tok`) — is read as a Llama-like decoder: q/k/v/o
projections without bias, a gated MLP (or, with experts, a router and gated experts of
`moe_intermediate_size`), two RMS norms per layer, full attention on every layer unless
`layer_types` says otherwise. Nothing in it is checked against the architecture's own code,
so the model is marked `exact: false` and says why; a checkpoint's headers, when read beside
it, still give its weights exactly.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    LAYER_TYPES,
    decoder_model,
    present_or_default,
    rope_scaling,
)
from llm_inventory.spec.model import Encoder, LayerKind, ModelSpec, MoE, Stack

STANDARD_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                 "intermediate_size")
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")


def readable(data: dict[str, Any]) -> dict[str, Any] | None:
    """The mapping the estimate reads (the config, else its `text_config`), or None when
    neither carries every standard key."""
    for part in (data, data.get("text_config")):
        if isinstance(part, dict) and all(part.get(k) is not None for k in STANDARD_KEYS):
            return part
    return None


def missing_keys(data: dict[str, Any]) -> list[str]:
    return [k for k in STANDARD_KEYS if data.get(k) is None]


def estimate_note(model_type: str) -> str:
    return (f"estimated: architecture {model_type} is not modelled; its figures come from a "
            "generic Llama-like reading of the standard config keys")


def _moe(c: HFConfig) -> MoE | None:
    key = next((k for k in EXPERT_KEYS if c.has(k)), None)
    if key is None:
        return None
    experts = c.integer(key)
    shared = c.integer("n_shared_experts", 0, minimum=0) if c.has("n_shared_experts") else (
        c.integer("num_shared_experts", 0, minimum=0))
    width = c.integer("moe_intermediate_size") if c.has("moe_intermediate_size") else (
        c.integer("intermediate_size"))
    shared_width = c.integer("shared_expert_intermediate_size", width) if shared else 0
    return MoE(experts=experts, top_k=c.integer("num_experts_per_tok"),
               expert_intermediate_size=width, shared_experts=shared,
               shared_intermediate_size=shared_width,
               first_dense=c.integer("first_k_dense_replace", 0, minimum=0))


def _kinds(c: HFConfig) -> tuple[list[str] | None, int | None, list[str]]:
    """Per-layer kinds when `layer_types` names only kinds this tool knows."""
    names = c.data.get("layer_types")
    if not isinstance(names, list) or not names:
        return None, None, []
    if not all(isinstance(n, str) and n in LAYER_TYPES for n in names):
        return None, None, ["its layer_types name kinds this tool does not know; every layer "
                            "is counted as full attention"]
    kinds = [LAYER_TYPES[n] for n in names]
    window = present_or_default(c, "sliding_window") if LayerKind.SLIDING in kinds else None
    if LayerKind.SLIDING in kinds and window is None:
        return None, None, ["its layer_types has sliding layers but no sliding_window; every "
                            "layer is counted as full attention"]
    return [str(k) for k in kinds], window, []


def generic(data: dict[str, Any], label: str, name: str | None) -> ModelSpec:
    """The estimate for an unmodelled decoder config (see the module docstring)."""
    model_type = str(data.get("model_type"))
    part = readable(data)
    if part is None:
        raise InputError(f"{label}: model_type", f"unsupported model_type {model_type!r}")
    nested = part is not data
    c = HFConfig({**{k: data[k] for k in ("_name_or_path", "torch_dtype", "dtype",
                                          "quantization_config") if k in data}, **part,
                  "model_type": model_type},
                 f"{label}: text_config" if nested else label, name)
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    kinds, window, notes = _kinds(c)
    moe = _moe(c)
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=present_or_default(c, "num_key_value_heads") or heads,
        head_dim=c.integer("head_dim", hidden // heads),
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        # PretrainedConfig's default when the file does not say.
        tied_embeddings=c.flag("tie_word_embeddings", True),
        qkv_bias=c.flag("attention_bias", False),
        o_bias=c.flag("attention_bias", False),
        mlp_bias=c.flag("mlp_bias", False),
        rope_scaling=rope_scaling(c),
        layer_types=kinds,
        sliding_window=window,
        moe=moe,
    )
    note = estimate_note(model_type)
    extra = ["its text_config is read alone: any vision or audio tower is not counted"] \
        if nested else []
    spec = decoder_model(c, stack, notes=[note, *extra, *notes])
    return spec.model_copy(update={"exact": False, "estimated": note})


# A tower's size keys under the names configs use for them, in the order tried.
_TOWER_KEYS = {
    "hidden_size": ("hidden_size", "d_model", "embed_dim", "width"),
    "layers": ("num_hidden_layers", "depth", "num_layers", "encoder_layers"),
    "heads": ("num_attention_heads", "num_heads", "encoder_attention_heads"),
    "intermediate_size": ("intermediate_size", "encoder_ffn_dim", "ffn_dim"),
}
TOWERS = {"vision_config": "vision", "audio_config": "audio"}


def _first(part: dict[str, Any], names: tuple[str, ...]) -> tuple[str, int] | None:
    for key in names:
        value = part.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


def tower_estimates(data: dict[str, Any], label: str,
                    text_hidden: int) -> tuple[list[Encoder], list[str]]:
    """Generic estimates of the vision and audio towers of a wrapper whose own model type no
    builder reads: each a pre-norm transformer of its config's width, depth, heads and MLP
    width (plain MLP, biases, two LayerNorms a layer, a final norm), a patch convolution when
    it gives `patch_size`, and a two-layer MLP projector to the language model's width. A
    tower whose config lacks one of those sizes is named in a note, never silently dropped.
    """
    from llm_inventory.spec.hf.common import extra
    from llm_inventory.spec.hf.vision import mlp_projector, vit

    encoders: list[Encoder] = []
    notes: list[str] = []
    for key, kind in TOWERS.items():
        part = data.get(key)
        if not isinstance(part, dict) or not part:
            continue
        found = {name: _first(part, names) for name, names in _TOWER_KEYS.items()}
        missing = [names[0] for name, names in _TOWER_KEYS.items() if found[name] is None]
        if missing:
            notes.append(f"its {key} lacks {', '.join(missing)}: the {kind} tower and its "
                         "projector are not counted at all, so the total is low")
            continue
        sizes = {name: value for name, (_, value) in
                 ((n, f) for n, f in found.items() if f is not None)}
        hidden = sizes["hidden_size"]
        if hidden % sizes["heads"]:
            notes.append(f"its {key} width {hidden} is not a multiple of its "
                         f"{sizes['heads']} heads: the {kind} tower is not counted")
            continue
        flat = {"hidden_size": hidden, "num_hidden_layers": sizes["layers"],
                "num_attention_heads": sizes["heads"],
                "intermediate_size": sizes["intermediate_size"]}
        v = HFConfig(flat, f"{label}: {key}")
        stem = []
        patch, channels = part.get("patch_size"), part.get("num_channels",
                                                              part.get("in_channels", 3))
        if kind == "vision" and isinstance(patch, int) and isinstance(channels, int) \
                and 0 < patch <= 64 and 0 < channels <= 16:
            stem.append(extra("patch_embedding.weight", [hidden, channels, patch, patch]))
        stack = vit(v, extra=stem)
        encoders.append(Encoder(kind=kind, stack=stack,
                                projector=mlp_projector(hidden, text_hidden, bias=True)))
        notes.append(f"its {key} is estimated as a generic {kind} transformer "
                     f"({sizes['layers']} layers, width {hidden}) with a two-layer MLP "
                     "projector: its own architecture is not modelled")
    return encoders, notes
