"""Parakeet's FastConformer encoder (transformers 5.25 `models/parakeet`,
`ParakeetEncoder`), as Nemotron-H Omni's audio tower uses it."""

from __future__ import annotations

import math

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import extra, norm
from llm_inventory.spec.model import ExtraTensor, Stack


def parakeet_encoder(a: HFConfig) -> Stack:
    """`ParakeetEncoder`: a subsampling stem of log2(`subsampling_factor`) stride-2 Conv2d
    stages (a full conv from one channel, then depthwise and pointwise pairs, all with
    bias) and a Linear from the channels × the mel bins left to hidden; then conformer
    blocks, each two feed-forward modules (Linear, activation, Linear; biases as
    `attention_bias`), multi-head attention with relative positions (q/k/v/o biases as
    `attention_bias`, a bias-free relative key projection, content and position biases per
    head), a convolution module (pointwise to twice the width, depthwise of
    `conv_kernel_size`, BatchNorm, pointwise back; biases as `convolution_bias`) and five
    LayerNorms. Its sinusoidal positions hold no parameter."""
    hidden, heads = a.integer("hidden_size"), a.integer("num_attention_heads")
    layers, inner = a.integer("num_hidden_layers"), a.integer("intermediate_size")
    bias, conv_bias = a.flag("attention_bias"), a.flag("convolution_bias")
    kernel, factor = a.integer("conv_kernel_size"), a.integer("subsampling_factor")
    channels = a.integer("subsampling_conv_channels")
    stem_kernel, stride = (a.integer("subsampling_conv_kernel_size"),
                           a.integer("subsampling_conv_stride"))
    stages = int(math.log2(factor))  # as ParakeetEncoderSubsamplingConv2D counts them
    left = a.integer("num_mel_bins") // stride ** stages
    if not left:
        raise InputError(f"{a.label}: num_mel_bins", f"must leave a bin after {stages} "
                         f"stride-{stride} stages")
    stem = [extra("subsampling.conv0.weight", [channels, 1, stem_kernel, stem_kernel]),
            extra("subsampling.conv0.bias", [channels])]
    for i in range(1, stages):
        stem += [extra(f"subsampling.depthwise{i}.weight",
                       [channels, 1, stem_kernel, stem_kernel]),
                 extra(f"subsampling.depthwise{i}.bias", [channels]),
                 extra(f"subsampling.pointwise{i}.weight", [channels, channels, 1, 1]),
                 extra(f"subsampling.pointwise{i}.bias", [channels])]
    stem += [extra("subsampling.linear.weight", [hidden, channels * left], linear=True),
             extra("subsampling.linear.bias", [hidden])]
    every = list(range(layers))
    head_dim = a.integer("head_dim", hidden // heads)

    def each(name: str, shape: list[int], *, linear: bool = False) -> list[ExtraTensor]:
        return [extra(name, shape, linear=linear, layers=every)]

    block = (each("feed_forward2.linear1.weight", [inner, hidden], linear=True)
             + each("feed_forward2.linear2.weight", [hidden, inner], linear=True)
             + each("self_attn.relative_k_proj.weight", [heads * head_dim, hidden], linear=True)
             + each("self_attn.bias_u", [heads, head_dim])
             + each("self_attn.bias_v", [heads, head_dim])
             + each("conv.pointwise_conv1.weight", [2 * hidden, hidden, 1])
             + each("conv.depthwise_conv.weight", [hidden, 1, kernel])
             + each("conv.pointwise_conv2.weight", [hidden, hidden, 1])
             + each("conv.norm.weight", [hidden]) + each("conv.norm.bias", [hidden]))
    if bias:
        block += (each("feed_forward2.linear1.bias", [inner])
                  + each("feed_forward2.linear2.bias", [hidden]))
    if conv_bias:
        block += (each("conv.pointwise_conv1.bias", [2 * hidden])
                  + each("conv.depthwise_conv.bias", [hidden])
                  + each("conv.pointwise_conv2.bias", [hidden]))
    for name in ("norm_conv", "norm_feed_forward2", "norm_out"):
        block += [t.model_copy(update={"layers": every})
                  for t in norm(name, hidden, bias=True)]
    return Stack(layers=layers, hidden_size=hidden, heads=heads, head_dim=head_dim,
                 intermediate_size=inner, mlp="plain", mlp_bias=bias, qkv_bias=bias,
                 o_bias=bias, norm="layer", final_norm=False, vocab_size=0, lm_head=False,
                 extra=stem + block)
