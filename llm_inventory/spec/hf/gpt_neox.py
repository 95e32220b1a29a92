"""GPT-NeoX and GPT-J (transformers `models/gpt_neox`, `gptj`).

GPT-NeoX (Pythia, RedPajama-INCITE): a fused q/k/v projection and its output projection with
biases (`attention_bias`), two LayerNorms per layer (parallel or sequential residual alike),
a plain GELU MLP with biases, rotary positions on `partial_rotary_factor` of each head
(`rotary_pct` in older files, default 0.25; `GPTNeoXConfig.__post_init__`), an untied output
head (`embed_out`).

GPT-J: attention and MLP in parallel from one LayerNorm, q/k/v/out projections without bias,
an MLP of `n_inner` (default 4 × hidden) with biases, rotary positions on `rotary_dim` dims
of each head, and an untied output head with a bias.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default, split_heads
from llm_inventory.spec.model import ModelSpec, Stack


def _rotary_fraction(c: HFConfig) -> float:
    """partial_rotary_factor, wherever the file keeps it (rope_parameters, the key itself, or
    the older rotary_pct); the class's default otherwise."""
    rope = c.data.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
        key, value = "rope_parameters: partial_rotary_factor", rope["partial_rotary_factor"]
    elif c.has("partial_rotary_factor") or not c.has("rotary_pct"):
        key, value = "partial_rotary_factor", c.number("partial_rotary_factor")
    else:
        key, value = "rotary_pct", c.number("rotary_pct")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InputError(f"{c.label}: {key}", f"must be a fraction in (0, 1], got {value!r}")
    return float(value)


def gpt_neox(c: HFConfig) -> ModelSpec:
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    split_heads(c, hidden, heads)
    bias = c.flag("attention_bias")
    return decoder_model(c, Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=hidden,
        heads=heads,
        head_dim=hidden // heads,
        intermediate_size=c.integer("intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        mlp="plain",
        mlp_bias=True,
        qkv_bias=bias,
        o_bias=bias,
        norm="layer",
        partial_rotary_factor=_rotary_fraction(c),
    ))


def gptj(c: HFConfig) -> ModelSpec:
    hidden = c.integer("n_embd")
    heads = c.integer("n_head")
    head_dim = split_heads(c, hidden, heads, hidden_key="n_embd", heads_key="n_head")
    # An explicit null rotates the whole head (`GPTJAttention`: rotary_dim is not None).
    rotary = present_or_default(c, "rotary_dim")
    if rotary is not None and rotary > head_dim:
        raise InputError(f"{c.label}: rotary_dim",
                         f"must be at most the head dimension ({head_dim}), got {rotary}")
    spec = decoder_model(c, Stack(
        layers=c.integer("n_layer"),
        hidden_size=hidden,
        heads=heads,
        head_dim=head_dim,
        intermediate_size=c.integer("n_inner", 4 * hidden),
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        mlp="plain",
        mlp_bias=True,
        norm="layer",
        norms_per_layer=1,
        lm_head_bias=True,
        partial_rotary_factor=(rotary or head_dim) / head_dim,
    ))
    return spec.model_copy(update={"max_context": c.integer("n_positions")})
