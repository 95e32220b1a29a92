"""Whisper (transformers `models/whisper`): a conv stem and audio encoder over 1,500
positions (30 s), and a decoder whose every layer attends to itself and to the encoder;
k_proj carries no bias; the output projection is tied to the decoder's token embedding
unless `tie_word_embeddings` is false.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import architecture, hf_model, linear, num_labels, split_heads
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    Media,
    ModelSpec,
    Stack,
)


def _whisper_stack(c: HFConfig, side: str, **fields: Any) -> Stack:
    """One side of Whisper: pre-norm layers, LayerNorms, biased projections except k_proj."""
    hidden = c.integer("d_model")
    heads = c.integer(f"{side}_attention_heads")
    split_heads(c, hidden, heads, hidden_key="d_model", heads_key=f"{side}_attention_heads")
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
    mels = c.integer("num_mel_bins")
    source = c.integer("max_source_positions")
    target = c.integer("max_target_positions")
    enc = Component.ENCODER
    # Two Conv1d (kernel 3): mel bins → d_model, then d_model → d_model at stride 2, which
    # halves the 3,000 mel frames of 30 s to the 1,500 encoder positions.
    stem = [
        ExtraTensor(name="conv1.weight", shape=[hidden, mels, 3], component=enc),
        ExtraTensor(name="conv1.bias", shape=[hidden], component=enc),
        ExtraTensor(name="conv2.weight", shape=[hidden, hidden, 3], component=enc),
        ExtraTensor(name="conv2.bias", shape=[hidden], component=enc),
    ]
    arch = architecture(c)
    notes: list[str] = []
    family = Family.ENCODER_DECODER
    decoder: Stack | None = None
    if arch == "WhisperForAudioClassification":
        # Encoder only: a projector and a classifier over the pooled encoder output.
        proj = c.integer("classifier_proj_size")
        stem += linear("projector", proj, hidden, component=Component.OTHER)
        stem += linear("classifier", num_labels(c), proj, component=Component.OTHER)
        if c.flag("use_weighted_layer_sum"):
            layers = c.integer("encoder_layers")
            stem.append(ExtraTensor(name="layer_weights", shape=[layers + 1],
                                    component=Component.OTHER))
        family = Family.ENCODER
    else:
        # Only WhisperForAudioClassification builds these.
        c.superseded("classifier_proj_size", "use_weighted_layer_sum")
        if arch not in (None, "WhisperModel", "WhisperForConditionalGeneration"):
            notes.append(f"architecture {arch} is not supported; counted as the bare "
                         "WhisperModel (encoder and decoder, no output projection)")
        decoder = _whisper_stack(
            c, "decoder",
            vocab_size=c.integer("vocab_size"),
            tied_embeddings=c.flag("tie_word_embeddings"),
            lm_head=arch == "WhisperForConditionalGeneration",
            position_embeddings=target,
            cross_attention=True,
            norms_per_layer=3,  # self-attention, cross-attention, MLP
        )
    encoder_stack = _whisper_stack(c, "encoder", position_embeddings=source, lm_head=False,
                                   extra=stem)
    encoder = Encoder(kind="audio", stack=encoder_stack, media=Media(tokens_per_item=source))
    return hf_model(c, family, decoder=decoder, encoder=encoder,
                    max_context=target if decoder is not None else source, notes=notes)
