"""DeepSeek-V4 (transformers `models/deepseek_v4`, `DeepseekV4ForCausalLM`): a sliding
window on every layer, CSA and HCA layers that compress older tokens (kinds `swa_kv`,
`csa`, `hca`), manifold-constrained hyper-connections (mHC) around every block, and a MoE
on every layer (the first `num_hash_layers` route by a frozen token → expert table, with
the same weights)."""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    decoder_model,
    extra,
    present_or_default,
    rope_scaling,
)
from llm_inventory.spec.model import (
    MTP,
    Component,
    Compression,
    ExtraTensor,
    Indexer,
    ModelSpec,
    MoE,
    Stack,
)

_TYPES = {"sliding_attention": "swa_kv", "compressed_sparse_attention": "csa",
          "heavily_compressed_attention": "hca"}


def _rates(c: HFConfig) -> tuple[int, int]:
    """(CSA, HCA) compression rates: `compress_rates`, else the legacy scalar keys, else
    4 and 128 (`DeepseekV4Config.default_compress_rates`)."""
    rates: Any = c.raw("compress_rates") or {}
    if not isinstance(rates, dict):
        raise InputError(f"{c.label}: compress_rates", f"must be a mapping, got {rates!r}")
    csa = rates.get("compressed_sparse_attention", c.raw("compress_rate_csa", 4))
    hca = rates.get("heavily_compressed_attention", c.raw("compress_rate_hca", 128))
    for name, value in (("compressed_sparse_attention", csa),
                        ("heavily_compressed_attention", hca)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InputError(f"{c.label}: compress_rates.{name}",
                             f"must be an integer of at least 2, got {value!r}")
    return csa, hca


def layer_kinds(c: HFConfig, layers: int, csa: int, hca: int) -> list[str]:
    """Each layer's kind (`DeepseekV4Config.__post_init__`): `layer_types`; else the legacy
    per-layer `compress_ratios` (0 sliding-only, the CSA or HCA rate), cut to the decoder's
    layers (the file lists the MTP layer's too); else two HCA layers, then CSA and HCA in
    turn."""
    names = c.str_list("layer_types")
    if names is not None:
        unknown = sorted(set(names) - set(_TYPES))
        if unknown or len(names) < layers:
            raise InputError(f"{c.label}: layer_types", f"needs one of {', '.join(_TYPES)} "
                             f"for each of the {layers} layers")
        return [_TYPES[n] for n in names[:layers]]
    ratios = c.int_list("compress_ratios")
    if ratios is not None:
        by_ratio = {0: "swa_kv", csa: "csa", hca: "hca"}
        if len(ratios) < layers or set(ratios) - set(by_ratio):
            raise InputError(f"{c.label}: compress_ratios",
                             f"needs 0, {csa} or {hca} for each of the {layers} layers")
        return [by_ratio[r] for r in ratios[:layers]]
    return ["hca"] * min(layers, 2) + ["csa" if i % 2 else "hca" for i in range(layers - 2)]


def _hyper(hidden: int, mult: int, layers: int) -> list[Any]:
    """mHC weights (`DeepseekV4HyperConnection`): per block `fn` ((2 + n) × n rows over the
    n × hidden streams), `base` and three scales, around attention and MLP of every layer;
    `DeepseekV4HyperHead`'s final collapse."""
    rows, every = (2 + mult) * mult, list(range(layers))
    out = []
    for block in ("attn_hc", "ffn_hc"):
        out += [extra(f"layers.{{i}}.{block}.fn", [rows, mult * hidden], layers=every),
                extra(f"layers.{{i}}.{block}.base", [rows], layers=every),
                extra(f"layers.{{i}}.{block}.scale", [3], layers=every)]
    out += [extra("hc_head.hc_fn", [mult, mult * hidden]), extra("hc_head.hc_base", [mult]),
            extra("hc_head.hc_scale", [1])]
    return out


def _mtp(c: HFConfig, hidden: int, mult: int, kind: str) -> MTP | None:
    """DeepSeek-V4's multi-token-prediction layers (DeepSeek's `inference/model.py`
    `MTPBlock`; transformers builds none): a full V4 layer of `kind` (its attention, MoE and
    both hyper-connections), `e_proj` and `h_proj` (hidden → hidden each), `enorm`, `hnorm`,
    the head's `norm`, and its own hyper-head collapse; the embedding and the output head are
    the main model's."""
    count = present_or_default(c, "num_nextn_predict_layers", minimum=0)
    if not count:
        return None
    rows, m = (2 + mult) * mult, Component.MTP

    def t(name: str, shape: list[int], linear: bool = False) -> ExtraTensor:
        return ExtraTensor(name=name, shape=shape, component=m, linear=linear)

    extra = [t(f"{block}.{part}", shape) for block in ("attn_hc", "ffn_hc")
             for part, shape in (("fn", [rows, mult * hidden]), ("base", [rows]),
                                 ("scale", [3]))]
    extra += [t("e_proj.weight", [hidden, hidden], True),
              t("h_proj.weight", [hidden, hidden], True), t("enorm.weight", [hidden]),
              t("hnorm.weight", [hidden]), t("norm.weight", [hidden]),
              t("hc_head_fn", [mult, mult * hidden]), t("hc_head_base", [mult]),
              t("hc_head_scale", [1])]
    return MTP(layers=count, kind=kind, extra=extra)


def deepseek_v4(c: HFConfig) -> ModelSpec:
    """DeepSeek-V4: one K = V head of head_dim, rotary on its last `qk_rope_head_dim`
    (partial_rotary_factor × head_dim), grouped low-rank output, per-head sinks; the shared
    expert is one MLP of moe_intermediate_size (`DeepseekV4MLP` reads `intermediate_size`,
    mapped to it)."""
    layers, hidden = c.integer("num_hidden_layers"), c.integer("hidden_size")
    head_dim = c.integer("head_dim")
    csa, hca = _rates(c)
    factor = c.raw("partial_rotary_factor")
    rope = int(head_dim * factor) if isinstance(factor, int | float) and factor > 0 else \
        c.integer("qk_rope_head_dim", head_dim // 8)
    notes: list[str] = []
    shared = present_or_default(c, "n_shared_experts", minimum=0)
    if shared not in (None, 1):
        notes.append(f"n_shared_experts is {shared}; transformers builds one shared expert "
                     "of moe_intermediate_size whatever it says, and so does this count")
    expert = c.integer("moe_intermediate_size")
    stack = Stack(
        layers=layers,
        hidden_size=hidden,
        heads=c.integer("num_attention_heads"),
        kv_heads=1,
        head_dim=head_dim,
        intermediate_size=expert,
        vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        layer_types=layer_kinds(c, layers, csa, hca),
        sliding_window=c.integer("sliding_window"),
        partial_rotary_factor=rope / head_dim,
        rope_scaling=rope_scaling(c),
        compression=Compression(q_lora_rank=c.integer("q_lora_rank"),
                                o_groups=c.integer("o_groups"),
                                o_lora_rank=c.integer("o_lora_rank"), rope_dim=rope,
                                csa_ratio=csa, hca_ratio=hca),
        indexer=Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                        topk=c.integer("index_topk")),
        moe=MoE(experts=c.integer("n_routed_experts"), top_k=c.integer("num_experts_per_tok"),
                expert_intermediate_size=expert, shared_experts=1,
                shared_intermediate_size=expert),
        extra=_hyper(hidden, c.integer("hc_mult"), layers),
    )
    # The MTP layer's attention kind: the legacy compress_ratios list has its entry last.
    ratios = c.int_list("compress_ratios")
    kind = stack.kind_of(layers - 1)
    if c.str_list("layer_types") is None and ratios is not None and len(ratios) > layers:
        kind = {0: "swa_kv", csa: "csa", hca: "hca"}.get(ratios[layers], kind)
    mtp = _mtp(c, hidden, c.integer("hc_mult"), kind)
    if mtp is not None:
        stack = stack.model_copy(update={"mtp": mtp})
        notes.append(f"the checkpoint also holds {mtp.layers} multi-token-prediction "
                     f"layer(s) ({kind} attention, sharing the main model's embedding and "
                     "head); transformers does not build them, so the total leaves them out; "
                     "total_with_mtp is what the checkpoint holds")
    return decoder_model(c, stack, notes=notes)
