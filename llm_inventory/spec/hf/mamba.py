"""Mamba and Mamba-2 (transformers `models/mamba`, `models/mamba2`): recurrent mixers only,
one norm per layer, no MLP and no attention."""

from __future__ import annotations

import math

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default
from llm_inventory.spec.model import SSM, LayerKind, ModelSpec, Stack


def dt_rank(c: HFConfig, key: str, hidden: int) -> int:
    """`"auto"` (the default) is ceil(hidden / 16), as transformers resolves it."""
    value = c.raw(key, "auto")
    if value == "auto":
        return math.ceil(hidden / 16)
    return c.integer(key)


def _recurrent_model(c: HFConfig, ssm: SSM) -> ModelSpec:
    """A stack of one norm and one recurrent mixer per layer, nothing else."""
    stack = Stack(
        layers=c.integer("num_hidden_layers"),
        hidden_size=c.integer("hidden_size"),
        intermediate_size=0,
        mlp="none",
        norms_per_layer=1,
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        layer_types=[LayerKind.MAMBA],
        rope=False,
        ssm=ssm,
    )
    return decoder_model(c, stack)


def mamba(c: HFConfig) -> ModelSpec:
    """Mamba-1: one norm and one mixer per layer, no MLP, no attention."""
    hidden = c.integer("hidden_size")
    expand = c.integer("expand")
    return _recurrent_model(
        c,
        SSM(
            version=1,
            d_state=c.integer("state_size"),
            d_conv=c.integer("conv_kernel"),
            expand=c.integer("intermediate_size", expand * hidden) // hidden,
            dt_rank=dt_rank(c, "time_step_rank", hidden),
            conv_bias=c.flag("use_conv_bias"),
            proj_bias=c.flag("use_bias"),
        ),
    )


def mamba2(c: HFConfig) -> ModelSpec:
    """Mamba-2: multi-head SSM with grouped B/C, a gated norm, no MLP."""
    hidden = c.integer("hidden_size")
    expand = c.integer("expand")
    head_dim = c.integer("head_dim")
    return _recurrent_model(
        c,
        SSM(
            version=2,
            d_state=c.integer("state_size"),
            d_conv=c.integer("conv_kernel"),
            expand=expand,
            n_groups=c.integer("n_groups"),
            # Mamba2Config's 128 when absent; a null (as the importer always read it) is
            # every head_dim-wide slice of the expanded width.
            heads=present_or_default(c, "num_heads") or expand * hidden // head_dim,
            head_dim=head_dim,
            conv_bias=c.flag("use_conv_bias"),
            proj_bias=c.flag("use_bias"),
        ),
    )
