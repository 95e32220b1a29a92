"""Tencent Hy3 (transformers 5.25 `models/hy_v3`, `HYV3ForCausalLM`): a Llama-style decoder
with per-head q/k RMSNorms (`HYV3Attention`, Apertus's), a dense MLP on the layers
`mlp_layer_types` marks dense (the first alone by default) and elsewhere `HYV3MoE`: a
router (weight only; its `e_score_correction_bias` is a buffer), routed experts of
`moe_intermediate_size` and one shared MLP of `num_shared_experts` × `moe_intermediate_size`
(`HYV3MLP`, which falls back to `intermediate_size` when that product is 0)."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.hf.deepseek import mtp_block
from llm_inventory.spec.model import ModelSpec, MoE, Stack


def _sparse_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types` ("dense" / "sparse"), else layer 0 dense and the rest sparse
    (`HYV3Config.__post_init__`)."""
    kinds = c.str_list("mlp_layer_types")
    if kinds is None:
        return list(range(1, layers))
    if len(kinds) != layers or set(kinds) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"needs {layers} entries of dense or sparse")
    return [i for i, kind in enumerate(kinds) if kind == "sparse"]


def hy_v3(c: HFConfig) -> ModelSpec:
    layers = c.integer("num_hidden_layers")
    size = c.integer("moe_intermediate_size")
    shared = c.integer("num_shared_experts", minimum=0) * size or c.integer("intermediate_size")
    sparse = _sparse_layers(c, layers)
    moe = MoE(experts=c.integer("num_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=size, shared_experts=1, shared_intermediate_size=shared,
              layers=sparse) if sparse else None
    bias = c.flag("attention_bias")
    stack = Stack(**core(c, qk_norm="head", qkv_bias=bias, o_bias=bias,
                         mlp_bias=c.flag("mlp_bias"), moe=moe))
    notes: list[str] = []
    # The checkpoint appends num_nextn_predict_layers DeepSeek-style layers (enorm, hnorm,
    # eh_proj, a final norm and a decoder layer; no embedding or head of their own), which
    # transformers does not build.
    mtp = mtp_block(c, stack.hidden_size or 0, stack.vocab_size, copies=False)
    if mtp is not None:
        stack = stack.model_copy(update={"mtp": mtp})
        notes.append(f"the checkpoint also holds {mtp.layers} multi-token-prediction "
                     "layer(s) transformers does not build: the total leaves them out, "
                     "total_with_mtp counts them")
    return decoder_model(c, stack, notes=notes)
