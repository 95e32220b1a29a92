"""Apertus (transformers `models/apertus`).

A Llama layout with per-head q/k RMS norms, a non-gated MLP (`up_proj`, `down_proj`) and the
xIELU activation, whose two learned scalars `alpha_p` and `alpha_n` (shape (1,)) are
parameters of every layer's MLP (`XIELUActivation` in `activations.py`; `beta` and `eps` are
buffers). A config with another `hidden_act` has no such parameters.
"""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import Component, ExtraTensor, ModelSpec, Stack


def apertus(c: HFConfig) -> ModelSpec:
    fields = core(c, mlp="plain", qk_norm="head")
    if c.raw("hidden_act") == "xielu":
        every = list(range(fields["layers"]))
        fields["extra"] = [
            ExtraTensor(name=f"layers.{{i}}.mlp.act_fn.{name}", shape=[1],
                        component=Component.MLP, layers=every)
            for name in ("alpha_p", "alpha_n")]
    return decoder_model(c, Stack(**fields))
