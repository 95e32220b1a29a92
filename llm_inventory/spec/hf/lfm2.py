"""LFM2 (transformers `models/lfm2`): gated short convolutions in most layers, grouped-query
attention with per-head q/k norms in the rest, a gated MLP after each."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, extra, rope_scaling
from llm_inventory.spec.model import (
    Component,
    LayerKind,
    ModelSpec,
    MoE,
    Shard,
    ShortConv,
    Stack,
)


def _layer_types(c: HFConfig, layers: int) -> list[str]:
    """`layer_types` ("conv" or attention), else attention on `full_attn_idxs` (every layer
    when unset, `Lfm2Config.__post_init__`) and short convolutions elsewhere."""
    names = c.str_list("layer_types")
    if names is None:
        full = c.int_list("full_attn_idxs")
        attention = set(range(layers) if full is None else full)
        return [LayerKind.FULL if i in attention else LayerKind.SHORT_CONV
                for i in range(layers)]
    if len(names) != layers:
        raise InputError(f"{c.label}: layer_types",
                         f"has {len(names)} entries for {layers} layers")
    # `Lfm2DecoderLayer`: any type but "conv" is an attention layer.
    return [LayerKind.SHORT_CONV if name == "conv" else LayerKind.FULL for name in names]


def _mlp_width(c: HFConfig) -> int:
    """`Lfm2MLP`: with block_auto_adjust_ff_dim, ⌊2 × intermediate ÷ 3⌋, then × the multiplier
    rounded up to block_multiple_of when a multiplier is set."""
    width = c.integer("intermediate_size")
    if c.flag("block_auto_adjust_ff_dim"):
        width = int(2 * width / 3)
        # An explicit null skips the multiplier and the rounding (the class default is 1.0).
        key = "block_ffn_dim_multiplier"
        if (c.data[key] if key in c.data else c.defaults.get(key)) is not None:
            width = int(c.number("block_ffn_dim_multiplier") * width)
            multiple = c.integer("block_multiple_of")
            width = multiple * -(-width // multiple)
    return width


def lfm2(c: HFConfig) -> ModelSpec:
    """LFM2: `Lfm2ShortConv` (in_proj to 3 × hidden, a depthwise conv of conv_L_cache taps,
    out_proj) or `Lfm2Attention` (no biases, q/k layernorms per head) in each layer, then
    the gated `Lfm2MLP` (w1, w3, w2); an operator and an FFN norm per layer and a final
    norm (`embedding_norm`)."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads), intermediate_size=_mlp_width(c),
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qk_norm="head", rope_scaling=rope_scaling(c),
        layer_types=_layer_types(c, layers),
        # vLLM keeps the conv window in the model dtype (`short_conv_state_dtype`).
        short_conv=ShortConv(kernel=c.integer("conv_L_cache"), bias=c.flag("conv_bias"),
                             state_dtype=c.dtype),
    )
    return decoder_model(c, stack)


def lfm2_moe(c: HFConfig) -> ModelSpec:
    """LFM2-MoE (transformers `models/lfm2_moe`): LFM2's short-convolution and attention
    operators (`Lfm2MoeShortConv`, `Lfm2MoeAttention`: no biases but the conv's
    `conv_bias`, q/k norms per head), chosen by `layer_types` ("conv" or attention; the
    class has no fallback, `Lfm2MoeModel.forward` indexes it). The first `num_dense_layers`
    run the gated `Lfm2MoeMLP` at `intermediate_size` as written (no ff-dim adjustment);
    the rest `Lfm2MoeSparseMoeBlock`: a bias-free router Linear(hidden, num_experts)
    (`Lfm2MoeTopKRouter`; its `expert_bias` is a buffer, not a weight) and
    `num_experts` gated experts of `moe_intermediate_size` (`Lfm2MoeExperts`), no shared
    expert. A final `embedding_norm`."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    names = c.str_list("layer_types")
    if names is None:
        raise InputError(f"{c.label}: layer_types",
                         "is required: a list of \"conv\" or \"full_attention\" per layer")
    if len(names) != layers:
        raise InputError(f"{c.label}: layer_types",
                         f"has {len(names)} entries for {layers} layers")
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        first_dense=c.integer("num_dense_layers", minimum=0),
    )
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads),
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qk_norm="head", rope_scaling=rope_scaling(c),
        layer_types=[LayerKind.SHORT_CONV if name == "conv" else LayerKind.FULL
                     for name in names],
        short_conv=ShortConv(kernel=c.integer("conv_L_cache"), bias=c.flag("conv_bias"),
                             state_dtype=c.dtype),
        moe=moe,
    )
    return decoder_model(c, stack)


_LFM3_KINDS = {"conv": LayerKind.SHORT_CONV, "sliding_attention": LayerKind.SLIDING,
               "full_attention": LayerKind.FULL}


def _lfm3_kinds(c: HFConfig, layers: int) -> list[str]:
    """`layer_types`, else full attention where i % 4 == 2, sliding where i % 4 == 0 past
    the first layer, short convolutions elsewhere (`Lfm3Config.__post_init__`)."""
    names = c.str_list("layer_types")
    if names is None:
        names = ["full_attention" if i % 4 == 2 else
                 "sliding_attention" if i % 4 == 0 and i > 0 else "conv" for i in range(layers)]
    if len(names) != layers or set(names) - set(_LFM3_KINDS):
        raise InputError(f"{c.label}: layer_types", f"must be {layers} entries of "
                         + ", ".join(f"\"{k}\"" for k in _LFM3_KINDS))
    return [_LFM3_KINDS[name] for name in names]


def lfm3(c: HFConfig) -> ModelSpec:
    """LFM3 (transformers `models/lfm3`): LFM2's short convolutions (`conv_L_cache` taps)
    beside sliding-window and full attention layers (`Lfm3Attention`, Qwen3's: q/k norms
    per head, every projection with `attention_bias`, head_dim as given), and with
    `use_attention_gate` a per-head sigmoid gate `g_proj` (hidden → heads, no bias) on each
    attention layer; the gated `Lfm3MLP` at `intermediate_size` as written. With
    `use_sandwich_norm` each layer adds norms after its operator and its MLP
    (`Lfm3DecoderLayer`: four norms). A final `embedding_norm`."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    kinds = _lfm3_kinds(c, layers)
    bias = c.flag("attention_bias")
    attention = [i for i, k in enumerate(kinds) if k != LayerKind.SHORT_CONV]
    gates = [extra("self_attn.g_proj.weight", [heads, hidden], linear=True,
                   shard=Shard.COLUMN, layers=attention, component=Component.ATTENTION)
             ] if c.flag("use_attention_gate") and attention else []
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=c.integer("num_key_value_heads"),
        head_dim=c.integer("head_dim", hidden // heads),
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings"),
        qk_norm="head", qkv_bias=bias, o_bias=bias, rope_scaling=rope_scaling(c),
        norms_per_layer=4 if c.flag("use_sandwich_norm") else 2,
        layer_types=kinds,
        sliding_window=c.integer("sliding_window") if LayerKind.SLIDING in kinds else None,
        short_conv=ShortConv(kernel=c.integer("conv_L_cache"), bias=c.flag("conv_bias"),
                             state_dtype=c.dtype),
        extra=gates,
    )
    return decoder_model(c, stack)
