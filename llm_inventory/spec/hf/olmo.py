"""OLMo family (transformers `models/olmo2`, `olmo3`, `olmoe`).

OLMo 2 and 3 normalise q and k over all heads at once (`q_norm` of heads × head_dim, `k_norm`
of KV heads × head_dim) and put their two RMS norms after attention and after the MLP.
OLMo 3 adds sliding-window layers (`layer_types`; by default three sliding, then one full),
each kind with its own rotary embedding.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model, layer_types, present_or_default
from llm_inventory.spec.model import LayerKind, LinearAttention, ModelSpec, MoE, Stack


def olmoe(c: HFConfig) -> ModelSpec:
    moe = MoE(
        experts=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    # OLMoE normalises q and k over all heads at once.
    return decoder_model(c, Stack(**core(c, qk_norm="full", moe=moe)))


def olmo2(c: HFConfig) -> ModelSpec:
    """OLMo 2: q/k norms over the whole projection width, post-norm layers."""
    return decoder_model(c, Stack(**core(c, qk_norm="full")))


def olmo3(c: HFConfig) -> ModelSpec:
    """OLMo 3: OLMo 2's layers, sliding-window layers by `layer_types` (Olmo3Config's
    `__post_init__`: sliding unless (i + 1) % 4 == 0)."""
    fields = core(c, qk_norm="full")
    kinds = layer_types(c) or [LayerKind.SLIDING if (i + 1) % 4 else LayerKind.FULL
                               for i in range(fields["layers"])]
    window = c.integer("sliding_window") if LayerKind.SLIDING in kinds else None
    return decoder_model(c, Stack(**fields, layer_types=kinds, sliding_window=window))


def _hybrid_kinds(c: HFConfig, layers: int) -> list[str]:
    """`layer_types`, else Gated DeltaNet with every fourth layer (i % 4 == 3) full, the
    last layer full when none is (`OlmoHybridConfig.__post_init__`)."""
    names = c.str_list("layer_types")
    if names is None:
        names = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(layers)]
        if "full_attention" not in names:
            names[-1] = "full_attention"
    if len(names) != layers or set(names) - {"full_attention", "linear_attention"}:
        raise InputError(f"{c.label}: layer_types", f"must be {layers} entries of "
                         "\"full_attention\" or \"linear_attention\"")
    return [LayerKind.FULL if n == "full_attention" else LayerKind.GDN for n in names]


def olmo_hybrid(c: HFConfig) -> ModelSpec:
    """OLMo Hybrid (transformers `models/olmo_hybrid`): OLMo 3 attention layers
    (`OlmoHybridAttention`: q/k RMS norms over all heads, `attention_bias`, head_dim =
    hidden / heads: the class deletes `head_dim`, post-norms after attention and MLP) and
    Gated DeltaNet layers (`OlmoHybridGatedDeltaNet`: q/k/v/g/a/b projections, a bias-free
    depthwise conv over q, k and v, A_log and dt_bias per value head, a gated RMS norm of
    the value head width, o_proj; two norms per layer); a gated MLP after each. Linear head
    counts default to the attention heads, the key head width to ⌊0.75 × hidden / key
    heads⌋ and the value head width to twice that (`__post_init__`)."""
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    key_heads = c.integer("linear_num_key_heads", heads)
    key_dim = c.integer("linear_key_head_dim", int(0.75 * hidden / key_heads))
    fields = core(c, qk_norm="full", head_dim=hidden // heads, mlp_bias=False,
                  kv_heads=present_or_default(c, "num_key_value_heads") or heads)
    return decoder_model(c, Stack(
        **fields, layer_types=_hybrid_kinds(c, fields["layers"]),
        linear_attention=LinearAttention(
            key_heads=key_heads,
            value_heads=c.integer("linear_num_value_heads", heads),
            key_head_dim=key_dim,
            value_head_dim=c.integer("linear_value_head_dim", 2 * key_dim),
            conv_kernel=c.integer("linear_conv_kernel_dim"),
            conv_dtype=c.dtype)))
