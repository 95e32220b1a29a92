"""ModernBERT (transformers `models/modernbert`): an encoder-only model.

Token embeddings with a LayerNorm, then pre-norm layers: a fused Wqkv projection and Wo
(biases when `attention_bias`), a GLU MLP (`Wi` of 2 × intermediate, `Wo`; biases when
`mlp_bias`), LayerNorms with a bias only when `norm_bias` (`attn_norm` is an Identity on
layer 0, `ModernBertEncoderLayer`), a final LayerNorm. Layers alternate local and global
attention by `layer_types` (else every `global_attn_every_n_layers`-th layer global, default
3, `ModernBertConfig.__post_init__`); a local layer attends `local_attention` positions
around each token (a half-window of local_attention / 2 each side), with its own RoPE base.
Heads follow the class in `architectures`: a prediction head (dense + LayerNorm) and, for
masked LM, a decoder tied to the token embeddings with a bias when `decoder_bias`; the
classification heads add a classifier.
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    architecture,
    hf_model,
    layer_types,
    linear,
    norm,
    num_labels,
    split_heads,
)
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    LayerKind,
    ModelSpec,
    Stack,
)

_HEADED = {"ForMaskedLM", "ForSequenceClassification", "ForTokenClassification",
           "ForQuestionAnswering", "ForMultipleChoice"}


def _head(c: HFConfig, suffix: str, hidden: int) -> list[ExtraTensor]:
    """The prediction head and what the class adds on top of it."""
    head = Component.LM_HEAD if suffix == "ForMaskedLM" else Component.OTHER
    bias = c.flag("norm_bias")
    tensors = [*linear("head.dense", hidden, hidden, bias=c.flag("classifier_bias"),
                       component=head), *norm("head.norm", hidden, bias=bias, component=head)]
    if suffix == "ForMaskedLM":
        if c.flag("decoder_bias"):
            tensors.append(ExtraTensor(name="decoder.bias", shape=[c.integer("vocab_size")],
                                       component=head))
        if not c.flag("tie_word_embeddings"):
            tensors.append(ExtraTensor(name="decoder.weight",
                                       shape=[c.integer("vocab_size"), hidden],
                                       component=head, linear=True))
    elif suffix == "ForMultipleChoice":
        tensors += linear("classifier", 1, hidden, component=Component.OTHER)
    else:
        tensors += linear("classifier", num_labels(c), hidden, component=Component.OTHER)
    return tensors


def modernbert(c: HFConfig) -> ModelSpec:
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    layers = c.integer("num_hidden_layers")
    split_heads(c, hidden, heads)
    every = c.integer("global_attn_every_n_layers", 3)
    kinds = layer_types(c) or [LayerKind.SLIDING if i % every else LayerKind.FULL
                               for i in range(layers)]
    arch = architecture(c) or "ModernBertModel"
    suffix = arch.removeprefix("ModernBert")
    notes = []
    extra: list[ExtraTensor] = []
    if suffix in _HEADED:
        extra = _head(c, suffix, hidden)
    elif suffix != "Model":
        notes.append(f"architecture {arch} is not supported; counted as the bare "
                     "ModernBertModel")
    bias = c.flag("norm_bias")
    # Layer 0's attn_norm is an Identity: one norm there, two on every later layer.
    extra += [ExtraTensor(name=f"layers.{{i}}.attn_norm.{part}", shape=[hidden],
                          component=Component.NORMS, layers=list(range(1, layers)))
              for part in (("weight", "bias") if bias else ("weight",))]
    stack = Stack(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=True,
        lm_head=False,
        embedding_norm=True,
        qkv_bias=c.flag("attention_bias"),
        o_bias=c.flag("attention_bias"),
        mlp_bias=c.flag("mlp_bias"),
        norm="layer" if bias else "rms",
        norms_per_layer=1,
        layer_types=kinds,
        sliding_window=max(1, c.integer("local_attention") // 2)
        if LayerKind.SLIDING in kinds else None,
        extra=extra,
    )
    return hf_model(c, Family.ENCODER, encoder=Encoder(kind="text", stack=stack),
                    max_context=c.integer("max_position_embeddings"), notes=notes)
