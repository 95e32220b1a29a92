"""LFM2 (transformers `models/lfm2`): gated short convolutions in most layers, grouped-query
attention with per-head q/k norms in the rest, a gated MLP after each."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, rope_scaling
from llm_inventory.spec.model import LayerKind, ModelSpec, ShortConv, Stack


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
