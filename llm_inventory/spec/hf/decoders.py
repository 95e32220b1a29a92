"""Decoder-only language models: dense, MoE and MLA families.

Each builder mirrors its transformers configuration class (defaults for absent keys) and
modelling code (which projections carry biases, which norms exist, which layers are MoE).
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import Builder, HFConfig
from llm_inventory.spec.hf.quant import from_quantization_config
from llm_inventory.spec.model import MLA, Family, LayerKind, ModelSpec, MoE, Stack

_LAYER_TYPES = {
    "full_attention": LayerKind.FULL,
    "sliding_attention": LayerKind.SLIDING,
    "chunked_attention": LayerKind.CHUNKED,
    "attention": LayerKind.FULL,
    "mamba": LayerKind.MAMBA,
    "cross_attention": LayerKind.CROSS,
}


def layer_types(c: HFConfig) -> list[LayerKind] | None:
    """The config's explicit `layer_types` list, when it has one."""
    names = c.str_list("layer_types")
    if names is None:
        return None
    kinds = []
    for name in names:
        if name not in _LAYER_TYPES:
            raise InputError(f"{c.label}: layer_types", f"unknown layer type {name!r}; "
                             f"known: {', '.join(_LAYER_TYPES)}")
        kinds.append(_LAYER_TYPES[name])
    return kinds


def rope_cache_positions(c: HFConfig, scaled: bool = True) -> list[int] | None:
    """Length of the cos/sin cache vLLM's rotary embedding precomputes for this config.

    Linear and dynamic-NTK scaling extend it to max_position_embeddings × factor; YaRN (and
    DeepSeek's YaRN) to original_max_position_embeddings × factor; Llama 3, LongRoPE,
    mRoPE and unscaled RoPE keep max_position_embeddings.
    """
    positions = c.opt_integer("max_position_embeddings")
    if positions is None:
        return None
    rope = c.raw("rope_scaling") or c.raw("rope_parameters")
    if not scaled or not isinstance(rope, dict):
        return [positions]
    kind = str(rope.get("rope_type") or rope.get("type") or "default")
    factor = rope.get("factor")
    if not isinstance(factor, int | float) or factor <= 0:
        return [positions]
    if kind in ("linear", "dynamic"):
        return [int(positions * factor)]
    if kind in ("yarn", "deepseek_yarn"):
        original = rope.get("original_max_position_embeddings")
        if isinstance(original, int) and original > 0:
            return [int(original * factor)]
    return [positions]


def core(c: HFConfig, **overrides: Any) -> dict[str, Any]:
    """Fields every Llama-like decoder shares, read with transformers' usual defaults."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    fields: dict[str, Any] = {
        "layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.integer("num_key_value_heads", heads),
        "head_dim": c.integer("head_dim", hidden // heads),
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "tied_embeddings": c.flag("tie_word_embeddings", False),
        "qkv_bias": c.flag("attention_bias", False),
        "o_bias": c.flag("attention_bias", False),
        "mlp_bias": c.flag("mlp_bias", False),
        "partial_rotary_factor": c.number("partial_rotary_factor", 1.0),
        "rope_cache_positions": rope_cache_positions(c),
    }
    fields.update(overrides)
    return fields


def decoder_model(
    c: HFConfig, stack: Stack, *, family: Family | None = None, notes: list[str] | None = None
) -> ModelSpec:
    """Wrap a decoder stack with the config's name, dtype, quantization and context."""
    dtype = c.dtype
    return ModelSpec(
        name=c.name or str(c.raw("model_type")),
        family=family or (Family.MOE if stack.moe else Family.DENSE),
        source=f"Hugging Face config ({c.raw('model_type')}): {c.label}",
        dtype=dtype,
        decoder=stack,
        quantization=from_quantization_config(c.raw("quantization_config"), c.label, dtype),
        max_context=c.opt_integer("max_position_embeddings"),
        notes=notes or [],
    )


def _all_sliding(c: HFConfig) -> dict[str, Any]:
    """Mistral / Mixtral / Phi-3: a set `sliding_window` makes every layer sliding."""
    window = c.opt_integer("sliding_window")
    if window is None:
        return {}
    return {"sliding_window": window, "layer_types": [LayerKind.SLIDING]}


def llama(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))


def granite(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c)))


def mistral(c: HFConfig) -> ModelSpec:
    # MistralConfig defaults sliding_window to 4096 when the key is absent.
    fields = core(c)
    if "sliding_window" not in c.data:
        fields.update(sliding_window=4096, layer_types=[LayerKind.SLIDING])
    else:
        fields.update(_all_sliding(c))
    return decoder_model(c, Stack(**fields))


