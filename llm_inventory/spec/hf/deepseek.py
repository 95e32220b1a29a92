"""DeepSeek-V2, V3 and V3.2, GLM-4.7-Flash, GLM-5 and Mistral Small 4 (transformers
`models/deepseek_v2`, `deepseek_v3`, `deepseek_v32`, `glm4_moe_lite`, `glm_moe_dsa`,
`mistral4`): multi-head latent attention
(MLA), routed plus shared experts after `first_k_dense_replace` dense layers; V3.2 and GLM-5
add DeepSeek Sparse Attention's lightning indexer to every layer (GLM IndexShare layers reuse
another's).

Multi-token-prediction layers (`num_nextn_predict_layers`) are described as an `MTP` block:
transformers does not build them (`_keys_to_ignore_on_load_unexpected`), checkpoints hold
them after the decoder's layers, and engines load them for speculative decoding only.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, present_or_default
from llm_inventory.spec.model import (
    MLA,
    MTP,
    Component,
    ExtraTensor,
    Indexer,
    LayerOverride,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


def _moe(c: HFConfig, notes: list[str], first_dense: int | None = None) -> MoE | None:
    """The routed experts; an explicit null n_routed_experts makes every MLP dense.

    `mlp_layer_types` (V3.2 and GLM-5: "dense" / "sparse" per layer) lists the MoE layers
    when given; otherwise the first `first_k_dense_replace` layers are dense, or the first
    `first_dense` for a class that has no such key.
    """
    routed = present_or_default(c, "n_routed_experts")
    if not routed:
        return None
    top_k = present_or_default(c, "num_experts_per_tok")
    if top_k is None:  # unset, and DeepseekV2Config has no default
        top_k = 6
        notes.append("num_experts_per_tok is not set; active parameters assume 6 experts "
                     "per token (DeepSeek-V2's routing)")
    shared = present_or_default(c, "n_shared_experts", minimum=0) or 0
    expert_size = c.integer("moe_intermediate_size")
    first = first_dense if first_dense is not None else (
        present_or_default(c, "first_k_dense_replace", minimum=0) or 0)
    kinds = c.str_list("mlp_layer_types")
    layers = None
    if kinds is not None:
        if set(kinds) - {"dense", "sparse"}:
            raise InputError(f"{c.label}: mlp_layer_types",
                             f"entries must be 'dense' or 'sparse', got {sorted(set(kinds))}")
        first = next((i for i, kind in enumerate(kinds) if kind == "sparse"), len(kinds))
        if "dense" in kinds[first:]:  # not the leading-dense rule: list the MoE layers
            layers = [i for i, kind in enumerate(kinds) if kind == "sparse"]
    return MoE(
        experts=routed,
        top_k=top_k,
        expert_intermediate_size=expert_size,
        shared_experts=shared,
        shared_intermediate_size=expert_size if shared else 0,
        layers=layers,
        first_dense=first,
        # Neither class has moe_layer_freq any more; old files set it, 1 (every layer) if not.
        every=c.integer("moe_layer_freq", 1),
    )


def mtp_block(c: HFConfig, hidden: int, vocab: int, *, copies: bool) -> MTP | None:
    """DeepSeek-V3's multi-token-prediction module, once per `num_nextn_predict_layers`
    (README_WEIGHTS.md of deepseek-ai/DeepSeek-V3; vLLM `DeepSeekMultiTokenPredictorLayer`,
    vllm/model_executor/models/deepseek_mtp.py): a decoder layer shaped like the last one
    (MoE included), `enorm` and `hnorm` on the token embedding and the incoming hidden state,
    `eh_proj` (2 × hidden → hidden) and the shared head's norm. With `copies`, the checkpoint
    also stores its own copies of the embedding and the output head (DeepSeek-V3's
    `model.layers.61.embed_tokens` and `shared_head.head`); GLM's checkpoints reuse the main
    model's. An explicit null or 0 has none."""
    count = present_or_default(c, "num_nextn_predict_layers", minimum=0)
    if not count:
        return None
    m = Component.MTP
    extra = [ExtraTensor(name="enorm.weight", shape=[hidden], component=m),
             ExtraTensor(name="hnorm.weight", shape=[hidden], component=m),
             # Kept unquantized in the FP8 checkpoints (DeepSeek-V3's and GLM-5.2's are bf16).
             ExtraTensor(name="eh_proj.weight", shape=[hidden, 2 * hidden], component=m),
             ExtraTensor(name="shared_head.norm.weight", shape=[hidden], component=m)]
    if copies:
        extra += [ExtraTensor(name="embed_tokens.weight", shape=[vocab, hidden], component=m,
                              shard=Shard.VOCAB),
                  ExtraTensor(name="shared_head.head.weight", shape=[vocab, hidden],
                              component=m, shard=Shard.VOCAB)]
    return MTP(layers=count, extra=extra)


