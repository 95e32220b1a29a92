"""BERT, RoBERTa and XLM-RoBERTa (transformers `models/bert`, `roberta`, `xlm_roberta`).

BERT-style encoders (embedding, reranking and classification models) are one text encoder
stack: word, position and token-type embeddings with a LayerNorm, post-norm layers (two
LayerNorms each, biases on every projection, a plain GELU MLP), and whatever the head class
in `architectures` adds: the bare `…Model` keeps a pooler (Linear(hidden, hidden)); a
masked-LM head adds a transform (Linear + LayerNorm), an output bias and, unless tied, its
own output matrix and a second bias; classification heads add their classifiers. Which heads
keep the pooler follows transformers 5: the bare model, next-sentence, pre-training,
multiple-choice and BERT sequence-classification heads.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import architecture, hf_model, linear, num_labels, split_heads
from llm_inventory.spec.model import Component, Encoder, ExtraTensor, Family, ModelSpec, Stack

# transformers' class-name prefix of each BERT-like model type.
_PREFIX = {"bert": "Bert", "roberta": "Roberta", "xlm-roberta": "XLMRoberta"}


def _mlm_head(c: HFConfig, hidden: int) -> list[ExtraTensor]:
    """The masked-LM transform (Linear + LayerNorm); its decoder and bias are the lm_head."""
    head = Component.LM_HEAD
    tensors = [
        *linear("lm_head.dense", hidden, hidden, component=head),
        ExtraTensor(name="lm_head.layer_norm.weight", shape=[hidden], component=head),
        ExtraTensor(name="lm_head.layer_norm.bias", shape=[hidden], component=head),
    ]
    if not c.flag("tie_word_embeddings"):
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
        labels = num_labels(c)
        if bert:
            return {"pooler": True,
                    "extra": linear("classifier", labels, hidden, component=other)}
        # RoBERTa's classification head: dense + tanh + out_proj over the first token.
        return {"extra": linear("classifier.dense", hidden, hidden, component=other)
                + linear("classifier.out_proj", labels, hidden, component=other)}
    if suffix == "ForTokenClassification":
        return {"extra": linear("classifier", num_labels(c), hidden, component=other)}
    if suffix == "ForQuestionAnswering":
        return {"extra": linear("qa_outputs", num_labels(c), hidden, component=other)}
    if suffix == "ForMultipleChoice":
        return {"pooler": True, "extra": linear("classifier", 1, hidden, component=other)}
    if bert and suffix == "ForNextSentencePrediction":
        return {"pooler": True,
                "extra": linear("cls.seq_relationship", 2, hidden, component=other)}
    if bert and suffix == "ForPreTraining":
        return {"pooler": True, "lm_head": True, "lm_head_bias": True,
                "extra": _mlm_head(c, hidden)
                + linear("cls.seq_relationship", 2, hidden, component=other)}
    return None


def bert_like(c: HFConfig) -> ModelSpec:
    """BERT, RoBERTa and XLM-RoBERTa: one text encoder stack plus the architecture's head."""
    model_type = str(c.raw("model_type"))
    prefix = _PREFIX[model_type]
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    split_heads(c, hidden, heads)
    positions = c.integer("max_position_embeddings")
    notes: list[str] = []
    arch = architecture(c)
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
    cross = c.flag("add_cross_attention")
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        position_embeddings=positions,
        token_types=c.integer("type_vocab_size"),
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
    offset = 0 if model_type == "bert" else c.integer("pad_token_id", minimum=0) + 1
    return hf_model(c, Family.ENCODER, encoder=Encoder(kind="text", stack=stack),
                    max_context=max(1, positions - offset), notes=notes)
