"""DBRX (transformers `models/dbrx`): its own key names (`d_model`, `n_heads`, `n_layers`,
`max_seq_len`, nested `attn_config` and `ffn_config`), a fused bias-free Wqkv, bias-free
LayerNorms, and every MLP fine-grained experts."""

from __future__ import annotations

from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import hf_model
from llm_inventory.spec.model import Family, ModelSpec, MoE, Stack


def _nested(c: HFConfig, key: str) -> HFConfig:
    """`attn_config` / `ffn_config` over `DbrxAttentionConfig` / `DbrxFFNConfig`'s defaults
    (absent: the class's own)."""
    defaults = c.defaults.get(key) or {}
    return HFConfig(dict(c.sub(key).data), f"{c.label}: {key}", c.name, defaults=defaults)


def dbrx(c: HFConfig) -> ModelSpec:
    """`DbrxBlock`: `DbrxNormAttentionNorm` (norm_1, `Wqkv` of d_model + 2 × kv_n_heads ×
    head_dim rows, `out_proj`, norm_2: LayerNorms without bias, so one weight each) and
    `DbrxFFN` (`router.layer` without bias; experts w1, v1, w2 of `ffn_hidden_size`: a gated
    MLP each). head_dim is d_model / n_heads; the head is never tied
    (`DbrxConfig.validate_architecture`)."""
    attn, ffn = _nested(c, "attn_config"), _nested(c, "ffn_config")
    hidden, heads = c.integer("d_model"), c.integer("n_heads")
    size = ffn.integer("ffn_hidden_size")
    moe = MoE(experts=ffn.integer("moe_num_experts"), top_k=ffn.integer("moe_top_k"),
              expert_intermediate_size=size)
    context = c.opt_integer("max_seq_len")
    stack = Stack(
        layers=c.integer("n_layers"),
        hidden_size=hidden,
        heads=heads,
        kv_heads=attn.integer("kv_n_heads"),
        head_dim=hidden // heads,
        intermediate_size=size,
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=False,
        moe=moe,
    )
    return hf_model(c, Family.MOE, decoder=stack, max_context=context)
