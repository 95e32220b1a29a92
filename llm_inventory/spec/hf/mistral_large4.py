"""Mistral Large 4 (transformers 5.25 `models/mistral_large4`): the `mistral_large4_text`
language model inside Mistral 3's composite (a Pixtral tower, a patch merger and a
two-layer projector: `MistralLarge4Model` is `Mistral3Model`), read by `mistral3`.

The language model (`MistralLarge4TextModel`) is GLM-5's DeepSeek-Sparse-Attention stack
(`GlmMoeDsaModel`) with full-rank queries and Mistral's additions, all in the `scaled_dsa`
layer kind (`engine/kinds/scaled_dsa.py`): per-head softmax scaling in the attention and
the indexer, an indexer over the hidden state, and NoPE layers (`no_rope_layers` 0: every
fourth layer by default) that keep no rope part in the latent. Its MoE is Mistral Small 4's
(`Mistral4MoE`: routed experts plus `n_shared_experts` × `moe_intermediate_size` shared,
dense MLPs on the `mlp_layer_types` "dense" layers, the first `first_k_dense_replace` by
default). The rotary embedding holds a learned `alpha` per frequency (`rotary_emb.alpha`,
qk_rope_head_dim / 2 of them: `MistralLarge4TextRotaryEmbedding`).
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model
from llm_inventory.spec.hf.deepseek import _moe, indexer_types
from llm_inventory.spec.model import (
    MLA,
    Component,
    ExtraTensor,
    Indexer,
    LayerOverride,
    ModelSpec,
    Stack,
)


def _no_rope(c: HFConfig, layers: int) -> list[int]:
    """The NoPE layers: 0 entries of `no_rope_layers`, else every fourth layer (layer i is
    NoPE when (i + 1) % 4 == 0: `MistralLarge4TextConfig.__post_init__`)."""
    flags = c.int_list("no_rope_layers") if c.has("no_rope_layers") else None
    if flags is None:
        return [i for i in range(layers) if (i + 1) % 4 == 0]
    if len(flags) < layers or set(flags[:layers]) - {0, 1}:
        raise InputError(f"{c.label}: no_rope_layers",
                         f"needs 0 or 1 for each of the {layers} layers")
    return [i for i, flag in enumerate(flags[:layers]) if flag == 0]


def _check_no_kv_sharing(c: HFConfig, layers: int) -> None:
    """Every layer must own its latent (the class default): a layer that reads an earlier
    layer's latent (`kv_source_layers`) has no `kv_a_proj_with_mqa` and caches no latent,
    which this reading does not model yet."""
    sources = c.int_list("kv_source_layers") if c.has("kv_source_layers") else None
    if sources is not None and sources[:layers] != list(range(layers)):
        raise InputError(f"{c.label}: kv_source_layers",
                         "layers that share another layer's latent are not supported; "
                         f"allowed: each layer its own source (0 … {layers - 1})")


def mistral_large4_text(c: HFConfig) -> ModelSpec:
    layers = c.integer("num_hidden_layers")
    heads = c.integer("num_attention_heads")
    kinds = c.str_list("layer_types")
    if kinds is not None and set(kinds) - {"indexed_attention"}:
        raise InputError(f"{c.label}: layer_types",
                         f"every layer is indexed_attention, got {sorted(set(kinds))}")
    _check_no_kv_sharing(c, layers)
    mla = MLA(kv_lora_rank=c.integer("kv_lora_rank"),
              qk_rope_head_dim=c.integer("qk_rope_head_dim"),
              qk_nope_head_dim=c.integer("qk_nope_head_dim"),
              v_head_dim=c.integer("v_head_dim"))
    indexer = Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                      topk=c.integer("index_topk"))
    shared = [i for i, mode in enumerate(indexer_types(c, layers)) if mode == "shared"]
    overrides = [LayerOverride(layers=shared, shares_indexer=True)] if shared else []
    nope = _no_rope(c, layers)
    if nope:
        overrides.append(LayerOverride(layers=nope, rope=False))
    notes: list[str] = []
    bias = c.flag("attention_bias")
    stack = Stack(
        layers=layers, hidden_size=c.integer("hidden_size"), heads=heads, kv_heads=heads,
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, v_head_dim=mla.v_head_dim,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"), qkv_bias=bias, o_bias=bias,
        mla=mla, indexer=indexer, moe=_moe(c, notes), layer_types=["scaled_dsa"],
        overrides=overrides,
        extra=[ExtraTensor(name="rotary_emb.alpha", shape=[mla.qk_rope_head_dim // 2],
                           component=Component.ATTENTION)])
    return decoder_model(c, stack, notes=notes)
