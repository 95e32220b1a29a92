"""Hunyuan MoE: transformers' `models/hunyuan_v1_moe` (Hunyuan-A13B) and the checkpoints'
own `model_type: hunyuan` code (`modeling_hunyuan.py` of Tencent's Hunyuan-A13B repository),
which adds a mixed shared MLP switch and cross-layer attention (CLA)."""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def _uniform(c: HFConfig, key: str, *, minimum: int = 1) -> int:
    """A key that may be one integer or one per layer; this tool models one value."""
    value = c.raw(key)
    if isinstance(value, list):
        if not value:
            raise InputError(f"{c.label}: {key}", "must not be an empty list")
        layers = c.integer("num_hidden_layers")
        if len(value) != layers:
            raise InputError(f"{c.label}: {key}",
                             f"has {len(value)} entries for {layers} layers")
        shown = sorted(set(map(repr, value)))  # reprs: the entries may be of any JSON type
        if len(shown) != 1:
            raise InputError(f"{c.label}: {key}",
                             f"differs between layers ({', '.join(shown)}); only one value "
                             "for every layer is supported")
        return HFConfig({key: value[0]}, c.label).integer(key, minimum=minimum)
    return c.integer(key, minimum=minimum)


def hunyuan_v1_moe(c: HFConfig) -> ModelSpec:
    """`HunYuanMoEV1DecoderLayer`: every MLP is `HunYuanMoEV1Moe`: a bias-free router `wg`,
    `num_experts` experts and one shared MLP, all of `intermediate_size`. Attention has q/k/v/o
    biased by `attention_bias` and per-head q/k norms (`query_layernorm`, `key_layernorm`);
    head_dim unset is hidden / heads."""
    experts = _uniform(c, "num_experts")
    size = c.integer("intermediate_size")
    moe = MoE(experts=experts, top_k=_uniform(c, "moe_topk"), expert_intermediate_size=size,
              shared_experts=1, shared_intermediate_size=size)
    bias = c.flag("attention_bias")
    return decoder_model(c, Stack(**core(c, qkv_bias=bias, o_bias=bias, mlp_bias=False,
                                         qk_norm="head", moe=moe)))


def _cla(c: HFConfig, layers: int) -> dict[str, Any]:
    """With `use_cla`, a layer whose index is not a multiple of `cla_share_factor` computes
    no keys or values and reuses the last ones computed (`HunYuanAttention.attention_type`,
    'cross'): the `cla` kind."""
    if not c.flag("use_cla"):
        return {}
    factor = c.integer("cla_share_factor")
    if factor == 1:
        return {}
    return {"layer_types": ["full" if i % factor == 0 else "cla" for i in range(layers)]}


def hunyuan(c: HFConfig) -> ModelSpec:
    """The checkpoint's `HunYuanDecoderLayer`: `HunYuanMoE` when num_experts > 1 (a bias-free
    router, experts of `intermediate_size`, and with `use_mixed_mlp_moe` a shared MLP of
    intermediate_size × num_shared_expert[0]), else `HunYuanMLP`. `HunYuanAttention`: head_dim
    is hidden / heads (the file's attention_head_dim is not read), q/k/v/o biased by
    `attention_bias`, per-head q/k norms with `use_qk_norm`, and CLA (`_cla`). The repository's
    code has no MLA, so `use_mla` is refused."""
    if c.flag("use_mla"):
        raise InputError(f"{c.label}: use_mla", "Hunyuan's MLA attention is not supported; "
                         "only use_mla false is")
    layers = c.integer("num_hidden_layers")
    size = c.integer("intermediate_size")
    experts = _uniform(c, "num_experts")
    moe = None
    if experts > 1:
        shared = _uniform(c, "num_shared_expert", minimum=0) if c.flag(
            "use_mixed_mlp_moe") else 0
        moe = MoE(experts=experts, top_k=_uniform(c, "moe_topk"),
                  expert_intermediate_size=size, shared_experts=1 if shared else 0,
                  shared_intermediate_size=size * shared)
    notes: list[str] = []
    moe_size = c.raw("moe_intermediate_size")
    # Not read by the model's code, only noted: reprs, since its entries may be any JSON.
    sizes = {repr(v) for v in (moe_size if isinstance(moe_size, list) else [moe_size])} - {
        "None"}
    if moe is not None and sizes and sizes != {repr(size)}:
        notes.append(f"moe_intermediate_size [{', '.join(sorted(sizes))}] differs from "
                     f"intermediate_size "
                     f"{size}: the checkpoint's modelling code builds experts of "
                     "intermediate_size, which these counts follow; vLLM's hunyuan_v1.py reads "
                     "moe_intermediate_size")
    bias = c.flag("attention_bias")
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    fields = core(c, head_dim=hidden // heads, qkv_bias=bias, o_bias=bias,
                  mlp_bias=False, qk_norm="head" if c.flag("use_qk_norm") else "none",
                  moe=moe, **_cla(c, layers))
    return decoder_model(c, Stack(**fields), notes=notes)
