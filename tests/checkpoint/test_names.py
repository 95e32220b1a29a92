"""The tensor-name table (llm_inventory/checkpoint/names.py) against llama.cpp's own names.

gguf-py (a dev dependency) lists every tensor name llama.cpp writes, `constants.TENSOR_NAMES`;
the GGUF matcher reads the first layer's norms and the expert layers through the table's
components, so every per-layer name must land where the matcher expects it.
"""

from __future__ import annotations

import re

import gguf
import pytest

from llm_inventory.checkpoint import names
from llm_inventory.checkpoint.classify import classify
from llm_inventory.spec.model import Component

# llama.cpp's per-layer tensor names (`blk.{bid}.<name>`, one level).
PER_LAYER = sorted({v.removeprefix("blk.{bid}.") for v in gguf.constants.TENSOR_NAMES.values()
                    if re.fullmatch(r"blk\.\{bid\}\.[a-z0-9_]+", v)})
# The norms that sit inside attention, which a layer's norm count leaves out.
ATTENTION_NORMS = {"attn_q_norm", "attn_k_norm", "attn_q_a_norm", "attn_kv_a_norm"}


def test_llama_cpp_names_are_read() -> None:
    assert len(PER_LAYER) > 100 and "attn_q" in PER_LAYER


@pytest.mark.parametrize("name", [n for n in PER_LAYER if "norm" in n])
def test_a_layer_norm_is_a_norm_and_an_attention_norm_is_attention(name: str) -> None:
    component, _, layer = classify(f"blk.0.{name}.weight")
    assert layer == 0
    assert component is (Component.ATTENTION if name in ATTENTION_NORMS else Component.NORMS)


def test_only_names_with_norm_are_norms() -> None:
    assert [n for n in PER_LAYER if "norm" not in n
            and classify(f"blk.0.{n}.weight")[0] is Component.NORMS] == []


@pytest.mark.parametrize("name", [n for n in PER_LAYER if n.endswith(("_exps", "_chexps"))
                                  and "norm" not in n])
def test_expert_tensors_are_experts(name: str) -> None:
    assert classify(f"blk.3.{name}.weight")[0] is Component.EXPERTS


@pytest.mark.parametrize(("name", "component"), [
    # Every tensor the GGUF matcher looks for by name, with the part it is counted in.
    ("token_embd.weight", Component.EMBEDDINGS),
    ("output.weight", Component.LM_HEAD),
    ("output_norm.weight", Component.NORMS),
    ("blk.0.attn_q.bias", Component.ATTENTION),
    ("blk.0.attn_qkv.bias", Component.ATTENTION),
    ("blk.0.attn_output.bias", Component.ATTENTION),
    ("blk.0.attn_sinks.weight", Component.ATTENTION),
    ("blk.0.attn_norm.bias", Component.NORMS),
    ("blk.0.ffn_up.weight", Component.MLP),
    ("blk.0.ffn_gate.weight", Component.MLP),
    ("blk.0.ffn_down.bias", Component.MLP),
    ("blk.3.ffn_gate_up_exps.weight", Component.EXPERTS),
    ("blk.3.ffn_down_exps.bias", Component.EXPERTS),
    ("blk.3.ffn_gate_inp.bias", Component.ROUTER),
    ("blk.3.ffn_up_shexp.weight", Component.SHARED_EXPERTS),
    ("blk.3.ffn_gate_inp_shexp.weight", Component.SHARED_EXPERTS),
])
def test_names_the_gguf_matcher_reads(name: str, component: Component) -> None:
    assert classify(name)[0] is component


def test_every_pattern_compiles_and_every_component_is_reachable() -> None:
    for _, pattern in (*names.COMPONENTS, *names.ROLES):
        re.compile(pattern)
    reachable = {component for component, _ in names.COMPONENTS}
    # A diffusion model's parts come from its description, never from tensor names; MTP
    # layers are known by their index (past the decoder's layer count), not their names.
    by_description = {Component.DENOISER, Component.TEXT_ENCODER, Component.VAE, Component.MTP}
    assert reachable == set(Component) - {Component.OTHER} - by_description
