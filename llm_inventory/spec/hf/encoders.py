"""Encoder-only and encoder-decoder models: BERT, RoBERTa, XLM-RoBERTa and Whisper.

BERT-style encoders (embedding, reranking and classification models) are one text encoder
stack: word, position and token-type embeddings with a LayerNorm, post-norm layers (two
LayerNorms each, biases on every projection, a plain GELU MLP), and whatever the head class
in `architectures` adds: the bare `…Model` keeps a pooler (Linear(hidden, hidden)); a
masked-LM head adds a transform (Linear + LayerNorm), an output bias and, unless tied, its
own output matrix and a second bias; classification heads add their classifiers. Which heads
keep the pooler follows transformers 5: the bare model, next-sentence, pre-training,
multiple-choice and BERT sequence-classification heads.

Whisper is a conv stem + encoder over 1,500 audio positions (30 s), and a decoder whose every
layer attends to itself and to the encoder; k_proj carries no bias; the output projection is
tied to the decoder's token embedding unless `tie_word_embeddings` is false.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import Builder, HFConfig
from llm_inventory.spec.hf.quant import from_quantization_config
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    Media,
    ModelSpec,
    Stack,
)

# transformers' class-name prefix of each BERT-like model type.
_PREFIX = {"bert": "Bert", "roberta": "Roberta", "xlm-roberta": "XLMRoberta"}


def _model(
    c: HFConfig,
    family: Family,
    encoder: Encoder,
    decoder: Stack | None = None,
    *,
    max_context: int | None = None,
    notes: list[str] | None = None,
) -> ModelSpec:
    dtype = c.dtype
    return ModelSpec(
        name=c.name or str(c.raw("model_type")),
        family=family,
        source=f"Hugging Face config ({c.raw('model_type')}): {c.label}",
        dtype=dtype,
        decoder=decoder,
        encoder=encoder,
        quantization=from_quantization_config(c.raw("quantization_config"), c.label, dtype),
        max_context=max_context,
        notes=notes or [],
    )


def _architecture(c: HFConfig) -> str | None:
    names = c.str_list("architectures")
    return names[0] if names else None


def _num_labels(c: HFConfig) -> int:
    """Classifier outputs: the length of `id2label` when given, else `num_labels`, else 2."""
    labels = c.data.get("id2label")
    if labels is not None:
        if not isinstance(labels, dict) or not labels:
            raise InputError(f"{c.label}: id2label", f"must be a non-empty mapping, got "
                             f"{labels!r}")
        return len(labels)
    return c.integer("num_labels", 2)


def _linear(name: str, out: int, inp: int, component: Component) -> list[ExtraTensor]:
    """A Linear layer with bias, as extra tensors."""
    return [
        ExtraTensor(name=f"{name}.weight", shape=[out, inp], component=component, linear=True),
        ExtraTensor(name=f"{name}.bias", shape=[out], component=component),
    ]


def _mlm_head(c: HFConfig, hidden: int) -> list[ExtraTensor]:
    """The masked-LM transform (Linear + LayerNorm); its decoder and bias are the lm_head."""
    head = Component.LM_HEAD
    tensors = [
        *_linear("lm_head.dense", hidden, hidden, head),
        ExtraTensor(name="lm_head.layer_norm.weight", shape=[hidden], component=head),
        ExtraTensor(name="lm_head.layer_norm.bias", shape=[hidden], component=head),
    ]
    if not c.flag("tie_word_embeddings", True):
        # Untied, transformers also stops sharing the decoder's bias with the head's bias.
        vocab = c.integer("vocab_size")
        tensors.append(ExtraTensor(name="lm_head.decoder.bias", shape=[vocab], component=head))
    return tensors


def _head(c: HFConfig, prefix: str, suffix: str, hidden: int) -> dict[str, Any] | None:
    """Stack fields a head class adds (pooler, lm_head, classifier tensors); None if unknown."""
    other = Component.OTHER
    bert = prefix == "Bert"
    if suffix == "Model":
        return {"pooler": True}
    if suffix == "ForMaskedLM":
        return {"lm_head": True, "lm_head_bias": True, "extra": _mlm_head(c, hidden)}
    if suffix == "ForSequenceClassification":
        labels = _num_labels(c)
        if bert:
            return {"pooler": True, "extra": _linear("classifier", labels, hidden, other)}
        # RoBERTa's classification head: dense + tanh + out_proj over the first token.
        return {"extra": _linear("classifier.dense", hidden, hidden, other)
                + _linear("classifier.out_proj", labels, hidden, other)}
    if suffix == "ForTokenClassification":
        return {"extra": _linear("classifier", _num_labels(c), hidden, other)}
    if suffix == "ForQuestionAnswering":
        return {"extra": _linear("qa_outputs", _num_labels(c), hidden, other)}
    if suffix == "ForMultipleChoice":
        return {"pooler": True, "extra": _linear("classifier", 1, hidden, other)}
    if bert and suffix == "ForNextSentencePrediction":
        return {"pooler": True, "extra": _linear("cls.seq_relationship", 2, hidden, other)}
    if bert and suffix == "ForPreTraining":
        return {"pooler": True, "lm_head": True, "lm_head_bias": True,
                "extra": _mlm_head(c, hidden) + _linear("cls.seq_relationship", 2, hidden, other)}
    return None


def _bert_like(c: HFConfig) -> ModelSpec:
    """BERT, RoBERTa and XLM-RoBERTa: one text encoder stack plus the architecture's head."""
    model_type = str(c.raw("model_type"))
    prefix = _PREFIX[model_type]
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    if hidden % heads:
        raise InputError(f"{c.label}: num_attention_heads",
                         f"hidden_size ({hidden}) is not a multiple of {heads} heads")
    positions = c.integer("max_position_embeddings", 512)
    notes: list[str] = []
    arch = _architecture(c)
    head = None
    # transformers builds the class named, whichever of the three families it belongs to.
    for family in _PREFIX.values():
        if arch and arch.startswith(family):
            head = _head(c, family, arch[len(family):], hidden)
            break
    if head is None:
        head = {"pooler": True}
        bare = f"{prefix}Model"
        notes.append(f"architecture {arch} is not supported; counted as the bare {bare} "
                     "(encoder and pooler), without that head's own tensors"
                     if arch else f"no architectures given; counted as the bare {bare}")
    cross = c.flag("add_cross_attention", False)
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", True),
        position_embeddings=positions,
        token_types=c.integer("type_vocab_size", 2),
        embedding_norm=True,
        norm="layer",
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        # A decoder-mode BERT with add_cross_attention has a third attention block and norm.
        cross_attention=cross,
        norms_per_layer=3 if cross else 2,
        final_norm=False,
        rope=False,
        lm_head=head.pop("lm_head", False),
        **head,
    )
    # RoBERTa numbers positions from pad_token_id + 1, so that many rows are never a token's.
    offset = 0 if model_type == "bert" else c.integer("pad_token_id", 1, minimum=0) + 1
    return _model(
        c, Family.ENCODER, Encoder(kind="text", stack=stack),
        max_context=max(1, positions - offset), notes=notes,
    )