def _qwen_layer_types(c: HFConfig) -> dict[str, Any]:
    """Qwen2/3: sliding only when use_sliding_window, from layer max_window_layers on."""
    explicit = layer_types(c)
    window = c.opt_integer("sliding_window", minimum=0)
    if explicit is not None:
        if LayerKind.SLIDING in explicit and window:
            return {"layer_types": explicit, "sliding_window": window}
        return {}
    if not c.flag("use_sliding_window", False) or not window:
        return {}
    start = c.integer("max_window_layers", 28, minimum=0)
    layers = c.integer("num_hidden_layers")
    kinds = [LayerKind.SLIDING if i >= start else LayerKind.FULL for i in range(layers)]
    if LayerKind.SLIDING not in kinds:
        return {}
    return {"layer_types": kinds, "sliding_window": window}


def qwen2(c: HFConfig) -> ModelSpec:
    # Qwen2 attention: q/k/v carry biases, o_proj does not.
    fields = core(c, qkv_bias=True, o_bias=False)
    fields.update(_qwen_layer_types(c))
    return decoder_model(c, Stack(**fields))


def qwen3(c: HFConfig) -> ModelSpec:
    fields = core(c, head_dim=c.integer("head_dim", 128), qk_norm="head",
                  o_bias=c.flag("attention_bias", False))
    fields.update(_qwen_layer_types(c))
    return decoder_model(c, Stack(**fields))


def _qwen_moe_layers(c: HFConfig) -> dict[str, Any]:
    """MoE iff not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0."""
    step = c.integer("decoder_sparse_step", 1)
    return {"every": step, "offset": step - 1, "dense_layers": c.int_list("mlp_only_layers") or []}


def qwen2_moe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts", 60),
        top_k=c.integer("num_experts_per_tok", 4),
        expert_intermediate_size=c.integer("moe_intermediate_size", 1408),
        shared_experts=1,
        shared_intermediate_size=c.integer("shared_expert_intermediate_size", 5632),
        shared_expert_gate=True,
        **_qwen_moe_layers(c),
    )
    fields = core(c, qkv_bias=c.flag("qkv_bias", True), o_bias=False, moe=moe)
    fields.update(_qwen_layer_types(c))
    return decoder_model(c, Stack(**fields))


def qwen3_moe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts", 128),
        top_k=c.integer("num_experts_per_tok", 8),
        expert_intermediate_size=c.integer("moe_intermediate_size", 768),
        **_qwen_moe_layers(c),
    )
    fields = core(c, qk_norm="head", moe=moe, o_bias=c.flag("attention_bias", False))
    fields.update(_qwen_layer_types(c))
    return decoder_model(c, Stack(**fields))


def mixtral(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_local_experts", 8),
        top_k=c.integer("num_experts_per_tok", 2),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    fields = core(c, moe=moe)
    fields.update(_all_sliding(c))
    return decoder_model(c, Stack(**fields))


def olmoe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts", 64),
        top_k=c.integer("num_experts_per_tok", 8),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    # OLMoE normalises q and k over all heads at once.
    return decoder_model(c, Stack(**core(c, qk_norm="full", moe=moe)))


def _deepseek(c: HFConfig, version: int) -> ModelSpec:
    heads = c.integer("num_attention_heads")
    mla = MLA(
        kv_lora_rank=c.integer("kv_lora_rank", 512),
        qk_rope_head_dim=c.integer("qk_rope_head_dim", 64),
        qk_nope_head_dim=c.integer("qk_nope_head_dim", 128),
        v_head_dim=c.integer("v_head_dim", 128),
        q_lora_rank=c.opt_integer("q_lora_rank") if "q_lora_rank" in c.data else 1536,
    )
    routed = c.opt_integer("n_routed_experts")
    moe = None
    notes = []
    if routed:
        top_k = c.opt_integer("num_experts_per_tok")
        if top_k is None:
            top_k = 6
            notes.append("num_experts_per_tok is not set; active parameters assume 6 experts "
                         "per token (DeepSeek-V2's routing)")
        shared = c.integer("n_shared_experts", 0, minimum=0)
        expert_size = c.integer("moe_intermediate_size")
        moe = MoE(
            experts=routed,
            top_k=top_k,
            expert_intermediate_size=expert_size,
            shared_experts=shared,
            shared_intermediate_size=expert_size if shared else 0,
            first_dense=c.integer("first_k_dense_replace", 0, minimum=0),
            every=c.integer("moe_layer_freq", 1),
        )
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=c.integer("hidden_size"),
        heads=heads,
        kv_heads=heads,
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
        v_head_dim=mla.v_head_dim,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", False),
        qkv_bias=c.flag("attention_bias", False),
        o_bias=c.flag("attention_bias", False),
        mla=mla,
        moe=moe,
    )
    if c.integer("num_nextn_predict_layers", 0, minimum=0):
        notes.append(
            f"the checkpoint also carries {c.raw('num_nextn_predict_layers')} multi-token-"
            "prediction layer(s), which transformers does not instantiate and this count "
            "leaves out"
        )
    return decoder_model(c, stack, notes=notes)


