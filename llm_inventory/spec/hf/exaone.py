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
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, MoE, Stack


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
    return decoder_model(c, _stack(c))


def _stack(c: HFConfig, moe: MoE | None = None) -> Stack:
    fields = core(c, qk_norm="head", moe=moe)
    window = present_or_default(c, "sliding_window")
    if window is None:
        kinds = [LayerKind.FULL]
    else:
        kinds = layer_types(c) or _pattern(c, fields["layers"])
        if c.has("layer_types"):
            c.superseded("sliding_window_pattern")  # Exaone4Config derives only without
        fields.update(sliding_window=window,
                      overrides=[LayerOverride(kinds=[LayerKind.FULL], rope=False)])
    return Stack(**fields, layer_types=kinds)


def _moe_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types` ("dense" or "sparse" per layer), else the first
    `first_k_dense_replace` layers dense (`ExaoneMoeConfig.__post_init__`)."""
    names = c.str_list("mlp_layer_types")
    if names is None:
        first = c.integer("first_k_dense_replace", minimum=0)
        return list(range(first, layers))
    c.superseded("first_k_dense_replace")  # only derives mlp_layer_types when it is unset
    if len(names) != layers or set(names) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"must be {layers} entries of \"dense\" or \"sparse\"")
    return [i for i, name in enumerate(names) if name == "sparse"]


def exaone_moe(c: HFConfig) -> ModelSpec:
    """K-EXAONE (transformers `models/exaone_moe`): EXAONE 4's attention and norms
    (`ExaoneMoeAttention` is `Exaone4Attention`); each "sparse" layer of `mlp_layer_types`
    runs `ExaoneMoeSparseMoEBlock` (DeepSeek-V3's: a bias-free router whose
    `e_score_correction_bias` is a buffer, `num_experts` gated experts of
    `moe_intermediate_size`, one shared MLP of `moe_intermediate_size × num_shared_experts`),
    the others the dense `ExaoneMoeMLP` at `intermediate_size`. `mtp.*` checkpoint weights
    are ignored on load (`_keys_to_ignore_on_load_unexpected`)."""
    expert = c.integer("moe_intermediate_size")
    shared = c.integer("num_shared_experts", minimum=0)
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_experts=1 if shared else 0,
        shared_intermediate_size=expert * shared,
        layers=_moe_layers(c, c.integer("num_hidden_layers")),
    )
    return decoder_model(c, _stack(c, moe))


def exaone4_5(c: HFConfig) -> ModelSpec:
    """EXAONE 4.5 (transformers `models/exaone4_5`): Qwen2.5-VL's vision tower and merger
    (`Exaone4_5_VisionModel`) with grouped-query attention in its blocks
    (`Exaone4_5_VisionAttention`: a fused qkv of heads + 2 × `num_key_value_heads` head
    widths, with bias) and an EXAONE 4 language model (`text_config`, read as `exaone4`:
    `Exaone4_5_Config.__post_init__` maps the first release's `exaone4_5_text` to it).
    Images follow `Qwen2VLImageProcessor` (models/auto/image_processing_auto.py)."""
    from llm_inventory.spec.hf.common import sub_config, vlm_model
    from llm_inventory.spec.hf.qwen_vl import qwen2_5_vl_tower

    _, v = sub_config(c, "vision_config", "exaone4_5_vision")
    encoder = qwen2_5_vl_tower(v)
    assert encoder.stack is not None
    encoder = encoder.model_copy(update={"stack": encoder.stack.model_copy(update={
        "kv_heads": v.integer("num_key_value_heads")})})
    _, text = sub_config(c, "text_config", "exaone4")
    decoder = exaone4(text).decoder
    assert decoder is not None
    # The composite's own tie_word_embeddings decides (PreTrainedModel.tie_weights reads
    # the top-level config).
    decoder = decoder.model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings")})
    return vlm_model(c, decoder, encoder, text)