def _whisper_stack(c: HFConfig, side: str, **fields: Any) -> Stack:
    """One side of Whisper: pre-norm layers, LayerNorms, biased projections except k_proj."""
    hidden = c.integer("d_model")
    heads = c.integer(f"{side}_attention_heads")
    if hidden % heads:
        raise InputError(f"{c.label}: {side}_attention_heads",
                         f"d_model ({hidden}) is not a multiple of {heads} heads")
    return Stack(
        layers=c.integer(f"{side}_layers"),
        hidden_size=hidden,
        heads=heads,
        intermediate_size=c.integer(f"{side}_ffn_dim"),
        norm="layer",
        mlp="plain",
        mlp_bias=True,
        qkv_bias=True,
        k_bias=False,
        o_bias=True,
        final_norm=True,
        rope=False,
        **fields,
    )


def whisper(c: HFConfig) -> ModelSpec:
    """Whisper: conv stem + audio encoder, and a cross-attending text decoder."""
    hidden = c.integer("d_model")
    mels = c.integer("num_mel_bins", 80)
    source = c.integer("max_source_positions", 1500)
    target = c.integer("max_target_positions", 448)
    enc = Component.ENCODER
    # Two Conv1d (kernel 3): mel bins → d_model, then d_model → d_model at stride 2, which
    # halves the 3,000 mel frames of 30 s to the 1,500 encoder positions.
    stem = [
        ExtraTensor(name="conv1.weight", shape=[hidden, mels, 3], component=enc),
        ExtraTensor(name="conv1.bias", shape=[hidden], component=enc),
        ExtraTensor(name="conv2.weight", shape=[hidden, hidden, 3], component=enc),
        ExtraTensor(name="conv2.bias", shape=[hidden], component=enc),
    ]
    arch = _architecture(c)
    notes: list[str] = []
    family = Family.ENCODER_DECODER
    decoder: Stack | None = None
    if arch == "WhisperForAudioClassification":
        # Encoder only: a projector and a classifier over the pooled encoder output.
        proj = c.integer("classifier_proj_size", 256)
        stem += _linear("projector", proj, hidden, Component.OTHER)
        stem += _linear("classifier", _num_labels(c), proj, Component.OTHER)
        if c.flag("use_weighted_layer_sum", False):
            stem.append(ExtraTensor(name="layer_weights", shape=[c.integer("encoder_layers") + 1],
                                    component=Component.OTHER))
        family = Family.ENCODER
    else:
        if arch not in (None, "WhisperModel", "WhisperForConditionalGeneration"):
            notes.append(f"architecture {arch} is not supported; counted as the bare "
                         "WhisperModel (encoder and decoder, no output projection)")
        decoder = _whisper_stack(
            c, "decoder",
            vocab_size=c.integer("vocab_size"),
            tied_embeddings=c.flag("tie_word_embeddings", True),
            lm_head=arch == "WhisperForConditionalGeneration",
            position_embeddings=target,
            cross_attention=True,
            norms_per_layer=3,  # self-attention, cross-attention, MLP
        )
    encoder_stack = _whisper_stack(c, "encoder", position_embeddings=source, lm_head=False,
                                   extra=stem)
    encoder = Encoder(kind="audio", stack=encoder_stack, media=Media(tokens_per_item=source))
    return _model(c, family, encoder, decoder,
                  max_context=target if decoder is not None else source, notes=notes)


BUILDERS: dict[str, Builder] = {
    "bert": _bert_like,
    "roberta": _bert_like,
    "xlm-roberta": _bert_like,
    "whisper": whisper,
}