def _mla(c: HFConfig) -> MLA:
    return MLA(
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
        # An explicit null q_lora_rank is a full-rank q_proj (DeepSeek-V2-Lite).
        q_lora_rank=present_or_default(c, "q_lora_rank"),
    )


def _stack(c: HFConfig, notes: list[str], first_dense: int | None = None,
           **fields: object) -> Stack:
    heads = c.integer("num_attention_heads")
    mla = _mla(c)
    values: dict[str, object] = {
        "layers": c.integer("num_hidden_layers"),
        "hidden_size": c.integer("hidden_size"),
        "heads": heads,
        "kv_heads": heads,
        "head_dim": mla.qk_nope_head_dim + mla.qk_rope_head_dim,
        "v_head_dim": mla.v_head_dim,
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "tied_embeddings": c.flag("tie_word_embeddings"),
        "qkv_bias": c.flag("attention_bias"),
        "o_bias": c.flag("attention_bias"),
        "mla": mla,
        "moe": _moe(c, notes, first_dense),
    }
    values.update(fields)
    return Stack.model_validate(values)


def _mtp_note(stack: Stack) -> str:
    mtp = stack.mtp
    assert mtp is not None
    return (f"the checkpoint also holds {mtp.layers} multi-token-prediction layer(s) "
            "(layer index "
            f"{stack.layers}{'' if mtp.layers == 1 else f'–{stack.layers + mtp.layers - 1}'}); "
            "transformers does not build them, so the total leaves them out, as transformers "
            "and the model card's main-model figure do; total_with_mtp is what the checkpoint "
            "holds, loaded only for speculative decoding")


def _deepseek(c: HFConfig, *, mtp_copies: bool = True, notes: list[str] | None = None,
              first_dense: int | None = None, **fields: object) -> ModelSpec:
    notes = notes if notes is not None else []
    stack = _stack(c, notes, first_dense, **fields)
    # DeepseekV2Config has no multi-token-prediction layers; an explicit null has none.
    mtp = mtp_block(c, stack.hidden_size or 0, stack.vocab_size, copies=mtp_copies)
    if mtp is not None:
        stack = stack.model_copy(update={"mtp": mtp})
        notes.append(_mtp_note(stack))
    return decoder_model(c, stack, notes=notes)


def deepseek_v2(c: HFConfig) -> ModelSpec:
    return _deepseek(c)


def deepseek_v3(c: HFConfig) -> ModelSpec:
    return _deepseek(c)


def mistral4(c: HFConfig) -> ModelSpec:
    """Mistral Small 4 (`Mistral4ForCausalLM`, transformers 5.25 models/mistral4): DeepSeek-V3's
    layout under Mistral's defaults. `Mistral4Attention` is `DeepseekV3Attention` (MLA, q and
    kv LoRA, the Llama-4 query scaling a run-time factor), `Mistral4MoE` is `DeepseekV3MoE`
    (routed experts plus `n_shared_experts` × `moe_intermediate_size` shared), dense MLPs
    on the first `first_k_dense_replace` layers; its router holds a weight only (no
    correction bias). The class has no multi-token-prediction layers and no
    `moe_layer_freq`."""
    return _deepseek(c)