def deepseek_v2(c: HFConfig) -> ModelSpec:
    return _deepseek(c, 2)


def deepseek_v3(c: HFConfig) -> ModelSpec:
    return _deepseek(c, 3)


def gemma(c: HFConfig) -> ModelSpec:
    return decoder_model(c, Stack(**core(c, head_dim=c.integer("head_dim", 256),
                                          tied_embeddings=c.flag("tie_word_embeddings", True))))


def gemma2(c: HFConfig) -> ModelSpec:
    # Gemma 2: layers alternate sliding (even) and full (odd); four norms per layer.
    kinds = layer_types(c) or [LayerKind.SLIDING, LayerKind.FULL]
    stack = Stack(**core(
        c, head_dim=c.integer("head_dim", 256), norms_per_layer=4, layer_types=kinds,
        sliding_window=c.integer("sliding_window", 4096),
        tied_embeddings=c.flag("tie_word_embeddings", True),
    ))
    return decoder_model(c, stack)


def gemma3_text(c: HFConfig) -> ModelSpec:
    kinds = layer_types(c)
    if kinds is None:
        pattern = c.integer("sliding_window_pattern", 6)
        kinds = [LayerKind.SLIDING] * (pattern - 1) + [LayerKind.FULL]
    # Two rotary embeddings: the local (sliding) layers' unscaled one, the global layers'
    # scaled one (rope_scaling applies to global attention only).
    local, scaled = rope_cache_positions(c, scaled=False), rope_cache_positions(c)
    caches = [*local, *scaled] if local and scaled else None
    stack = Stack(**core(
        c, head_dim=c.integer("head_dim", 256), norms_per_layer=4, qk_norm="head",
        layer_types=kinds, sliding_window=c.integer("sliding_window", 4096),
        tied_embeddings=c.flag("tie_word_embeddings", True), rope_cache_positions=caches,
    ))
    return decoder_model(c, stack)


def gpt_oss(c: HFConfig) -> ModelSpec:
    kinds = layer_types(c) or [LayerKind.SLIDING, LayerKind.FULL]
    moe = MoE(
        experts=c.integer("num_local_experts", 128),
        top_k=c.integer("num_experts_per_tok", c.integer("experts_per_token", 4)),
        expert_intermediate_size=c.integer("intermediate_size"),
        expert_bias=True,
        router_bias=True,
    )
    bias = c.flag("attention_bias", True)
    stack = Stack(**core(
        c, head_dim=c.integer("head_dim", 64), qkv_bias=bias, o_bias=bias, sinks=True,
        layer_types=kinds, sliding_window=c.integer("sliding_window", 128), moe=moe,
    ))
    return decoder_model(c, stack)


def phi3(c: HFConfig) -> ModelSpec:
    fields = core(c)
    fields.update(_all_sliding(c))
    return decoder_model(c, Stack(**fields))


def phi(c: HFConfig) -> ModelSpec:
    """Phi-1/2: parallel attention and MLP under one LayerNorm, biases everywhere."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", heads),
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", False),
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        qk_norm="head" if c.flag("qk_layernorm", False) else "none",
        norm="layer",
        norms_per_layer=1,
        lm_head_bias=True,
        partial_rotary_factor=c.number("partial_rotary_factor", 0.5),
    )
    return decoder_model(c, stack)


def falcon(c: HFConfig) -> ModelSpec:
    """Falcon: fused QKV (multi-query, grouped with new_decoder_architecture, or full),
    LayerNorms with bias, a plain GELU MLP, optionally parallel attention."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    new_arch = c.flag("new_decoder_architecture", False)
    if new_arch:
        kv = c.integer("num_kv_heads", heads)
    elif c.flag("multi_query", True):
        kv = 1
    else:
        kv = heads
    parallel = c.flag("parallel_attn", True)
    if new_arch:
        norms = c.integer("num_ln_in_parallel_attn", 2)
    else:
        norms = 1 if parallel else 2
    bias = c.flag("bias", False)
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        intermediate_size=c.integer("ffn_hidden_size", 4 * hidden),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", True),
        mlp="plain",
        mlp_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        norm="layer",
        norms_per_layer=norms,
        rope=not c.flag("alibi", False),
    )
    return decoder_model(c, stack)


BUILDERS: dict[str, Builder] = {
    "llama": llama,
    "granite": granite,
    "mistral": mistral,
    "qwen2": qwen2,
    "qwen3": qwen3,
    "qwen2_moe": qwen2_moe,
    "qwen3_moe": qwen3_moe,
    "mixtral": mixtral,
    "olmoe": olmoe,
    "deepseek_v2": deepseek_v2,
    "deepseek_v3": deepseek_v3,
    "gemma": gemma,
    "gemma2": gemma2,
    "gemma3_text": gemma3_text,
    "gpt_oss": gpt_oss,
    "phi3": phi3,
    "phi": phi,
    "falcon": falcon,
}
