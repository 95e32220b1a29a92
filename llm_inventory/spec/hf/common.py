"""What the family modules share: the Llama-like core fields, layer kinds, RoPE caches, the
ModelSpec wrapper, extra-tensor helpers, and nested configs read over their class defaults.

A builder reads each key through `HFConfig` (`c.integer("num_experts")`): the file's value,
else the class default from `data/hf-defaults/` (see `defaults.py`), else the fallback the
call gives (a rule derived from other keys, or what a class without that option builds),
else an error naming the key.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig, reads
from llm_inventory.spec.hf.defaults import class_defaults, has_class_defaults
from llm_inventory.spec.hf.quant import from_quantization_config
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    LayerKind,
    ModelSpec,
    RopeScaling,
    Shard,
    Stack,
)

LAYER_TYPES = {
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
        if name not in LAYER_TYPES:
            raise InputError(f"{c.label}: layer_types", f"unknown layer type {name!r}; "
                             f"known: {', '.join(LAYER_TYPES)}")
        kinds.append(LAYER_TYPES[name])
    return kinds


def rope_scaling(c: HFConfig) -> RopeScaling | None:
    """The config's rope scaling (`rope_scaling`, or transformers 5's `rope_parameters`), when
    it sets a type other than plain RoPE or a factor."""
    rope = c.raw("rope_scaling") or c.raw("rope_parameters")
    if not isinstance(rope, dict):
        return None
    kind = str(rope.get("rope_type") or rope.get("type") or "default")
    factor = rope.get("factor")
    original = rope.get("original_max_position_embeddings")
    usable = isinstance(factor, int | float) and not isinstance(factor, bool) and factor > 0
    if kind == "default" and not usable:
        return None
    return RopeScaling(
        type=kind, factor=float(factor) if usable and factor is not None else None,
        original_max_positions=original if isinstance(original, int) and not isinstance(
            original, bool) and original > 0 else None)


def core(c: HFConfig, **overrides: Any) -> dict[str, Any]:
    """Fields every Llama-like decoder shares; `overrides` replace any of them.

    The fallbacks are what a class without the option builds: KV heads = heads, head_dim =
    hidden / heads, no attention or MLP biases, full rotary.
    """
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    fields: dict[str, Any] = {
        "layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        # Null is as many KV heads as heads (every class's backward-compatible reading).
        "kv_heads": present_or_default(c, "num_key_value_heads") or heads,
        "head_dim": c.integer("head_dim", hidden // heads),
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "tied_embeddings": c.flag("tie_word_embeddings"),
        "qkv_bias": c.flag("attention_bias", False),
        "o_bias": c.flag("attention_bias", False),
        "mlp_bias": c.flag("mlp_bias", False),
        "partial_rotary_factor": c.number("partial_rotary_factor", 1.0),
        "rope_scaling": rope_scaling(c),
    }
    fields.update(overrides)
    return fields


def split_heads(c: HFConfig, hidden: int, heads: int, *, hidden_key: str = "hidden_size",
                heads_key: str = "num_attention_heads") -> int:
    """hidden ÷ heads, the head width of a config that states none; a remainder is bad input."""
    if hidden % heads:
        raise InputError(f"{c.label}: {heads_key}",
                         f"{hidden_key} ({hidden}) is not a multiple of {heads} heads")
    return hidden // heads


def present_or_default(c: HFConfig, key: str, *, minimum: int = 1) -> int | None:
    """A key whose explicit null is not its class default (MistralConfig's sliding_window
    null switches sliding off; DeepSeek's n_shared_experts null means none): the file's
    value, null kept as None; the class default, if any, only when the key is absent."""
    if key in c.data or c.raw(key) is None:
        return c.opt_integer(key, minimum=minimum)
    return c.integer(key, minimum=minimum)


def all_sliding(c: HFConfig, window: int | None) -> dict[str, Any]:
    """Mistral / Mixtral / Phi-3: a set sliding window makes every layer sliding."""
    if window is None:
        return {}
    return {"sliding_window": window, "layer_types": [LayerKind.SLIDING]}


def _quantization_config(c: HFConfig) -> Any:
    """`quantization_config`, with a top-level `expert_dtype` moved into it as
    `DeepseekV4Config.__post_init__` moves it (V4.1 ships it inside)."""
    q = c.raw("quantization_config")
    expert_dtype = c.raw("expert_dtype")
    if isinstance(q, dict) and expert_dtype is not None and "expert_dtype" not in q:
        return {**q, "expert_dtype": expert_dtype}
    return q


def hf_model(c: HFConfig, family: Family, *, decoder: Stack | None = None,
             encoder: Encoder | None = None, max_context: int | None = None,
             notes: list[str] | None = None) -> ModelSpec:
    """Wrap stacks with the config's name, source, dtype and quantization."""
    dtype = c.dtype
    return ModelSpec(
        name=c.name or str(c.raw("model_type")),
        family=family,
        source=f"Hugging Face config ({c.raw('model_type')}): {c.label}",
        model_type=str(c.raw("model_type")) if c.raw("model_type") else None,
        dtype=dtype,
        decoder=decoder,
        encoder=encoder,
        quantization=from_quantization_config(_quantization_config(c), c.label, dtype),
        max_context=max_context,
        notes=notes or [],
    )


def decoder_model(
    c: HFConfig, stack: Stack, *, family: Family | None = None, notes: list[str] | None = None
) -> ModelSpec:
    """A decoder-only model; its context is the config's max_position_embeddings."""
    return hf_model(c, family or (Family.MOE if stack.moe else Family.DENSE), decoder=stack,
                    max_context=c.opt_integer("max_position_embeddings"), notes=notes)


def architecture(c: HFConfig) -> str | None:
    """The head class transformers builds (`architectures[0]`)."""
    names = c.str_list("architectures")
    return names[0] if names else None


def num_labels(c: HFConfig) -> int:
    """Classifier outputs: the length of `id2label` when given, else `num_labels`, else 2
    (PretrainedConfig's two labels)."""
    labels = c.data.get("id2label")
    if labels is not None:
        if not isinstance(labels, dict) or not labels:
            raise InputError(f"{c.label}: id2label", f"must be a non-empty mapping, got "
                             f"{labels!r}")
        return len(labels)
    return c.integer("num_labels", 2)


def extra(name: str, shape: list[int], *, linear: bool = False,
          shard: Shard = Shard.REPLICATED, layers: list[int] | None = None,
          component: Component = Component.OTHER) -> ExtraTensor:
    return ExtraTensor(name=name, shape=shape, component=component, shard=shard,
                       layers=layers, linear=linear)


def linear(name: str, out: int, inp: int, *, bias: bool = True,
           shard: Shard = Shard.REPLICATED,
           component: Component = Component.OTHER) -> list[ExtraTensor]:
    """A Linear layer's weight (and bias) as extra tensors; a row-split bias is replicated."""
    tensors = [extra(f"{name}.weight", [out, inp], linear=True, shard=shard,
                     component=component)]
    if bias:
        bias_shard = Shard.REPLICATED if shard is Shard.ROW else shard
        tensors.append(extra(f"{name}.bias", [out], shard=bias_shard, component=component))
    return tensors


def norm(name: str, width: int, *, bias: bool,
         component: Component = Component.OTHER) -> list[ExtraTensor]:
    tensors = [extra(f"{name}.weight", [width], component=component)]
    if bias:
        tensors.append(extra(f"{name}.bias", [width], component=component))
    return tensors


def over_defaults(data: dict[str, Any], model_type: str, label: str, name: str,
                  reads_as: str | None = None) -> HFConfig:
    """A nested mapping over its class's defaults. `reads_as` names the model type whose
    builder reads it (Qwen2-VL's text model is read by Qwen2's): that class's defaults
    stand in for keys the nested class does not have."""
    cls = class_defaults(model_type) if has_class_defaults(model_type) else None
    filled = {**(class_defaults(reads_as).filled if reads_as else {}),
              **(cls.filled if cls else {})}
    data = cls.aliased(data) if cls else data
    reads.note_class(label, model_type, cls.aliases if cls else {})
    return HFConfig({**(cls.defaults if cls else {}), **data}, label, name, defaults=filled)


def sub_config(c: HFConfig, key: str, model_type: str | None = None,
               reads_as: str | None = None) -> tuple[str, HFConfig]:
    """(model type, the nested config `key` over its class defaults).

    An absent sub-config is the composite class's default one (its `defaults[key]`); a
    present one is of its own `model_type`, else of that default's. `model_type`, when
    given, is the only class this composite builds for the key.
    """
    default = c.defaults.get(key) or {}
    if c.has(key):
        sub = c.sub(key)
        data = dict(sub.data)
        kind = model_type or sub.raw("model_type", default.get("model_type"))
    else:
        data = dict(default)
        kind = model_type or data.get("model_type")
    if not isinstance(kind, str):
        raise InputError(f"{c.label}: {key}: model_type",
                         f"must be a model type name, got {kind!r}")
    return kind, over_defaults(data, kind, f"{c.label}: {key}", c.name, reads_as)


def text_decoder(c: HFConfig, key: str = "text_config") -> tuple[Stack, HFConfig]:
    """The language model of a composite config, built by its own model type's builder."""
    from llm_inventory.spec.hf import registry

    kind, text = sub_config(c, key)
    if not registry.is_text_model(kind):
        raise InputError(f"{text.label}: model_type",
                         f"unsupported language model {kind!r} in a {c.raw('model_type')}"
                         " config")
    decoder = registry.builder(kind)(text).decoder
    assert decoder is not None
    return decoder, text


def vlm_model(c: HFConfig, decoder: Stack, encoder: Encoder, text: HFConfig,
              notes: list[str] | None = None) -> ModelSpec:
    """A vision-language model; its context is the language model's."""
    return hf_model(c, Family.VLM, decoder=decoder, encoder=encoder,
                    max_context=text.opt_integer("max_position_embeddings"), notes=notes)