def glm4_moe_lite(c: HFConfig) -> ModelSpec:
    """GLM-4.7-Flash (`Glm4MoeLiteForCausalLM`, models/glm4_moe_lite): DeepSeek-V3's MLA and
    MoE (`Glm4MoeLiteAttention`, `Glm4MoeLiteMoE`: one shared MLP of n_shared_experts ×
    moe_intermediate_size, the router's `e_score_correction_bias` a buffer). The class has no
    `first_k_dense_replace`: without `mlp_layer_types` only layer 0 is dense
    (`Glm4MoeLiteConfig.__post_init__`). Its multi-token-prediction layer stores its own
    embedding and head, as DeepSeek-V3's does (the checkpoint's layer 47: `embed_tokens`,
    `shared_head.head`)."""
    notes: list[str] = []
    first = None if c.has("mlp_layer_types") else 1
    given = c.opt_integer("first_k_dense_replace", minimum=0)
    if first is not None and given not in (None, first):
        notes.append(f"first_k_dense_replace {given} is not read: transformers' "
                     "Glm4MoeLiteConfig makes layer 0 alone dense unless mlp_layer_types says "
                     "otherwise")
    return _deepseek(c, notes=notes, first_dense=first)


def _indexer(c: HFConfig) -> Indexer:
    return Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                   topk=c.integer("index_topk"))


def deepseek_v32(c: HFConfig) -> ModelSpec:
    """DeepSeek-V3.2: DeepSeek-V3 with a lightning indexer in every layer
    (`DeepseekV32Attention`)."""
    return _deepseek(c, layer_types=["indexed_mla"], indexer=_indexer(c))


def indexer_types(c: HFConfig, layers: int) -> list[str]:
    """GLM-MoE-DSA's per-layer indexer mode (`GlmMoeDsaConfig.__post_init__`): the explicit
    `indexer_types`, else `index_topk_pattern` ("F"/"S" per layer), else "full" where
    max(i − index_skip_topk_offset + 1, 0) is a multiple of `index_topk_freq` (1 and 2 when
    unset: every layer full)."""
    explicit = c.str_list("indexer_types")
    pattern = c.raw("index_topk_pattern")
    if explicit is None and isinstance(pattern, str):
        modes = {"F": "full", "S": "shared"}
        if set(pattern) - set(modes):
            raise InputError(f"{c.label}: index_topk_pattern",
                             f"must be a string of F and S, got {pattern!r}")
        explicit = [modes[ch] for ch in pattern]
    elif explicit is None and pattern is not None:
        explicit = c.str_list("index_topk_pattern")
    # the schedule's keys are read (and checked) even where an explicit list supersedes
    # them, as GlmMoeDsaConfig.__post_init__ ignores them then
    freq = max(c.integer("index_topk_freq", 1), 1)
    offset = c.integer("index_skip_topk_offset", 2, minimum=0)
    if explicit is None:
        explicit = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared"
                    for i in range(layers)]
    if len(explicit) < layers or set(explicit) - {"full", "shared"}:
        raise InputError(f"{c.label}: indexer_types",
                         f"must give 'full' or 'shared' for each of the {layers} layers")
    if explicit[0] == "shared":
        raise InputError(f"{c.label}: indexer_types",
                         "layer 0 must run its own indexer ('full'): a shared layer reuses "
                         "an earlier one's top-k")
    return explicit[:layers]


def glm_moe_dsa(c: HFConfig) -> ModelSpec:
    """GLM-5 (`GlmMoeDsaForCausalLM`): DeepSeek-V3.2's layout at GLM's shapes; "shared"
    layers of `indexer_types` have no indexer (`GlmMoeDsaAttention.indexer` is None).

    Its multi-token-prediction layer holds a full decoder layer (DSA indexer included) and
    the MTP glue, but no copy of the embedding or output head (GLM-5.2's layer 78: 791
    tensors; GLM's checkpoints share the main model's)."""
    layers = c.integer("num_hidden_layers")
    shared = [i for i, mode in enumerate(indexer_types(c, layers)) if mode == "shared"]
    overrides = [LayerOverride(layers=shared, shares_indexer=True)] if shared else []
    return _deepseek(c, mtp_copies=False, layer_types=["indexed_mla"], indexer=_indexer(c),
                     overrides=overrides)
