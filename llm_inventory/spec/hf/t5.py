"""T5 (transformers `models/t5`): an encoder-decoder over one shared token table.

Both stacks: pre-norm blocks with T5LayerNorm (a weight only), attention projections without
bias of heads × d_kv (which need not equal d_model), a learned relative-position bias
(buckets × heads) in the first block's self-attention only, a ReLU MLP (`wi`, `wo`) or, for
`feed_forward_proj` "gated-…", a gated one (`wi_0`, `wi_1`, `wo`), no biases, and a final norm.
The decoder adds cross-attention to every block (three norms), and attends without RoPE.

The output head: T5Config's `__post_init__` (transformers 5) forces `tie_word_embeddings`
to True whatever the file says (a false one only turns off the output rescaling), so the
model built from a config ties `lm_head` to `shared`. T5 v1.1 and FLAN-T5 checkpoints say
false and store their own `lm_head.weight`; `from_pretrained` then finds both tensors with
different values and does not tie them (`PreTrainedModel.tie_weights`). This count follows
the checkpoint: an untied head when the file says false, as the loaded model holds it.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import architecture, hf_model
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Family,
    Media,
    ModelSpec,
    Stack,
)

# Encoder positions one request is sized at when the config gives no `n_positions` (older
# T5 files do): the 512-token inputs T5 was pre-trained on. The cross-attention cache holds
# K and V for each of them.
_INPUT_TOKENS = 512


def _stack(c: HFConfig, layers: int, **fields: object) -> Stack:
    hidden = c.integer("d_model")
    heads = c.integer("num_heads")
    proj = str(c.raw("feed_forward_proj"))
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise InputError(f"{c.label}: feed_forward_proj",
                         f"must be ACT or gated-ACT (relu, gated-gelu …), got {proj!r}")
    bias = ExtraTensor(
        name="layers.{i}.self_attn.relative_attention_bias.weight",
        shape=[c.integer("relative_attention_num_buckets"), heads],
        component=Component.ATTENTION,
        layers=[0])
    return Stack(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        head_dim=c.integer("d_kv"),
        intermediate_size=c.integer("d_ff"),
        mlp="gated" if parts[0] == "gated" and len(parts) == 2 else "plain",
        rope=False,
        extra=[bias],
        **fields,
    )


def t5(c: HFConfig) -> ModelSpec:
    """T5: encoder and decoder stacks; T5EncoderModel keeps the encoder alone."""
    vocab = c.integer("vocab_size")
    arch = architecture(c) or "T5ForConditionalGeneration"
    encoder_layers = c.integer("num_layers")
    notes: list[str] = []
    tied = c.flag("tie_word_embeddings")
    if arch == "T5EncoderModel":
        stack = _stack(c, encoder_layers, vocab_size=vocab, tied_embeddings=True,
                       lm_head=False)
        return hf_model(c, Family.ENCODER, encoder=Encoder(kind="text", stack=stack),
                        notes=notes)
    if arch not in ("T5ForConditionalGeneration", "T5Model"):
        notes.append(f"architecture {arch} is not supported; counted as "
                     "T5ForConditionalGeneration")
        arch = "T5ForConditionalGeneration"
    head = arch == "T5ForConditionalGeneration"
    if head and not tied:
        notes.append(
            "tie_word_embeddings is false: the checkpoint stores its own lm_head.weight "
            f"({vocab:,} × {c.integer('d_model'):,}), counted here as from_pretrained loads it; "
            "transformers 5 builds the model from this config with the head tied to shared "
            "(T5Config forces tie_word_embeddings), a count without it")
    decoder = _stack(c, c.integer("num_decoder_layers", encoder_layers),
                     vocab_size=vocab, tied_embeddings=tied or not head, lm_head=head,
                     cross_attention=True, norms_per_layer=3)
    encoder = _stack(c, encoder_layers, lm_head=False)
    inputs = c.integer("n_positions", _INPUT_TOKENS)
    notes.append(f"cross-attention state is sized for a {inputs:,}-token encoder input "
                 "(n_positions, else T5's pre-training length); relative positions set no "
                 "hard limit")
    return hf_model(c, Family.ENCODER_DECODER, decoder=decoder,
                    encoder=Encoder(kind="text", stack=encoder,
                                    media=Media(tokens_per_item=inputs)), notes=notes)
