"""Xiaomi MiMo: MiMo-7B (no transformers class; the checkpoint's `modeling_mimo.py` is a
Qwen2 decoder plus multi-token-prediction layers) and MiMo-V2-Flash (transformers
`models/mimo_v2_flash`: sliding and full layers of different KV head counts, sinks on the
sliding ones, routed experts after one dense layer)."""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, extra, layer_types
from llm_inventory.spec.hf.qwen import qwen2
from llm_inventory.spec.model import (
    MTP,
    Component,
    LayerKind,
    LayerOverride,
    ModelSpec,
    MoE,
    Stack,
)


def _mimo_mtp(c: HFConfig) -> MTP | None:
    """`num_nextn_predict_layers` MiMo MTP layers (`model.mtp_layers.{i}` in the checkpoint):
    a Qwen2 decoder layer (attention with q/k/v biases, the dense MLP) plus its token and
    hidden norms, the 2h → h `input_proj` and a final norm (`MiMoMTPLayers`; vLLM
    `mimo_mtp.py`). The embedding and head are the model's own."""
    count = c.integer("num_nextn_predict_layers", minimum=0)
    if not count:
        return None
    hidden = c.integer("hidden_size")
    tensors = [extra("token_layernorm.weight", [hidden], component=Component.MTP),
               extra("hidden_layernorm.weight", [hidden], component=Component.MTP),
               extra("input_proj.weight", [hidden, 2 * hidden], linear=True,
                     component=Component.MTP),
               extra("final_layernorm.weight", [hidden], component=Component.MTP)]
    return MTP(layers=count, moe=False, extra=tensors)


def mimo(c: HFConfig) -> ModelSpec:
    """MiMo-7B: `MiMoConfig` subclasses Qwen2Config and `MiMoModel` Qwen2Model, so the main
    model is Qwen2's; the MTP layers are counted apart."""
    spec = qwen2(c)
    assert spec.decoder is not None
    mtp = _mimo_mtp(c)
    if mtp is None:
        return spec
    return spec.model_copy(update={"decoder": spec.decoder.model_copy(update={"mtp": mtp})})


def _pattern(c: HFConfig, key: str, legacy: str, names: dict[int, str]) -> list[str] | None:
    """A per-layer list: `key` as given, else the hub file's 0/1 list `legacy`."""
    given = c.str_list(key)
    if given is not None:
        return given
    flags = c.int_list(legacy)
    if flags is None:
        return None
    if any(f not in names for f in flags):
        raise InputError(f"{c.label}: {legacy}", f"must hold 0 or 1 per layer, got {flags!r}")
    return [names[f] for f in flags]


def _mimo_v2_layers(c: HFConfig, layers: int) -> tuple[list[str], list[int]]:
    """(attention kind per layer, MoE layer indices). The hub file spells them
    `hybrid_layer_pattern` (1 = sliding) and `moe_layer_freq` (1 = MoE), as vLLM reads
    them (`MiMoV2FlashDecoderLayer`); transformers' class takes `layer_types` and
    `mlp_layer_types`, defaulting to full attention on layer 0 and every sixth layer and a
    dense first layer (`MiMoV2FlashConfig.__post_init__`)."""
    kinds = _pattern(c, "layer_types", "hybrid_layer_pattern",
                     {0: "full_attention", 1: "sliding_attention"})
    if kinds is None:
        kinds = ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention"
                 for i in range(layers)]
    mlp = _pattern(c, "mlp_layer_types", "moe_layer_freq", {0: "dense", 1: "sparse"})
    if mlp is None:
        mlp = ["dense"] + ["sparse"] * (layers - 1)
    for key, values in (("layer_types", kinds), ("mlp_layer_types", mlp)):
        if len(values) != layers:
            raise InputError(f"{c.label}: {key}",
                             f"has {len(values)} entries for {layers} layers")
    bad = sorted(set(mlp) - {"dense", "sparse"})
    if bad:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"unknown MLP type(s) {bad}; known: dense, sparse")
    return kinds, [i for i, kind in enumerate(mlp) if kind == "sparse"]


def mimo_v2_flash(c: HFConfig) -> ModelSpec:
    """`MiMoV2FlashAttention`: q/k of `head_dim`, v of `v_head_dim`, q/k/v biased by
    `attention_bias`, o_proj never; sliding layers have twice the KV heads and per-head sinks
    (transformers' rule; the hub file states them as `swa_num_key_value_heads`,
    `add_swa_attention_sink_bias`, `swa_head_dim` …, which vLLM reads and this follows when
    present). The window is the hub's `sliding_window_size` (vLLM's), else `sliding_window`
    (transformers adds one to the former for its mask). `MiMoV2FlashMoE`: a router whose
    `e_score_correction_bias` is a buffer, experts of `moe_intermediate_size`, no shared
    expert; dense layers use `intermediate_size`."""
    layers = c.integer("num_hidden_layers")
    names, moe_layers = _mimo_v2_layers(c, layers)
    kinds = layer_types(HFConfig({"layer_types": names}, c.label)) or []
    heads, kv = c.integer("num_attention_heads"), c.integer("num_key_value_heads")
    head_dim, v_head_dim = c.integer("head_dim"), c.integer("v_head_dim")
    swa = LayerOverride(
        kinds=[LayerKind.SLIDING],
        heads=c.integer("swa_num_attention_heads", heads),
        kv_heads=c.integer("swa_num_key_value_heads", 2 * kv),
        head_dim=c.integer("swa_head_dim", head_dim),
        v_head_dim=c.integer("swa_v_head_dim", v_head_dim),
        sinks=c.flag("add_swa_attention_sink_bias", True),
    )
    moe = MoE(
        experts=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        layers=moe_layers,
    ) if moe_layers else None
    sliding: dict[str, Any] = {}
    if LayerKind.SLIDING in kinds:
        sliding["sliding_window"] = c.integer("sliding_window_size", c.integer("sliding_window"))
    bias = c.flag("attention_bias")
    fields = core(c, head_dim=head_dim, v_head_dim=v_head_dim, qkv_bias=bias, o_bias=False,
                  mlp_bias=False, sinks=c.flag("add_full_attention_sink_bias", False),
                  partial_rotary_factor=_rotary_fraction(c), layer_types=kinds, moe=moe,
                  overrides=[swa], **sliding)
    return decoder_model(c, Stack(**fields))


def _rotary_fraction(c: HFConfig) -> float:
    """`partial_rotary_factor` at the top level (the hub file), else in the full-attention
    entry of transformers' per-kind `rope_parameters` (0.334 by default)."""
    if c.has("partial_rotary_factor"):
        return c.number("partial_rotary_factor")
    rope = c.raw("rope_parameters")
    full = rope.get("full_attention") if isinstance(rope, dict) else None
    factor = full.get("partial_rotary_factor") if isinstance(full, dict) else None
    return float(factor) if isinstance(factor, int | float) and 0 < factor <= 1 else 1.0
