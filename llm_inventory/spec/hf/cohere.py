"""Command-R and Command-A (transformers `models/cohere`, `cohere2`).

Attention and MLP run in parallel from one input norm (`CohereDecoderLayer`), a LayerNorm
without bias (`CohereLayerNorm`: a weight only, so it counts as an RMS norm's); the output
head is tied to the embedding by default. Command-R+ adds q/k LayerNorms over (heads,
head_dim) when `use_qk_norm`. Command-A (cohere2) interleaves sliding-window and global
layers (`layer_types`, else every `sliding_window_pattern`-th layer global) and applies the
rotary embedding on its sliding layers only (`Cohere2Attention.forward`), with head_dim fixed
to hidden / heads (`Cohere2Config.__post_init__`). Command-A MoE (cohere2_moe) routes the
MLP of its "sparse" layers to experts.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types
from llm_inventory.spec.model import LayerKind, LayerOverride, ModelSpec, MoE, Stack


def cohere(c: HFConfig) -> ModelSpec:
    """Command-R: parallel attention and MLP under one bias-free LayerNorm."""
    qk_norm = "full" if c.flag("use_qk_norm") else "none"
    return decoder_model(c, Stack(**core(c, norms_per_layer=1, qk_norm=qk_norm)))


def cohere2(c: HFConfig) -> ModelSpec:
    """Command-A: Command-R's layers, three sliding-window layers to one global."""
    hidden = c.integer("hidden_size")
    fields = core(c, norms_per_layer=1, head_dim=hidden // c.integer("num_attention_heads"))
    every = c.integer("sliding_window_pattern", 4)
    kinds = layer_types(c) or [LayerKind.SLIDING if (i + 1) % every else LayerKind.FULL
                               for i in range(fields["layers"])]
    return decoder_model(c, Stack(
        **fields, layer_types=kinds, sliding_window=c.integer("sliding_window"),
        overrides=[LayerOverride(kinds=[LayerKind.FULL], rope=False)]))


def cohere2_moe(c: HFConfig) -> ModelSpec:
    """Command-A MoE (transformers `models/cohere2_moe`): Command-A's parallel layer under
    one norm (`Cohere2MoeDecoderLayer`: RMS when `rms_norm_eps` is set, else the bias-free
    LayerNorm, a weight either way), q/k/v/o with `attention_bias`, head_dim as the file
    gives it (`Cohere2MoeAttention`: `getattr(config, "head_dim", …)`). Per
    `mlp_layer_types`, a "dense" layer's MLP is `prefix_dense_intermediate_size` wide
    (`intermediate_size` when null) and a "sparse" layer's `Cohere2MoeSparseMoeBlock` holds a
    bias-free router, `num_experts` gated experts of `intermediate_size`
    (`MixtralExperts`) and, with `num_shared_experts`, one shared MLP of
    `intermediate_size × num_shared_experts`. Both lists default from
    `first_k_dense_replace` in `Cohere2MoeConfig.__post_init__`. Rotary on sliding layers,
    and on dense prefix layers when `prefix_dense_sliding_window_pattern` is 1."""
    layers = c.integer("num_hidden_layers")
    first = c.integer("first_k_dense_replace", 0, minimum=0)
    names = c.str_list("mlp_layer_types")
    if names is None:
        names = ["dense" if i < first else "sparse" for i in range(layers)]
    if len(names) != layers or set(names) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"must be {layers} entries of \"dense\" or \"sparse\"")
    dense = [i for i, name in enumerate(names) if name == "dense"]
    prefix = c.integer("prefix_dense_sliding_window_pattern")
    kinds = layer_types(c)
    if kinds is None:
        every = c.integer("sliding_window_pattern")
        # the prefix's pattern counts from its first layer, the rest's from theirs
        kinds = [LayerKind.SLIDING if (i + 1) % prefix else LayerKind.FULL
                 for i in range(first)] + [
                 LayerKind.SLIDING if (i + 1) % every else LayerKind.FULL
                 for i in range(layers - first)]
    else:
        c.superseded("sliding_window_pattern")  # only derives layer_types when unset
    width = c.integer("intermediate_size")
    shared = c.integer("num_shared_experts", minimum=0)
    moe = MoE(experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=width, shared_experts=1 if shared else 0,
              shared_intermediate_size=width * shared,
              layers=[i for i in range(layers) if i not in dense])
    overrides = [LayerOverride(kinds=[LayerKind.FULL], rope=False)]
    if dense and prefix == 1:
        overrides.append(LayerOverride(layers=dense, rope=True))
    prefix_width = c.opt_integer("prefix_dense_intermediate_size")
    if dense and prefix_width is not None:
        overrides.append(LayerOverride(layers=dense, intermediate_size=prefix_width))
    bias = c.flag("attention_bias")
    hidden = c.integer("hidden_size")
    fields = core(c, norms_per_layer=1, qkv_bias=bias, o_bias=bias,
                  head_dim=c.integer("head_dim", hidden // c.integer("num_attention_heads")),
                  moe=moe)
    return decoder_model(c, Stack(**fields, layer_types=kinds,
                                  sliding_window=c.integer("sliding_window"),
                                  overrides=overrides))
