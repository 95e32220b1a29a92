"""MiniMax-M2 and M2.5 (transformers `models/minimax_m2`): every layer full attention with
q/k norms over the whole projection width and partial rotary heads, every MLP routed experts
behind a sigmoid router. MiniMax-M3 (`models/minimax_m3_vl`'s text model): GQA with a
lightning indexer on its sparse layers, dense layers first, a shared expert beside the routed
ones, and vLLM's multi-token-prediction modules."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import core, decoder_model
from llm_inventory.spec.model import MTP, Component, ExtraTensor, Indexer, ModelSpec, MoE, Stack


def _mtp_note(c: HFConfig) -> list[str]:
    modules = c.opt_integer("num_mtp_modules", minimum=0)
    depth = c.opt_integer("mtp_transformer_layers", minimum=0)
    if not modules or c.raw("use_mtp") is False:
        return []
    layers = f" of {depth} decoder layer(s) each" if depth else ""
    return [f"the config names {modules} multi-token-prediction module(s){layers} "
            "(num_mtp_modules); transformers builds none and their shapes are not in the "
            "config, so every count here leaves them out"]


def minimax_m2(c: HFConfig) -> ModelSpec:
    """`MiniMaxM2Attention`: bias-free q/k/v/o and RMS norms of heads × head_dim (q) and
    kv_heads × head_dim (k); `rotary_dim` (the released files' spelling) over head_dim is the
    rotary fraction (`MiniMaxM2Config.convert_rope_params_to_dict`). `MiniMaxM2SparseMoeBlock`:
    `num_local_experts` experts of `intermediate_size`, a bias-free router whose
    `e_score_correction_bias` is a buffer, no shared expert. The hub files' `attn_type_list`
    (1 = softmax attention on every layer; transformers does not read it) must agree, and so
    must the keys vLLM's `MiniMaxM2` reads and transformers does not: `use_qk_norm` with
    `qk_norm_type` "per_layer" (the whole-width norms), `shared_intermediate_size` 0."""
    if c.raw("qk_norm_type") not in (None, "per_layer") or c.raw("use_qk_norm") is False:
        raise InputError(f"{c.label}: qk_norm_type",
                         "minimax_m2 normalises q and k over the whole projection width "
                         "('per_layer' with use_qk_norm true); other norms are not modelled")
    if c.integer("shared_intermediate_size", 0, minimum=0):
        raise InputError(f"{c.label}: shared_intermediate_size",
                         "must be 0 for minimax_m2, whose MoE block has no shared expert")
    kinds = c.int_list("attn_type_list")
    if kinds is not None and set(kinds) - {1}:
        raise InputError(f"{c.label}: attn_type_list",
                         "0 (lightning attention) is not supported for minimax_m2, whose "
                         "layers are all softmax attention (1)")
    head_dim = c.integer("head_dim")
    rotary = c.opt_integer("rotary_dim")
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
    )
    fields = core(c, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="full", moe=moe,
                  partial_rotary_factor=min(1.0, rotary / head_dim) if rotary else
                  c.number("partial_rotary_factor", 1.0))
    return decoder_model(c, Stack(**fields), notes=_mtp_note(c))


def _per_layer(c: HFConfig, key: str, layers: int, values: list[int] | None) -> list[int] | None:
    if values is not None and len(values) != layers:
        raise InputError(f"{c.label}: {key}",
                         f"must give one entry for each of the {layers} layers, got "
                         f"{len(values)}")
    return values


def _m3_layer_types(c: HFConfig, layers: int) -> list[str]:
    """Sparse (indexed) or full attention per layer, as `MiniMaxM3VLTextConfig.__post_init__`
    reads it: `layer_types` ("minimax_m3_sparse" / "full_attention"), else the hub file's
    `sparse_attention_config.sparse_attention_freq` (1 = sparse), else all full."""
    names = {"full_attention": "full", "minimax_m3_sparse": "indexed_gqa"}
    given = c.str_list("layer_types")
    if given is not None:
        if set(given) - set(names) or len(given) != layers:
            raise InputError(f"{c.label}: layer_types",
                             f"must give 'full_attention' or 'minimax_m3_sparse' for each of "
                             f"the {layers} layers")
        return [names[kind] for kind in given]
    sparse = c.sub("sparse_attention_config")
    freq = _per_layer(sparse, "sparse_attention_freq", layers,
                      sparse.int_list("sparse_attention_freq"))
    if freq is None:
        return ["full"] * layers
    return ["indexed_gqa" if f else "full" for f in freq]


def _m3_indexer(c: HFConfig, types: list[str]) -> Indexer | None:
    """The lightning indexer's shapes, from the hub file's `sparse_attention_config`
    (`sparse_num_index_heads`, `sparse_index_dim`, `sparse_topk_blocks` × `sparse_block_size`
    positions a query keeps) or transformers' flat `index_*` keys."""
    if "indexed_gqa" not in types:
        # No sparse layer builds an indexer: its flat shape keys (to_dict's) are moot.
        for key in ("index_n_heads", "index_head_dim", "index_topk_blocks",
                    "index_block_size", "index_local_blocks"):
            c.superseded(key)
        return None
    sparse = c.sub("sparse_attention_config")

    def read(legacy: str, flat: str) -> int:
        if sparse.has(legacy):
            return sparse.integer(legacy)
        if c.has(flat):
            return c.integer(flat)
        raise InputError(f"{c.label}: sparse_attention_config: {legacy}",
                         f"is required for the sparse layers (or transformers' {flat})")

    disabled = sparse.int_list("sparse_disable_index_value")
    if disabled is not None and any(
            not off for off, kind in zip(disabled, types, strict=False) if kind != "full"):
        raise InputError(f"{c.label}: sparse_attention_config: sparse_disable_index_value",
                         "every sparse layer must disable the index value path (1), as the "
                         "released checkpoint does; its projections are not modelled")
    blocks = read("sparse_topk_blocks", "index_topk_blocks")
    # The first and the latest blocks are forced into the top-k (their scores boosted,
    # `MiniMaxM3VLIndexer`), not added to it: they must fit inside it.
    forced = sparse.integer("sparse_init_block", 0, minimum=0) + sparse.integer(
        "sparse_local_block", 0, minimum=0)
    if forced > blocks:
        raise InputError(f"{c.label}: sparse_attention_config: sparse_local_block",
                         f"the forced initial and local blocks ({forced}) must fit in the "
                         f"top-k blocks ({blocks})")
    return Indexer(heads=read("sparse_num_index_heads", "index_n_heads"),
                   head_dim=read("sparse_index_dim", "index_head_dim"),
                   topk=blocks * read("sparse_block_size", "index_block_size"))


def _m3_moe_layers(c: HFConfig, layers: int) -> list[int]:
    """MoE layers: `mlp_layer_types` ("sparse" / "dense"), else the hub file's
    `moe_layer_freq` list (1 = MoE), else every layer (`MiniMaxM3VLTextConfig`)."""
    kinds = c.str_list("mlp_layer_types")
    if kinds is not None:
        if set(kinds) - {"sparse", "dense"} or len(kinds) != layers:
            raise InputError(f"{c.label}: mlp_layer_types",
                             f"must give 'sparse' or 'dense' for each of the {layers} layers")
        return [i for i, kind in enumerate(kinds) if kind == "sparse"]
    freq = _per_layer(c, "moe_layer_freq", layers, c.int_list("moe_layer_freq"))
    return list(range(layers)) if freq is None else [i for i, f in enumerate(freq) if f]


def _m3_agree(c: HFConfig, moe: MoE, types: list[str], layers: int) -> None:
    """The hub file's DeepSeek-style duplicates of what the builder reads (transformers reads
    none of them) must agree with it: `first_k_dense_replace` dense layers first,
    `moe_intermediate_size` the experts' width, `n_shared_experts` one, and
    `use_sparse_attention` on wherever a layer is sparse."""
    first = c.opt_integer("first_k_dense_replace", minimum=0)
    if first is not None and moe.layers != list(range(first, layers)):
        raise InputError(f"{c.label}: first_k_dense_replace",
                         "disagrees with the MoE layers moe_layer_freq / mlp_layer_types give")
    width = c.opt_integer("moe_intermediate_size")
    if width is not None and width != moe.expert_intermediate_size:
        raise InputError(f"{c.label}: moe_intermediate_size",
                         f"must equal intermediate_size ({moe.expert_intermediate_size}), the "
                         "width minimax_m3's experts are built with")
    shared = c.opt_integer("n_shared_experts", minimum=0)
    if shared is not None and shared != 1:
        raise InputError(f"{c.label}: n_shared_experts",
                         "must be 1: minimax_m3 builds one shared expert")
    sparse = c.sub("sparse_attention_config")
    if sparse.raw("use_sparse_attention") is False and "indexed_gqa" in types:
        raise InputError(f"{c.label}: sparse_attention_config: use_sparse_attention",
                         "is false while sparse_attention_freq marks sparse layers")


def _m3_mtp(c: HFConfig, hidden: int, kind: str, notes: list[str]) -> MTP | None:
    """vLLM's `minimax_m3_mtp` drafter (`MiniMaxM3MultiTokenPredictorLayer`,
    vllm/models/minimax_m3/nvidia/mtp.py): `num_mtp_modules` layers, each a sparse-attention
    MoE decoder layer plus Gemma norms `enorm`, `hnorm` and `final_layernorm` and the 2h → h
    `eh_proj`, reusing the main model's embedding and head."""
    modules = c.opt_integer("num_mtp_modules", minimum=0)
    if not modules:
        return None
    m = Component.MTP
    nextn = c.opt_integer("num_nextn_predict_layers", minimum=0)
    notes.append(
        f"the config names {modules} multi-token-prediction module(s) (num_mtp_modules"
        + (f"; num_nextn_predict_layers says {nextn}" if nextn is not None and nextn != modules
           else "")
        + "), shaped as vLLM's minimax_m3_mtp drafter builds them; transformers builds none, "
        "so the total leaves them out and total_with_mtp adds them")
    return MTP(layers=modules, kind=kind, moe=True, extra=[
        ExtraTensor(name="enorm.weight", shape=[hidden], component=m),
        ExtraTensor(name="hnorm.weight", shape=[hidden], component=m),
        ExtraTensor(name="eh_proj.weight", shape=[hidden, 2 * hidden], component=m,
                    linear=True),
        ExtraTensor(name="final_layernorm.weight", shape=[hidden], component=m)])


def minimax_m3(c: HFConfig) -> ModelSpec:
    """MiniMax-M3 (transformers `models/minimax_m3_vl`, `MiniMaxM3VLTextConfig` and
    `MiniMaxM3VLForCausalLM`, its text model; transformers has no `minimax_m3` class):
    bias-free GQA with per-head Gemma q/k norms and partial rotary heads on every layer, a
    lightning indexer on the sparse layers (`MiniMaxM3VLAttention.indexer`), a dense MLP of
    `dense_intermediate_size` on the dense layers, else `MiniMaxM3VLSparseMoeBlock`: experts
    of `intermediate_size`, a sigmoid router whose `e_score_correction_bias` is a buffer,
    and one shared expert of `shared_intermediate_size`."""
    if c.raw("qk_norm_type") not in (None, "per_head") or c.raw("use_qk_norm") is False:
        raise InputError(f"{c.label}: qk_norm_type",
                         "only per-head q/k norms ('per_head', use_qk_norm true) are built "
                         "for minimax_m3")
    if c.raw("attention_output_gate") is True:
        raise InputError(f"{c.label}: attention_output_gate",
                         "an output gate is not built for minimax_m3 (false)")
    layers = c.integer("num_hidden_layers")
    types = _m3_layer_types(c, layers)
    head_dim = c.integer("head_dim")
    rotary = c.integer("rotary_dim")
    moe = MoE(
        experts=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("intermediate_size"),
        shared_experts=1,
        shared_intermediate_size=c.integer("shared_intermediate_size"),
        layers=_m3_moe_layers(c, layers),
    )
    _m3_agree(c, moe, types, layers)
    notes: list[str] = []
    indexer = _m3_indexer(c, types)
    hidden = c.integer("hidden_size")
    fields = core(c, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="head", moe=moe,
                  intermediate_size=c.integer("dense_intermediate_size"),
                  partial_rotary_factor=min(1.0, rotary / head_dim),
                  layer_types=types, indexer=indexer,
                  mtp=_m3_mtp(c, hidden, "indexed_gqa" if indexer else "full", notes))
    return decoder_model(c, Stack(**fields), notes=notes)
