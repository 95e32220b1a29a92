"""Kimi Linear (transformers `models/kimi_linear`): Kimi Delta Attention in most layers,
multi-head latent attention without rotary positions in the rest, DeepSeek-style MoE."""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import hf_model
from llm_inventory.spec.model import (
    MLA,
    Family,
    LayerKind,
    LinearAttention,
    ModelSpec,
    MoE,
    Stack,
)


def _linear_config(c: HFConfig) -> dict[str, Any]:
    """The checkpoint's `linear_attn_config` sub-dict (empty when absent)."""
    value = c.raw("linear_attn_config") or {}
    if not isinstance(value, dict):
        raise InputError(f"{c.label}: linear_attn_config", "must be a mapping")
    return value


def _linear_int(c: HFConfig, key: str, own: str) -> int:
    """A KDA shape: linear_attn_config's `key` where the checkpoint puts it, else `own`."""
    value = _linear_config(c).get(key)
    if value is None:
        return c.integer(own)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{c.label}: linear_attn_config.{key}",
                         f"must be a positive integer, got {value!r}")
    return value


def _layer_types(c: HFConfig, layers: int) -> list[str]:
    """`layer_types`, else linear_attn_config's 1-indexed full_attn_layers and kda_layers,
    else full attention on every layer i > 0 with i % 4 == 0 (`KimiLinearConfig`)."""
    kinds = {"full_attention": LayerKind.MLA, "linear_attention": LayerKind.KDA}
    names = c.str_list("layer_types")
    linear = _linear_config(c)
    if names is None and "full_attn_layers" in linear and "kda_layers" in linear:
        found: list[str | None] = [None] * layers
        for key, name in (("full_attn_layers", "full_attention"),
                          ("kda_layers", "linear_attention")):
            for number in linear[key]:
                if not isinstance(number, int) or not 1 <= number <= layers:
                    raise InputError(f"{c.label}: linear_attn_config.{key}",
                                     f"layer numbers run from 1 to {layers}, got {number!r}")
                found[number - 1] = name
        if None in found:
            raise InputError(f"{c.label}: linear_attn_config",
                             f"layer {found.index(None) + 1} is in neither list")
        names = [str(n) for n in found]
    if names is None:
        names = ["full_attention" if i and i % 4 == 0 else "linear_attention"
                 for i in range(layers)]
    if len(names) != layers or set(names) - set(kinds):
        raise InputError(f"{c.label}: layer_types", f"needs {layers} entries of "
                         "full_attention or linear_attention")
    return [kinds[n] for n in names]


def _moe_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types` ("sparse" layers), else every layer from first_k_dense_replace (1)."""
    names = c.str_list("mlp_layer_types")
    if names is None:
        first = c.integer("first_k_dense_replace", 1, minimum=0)
        return list(range(first, layers))
    if len(names) != layers or set(names) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"needs {layers} entries of dense or sparse")
    return [i for i, name in enumerate(names) if name == "sparse"]


def kimi_linear(c: HFConfig) -> ModelSpec:
    """Kimi Linear: KDA layers (`KimiLinearDeltaAttention`; head count, head dim and conv
    kernel from linear_attn_config where the checkpoint puts them), MLA layers with no
    rotary positions (`KimiLinearAttention`), MoE layers of gated experts with shared
    experts (`KimiLinearMoE`), a dense gated MLP before them."""
    layers = c.integer("num_hidden_layers")
    heads = c.integer("num_attention_heads")
    bias = c.flag("attention_bias")
    dtype = c.dtype
    stack = Stack(
        layers=layers, hidden_size=c.integer("hidden_size"), heads=heads,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"), qkv_bias=bias, o_bias=bias, rope=False,
        layer_types=_layer_types(c, layers),
        mla=MLA(kv_lora_rank=c.integer("kv_lora_rank"),
                qk_rope_head_dim=c.integer("qk_rope_head_dim"),
                qk_nope_head_dim=c.integer("qk_nope_head_dim"),
                v_head_dim=c.integer("v_head_dim"),
                q_lora_rank=c.opt_integer("q_lora_rank")),
        linear_attention=LinearAttention(
            key_heads=_linear_int(c, "num_heads", "linear_num_heads"),
            key_head_dim=_linear_int(c, "head_dim", "linear_head_dim"),
            conv_kernel=_linear_int(c, "short_conv_kernel_size", "linear_conv_kernel_dim"),
            # KDA's recurrent state is fp32 whatever the model dtype (vLLM
            # `MambaStateDtypeCalculator.kda_state_dtype`; transformers casts it too).
            state_dtype="fp32", conv_dtype=dtype,
        ),
        moe=MoE(
            experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_token"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            shared_experts=c.integer("num_shared_experts", minimum=0),
            shared_intermediate_size=c.integer("moe_intermediate_size"),
            layers=_moe_layers(c, layers),
        ),
    )
    # max_position_embeddings is the class's name for model_max_length (attribute_map).
    context = c.opt_integer("max_position_embeddings") or c.integer("model_max_length")
    return hf_model(c, Family.MOE, decoder=stack, max_context=context)
