"""Qwen4-Exp, Qwen3.8 (transformers `models/qwen4_exp`): Qwen3.5-MoE's Gated DeltaNet layers
and gated attention, the attention layers made QSA (an indexer over the hidden state picks
the tokens a query reads), every MLP a MoE with a gated shared expert, hyper-connections
(`hc_count` residual streams) in place of the layer norms, and optional PLE layers (hashed
n-gram embeddings injected into the streams) on chosen linear-attention layers; a Qwen3.5
vision tower in the composite."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import decoder_model, extra, rope_scaling, sub_config, vlm_model
from llm_inventory.spec.hf.qwen_next import _vision, gated_delta_net, partial_rotary
from llm_inventory.spec.model import (
    ExtraTensor,
    Indexer,
    LayerKind,
    ModelSpec,
    MoE,
    Stack,
)

# Qwen4ExpTextConfig.__post_init__ reads "full_attention" as "indexed_attention".
_KINDS = {"linear_attention": LayerKind.GDN, "indexed_attention": "indexed_gqa",
          "full_attention": "indexed_gqa"}
# At most this many n-gram heads over all PLE layers, so the prime search stays short.
_MAX_NGRAM_HEADS = 4096
PLE_STATE = ("the PLE layers' own per-sequence state (a dilated convolution window over the "
             "hc_count streams and the last ngram_size - 1 token ids, transformers' "
             "conv_states[1] and [2]) is not counted; the Gated DeltaNet and attention state is")
NO_ENGINE = ("no serving engine's source has a Qwen4-Exp model file: the cache is paged as "
             "Qwen3.5's Gated DeltaNet layers and MiniMax-M3's indexed GQA are (its "
             "tensor-parallel limits too), a rule borrowed, not read")
STATE_DTYPE = ("the config names no mamba_ssm_dtype: the Gated DeltaNet state is sized in the "
               "model dtype, as vLLM keeps Qwen3.5's (mamba_ssm_cache_dtype auto); "
               "transformers keeps it in fp32, twice the bytes")


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (bases 2..37): the primes transformers'
    `_find_nth_prime_after` finds by trial division, in bounded time."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in bases:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes_after(start: int, count: int) -> list[int]:
    out: list[int] = []
    p = start
    while len(out) < count:
        p += 1
        if _is_prime(p):
            out.append(p)
    return out


def _hyper(prefix: str, hidden: int, hc: int, rank: int, layers: list[int] | None,
           combine: bool) -> list[ExtraTensor]:
    """`Qwen4ExpTextGatedResidual`: a grouped RMSNorm over the hc × hidden streams, the
    low-rank input mixer (down to hc_lowrank, back up) and, with combine, the hc-row
    injection weight."""
    wide = hc * hidden
    out = [extra(f"{prefix}.hc_norm.weight", [wide], layers=layers),
           extra(f"{prefix}.input_mix_weight_down.weight", [rank, wide], linear=True,
                 layers=layers),
           extra(f"{prefix}.input_mix_weight_up.weight", [wide, rank], linear=True,
                 layers=layers)]
    if combine:
        out.append(extra(f"{prefix}.block_inject_weight.weight", [hc, wide], linear=True,
                         layers=layers))
    return out


def _ple(c: HFConfig, hidden: int, hc: int, ple_layers: list[int]) -> list[ExtraTensor]:
    """`Qwen4ExpTextPLELayer` on each PLE layer: the n-gram table (`Qwen4ExpTextNGramEmbedding`:
    (ngram_size - 1) × heads_per_ngram hashed heads, head g of the model taking the g-th
    prime after ngram_vocab_size_base - 1 rows, the layer's rows padded up to
    make_ngram_vocab_size_divisible_by, each row ple_embed_dim / heads wide), key and value
    projections from ple_embed_dim, three grouped RMSNorms over the streams and a depthwise
    convolution of ple_conv_kernel_size taps."""
    ngram = c.integer("ngram_size", minimum=2)
    heads = (ngram - 1) * c.integer("heads_per_ngram")
    dim = c.integer("ple_embed_dim", hidden)
    if dim % heads:
        raise InputError(f"{c.label}: ple_embed_dim",
                         f"{dim} must divide into the {heads} n-gram heads")
    if heads * len(ple_layers) > _MAX_NGRAM_HEADS:
        raise InputError(f"{c.label}: heads_per_ngram",
                         f"at most {_MAX_NGRAM_HEADS} n-gram heads over all PLE layers")
    base = c.integer("ngram_vocab_size_base", minimum=2)  # bounds.CONFIG_KEYS bounds it
    divisor = c.integer("make_ngram_vocab_size_divisible_by")
    kernel = c.integer("ple_conv_kernel_size")
    primes = _primes_after(base - 1, heads * len(ple_layers))
    wide = hc * hidden
    out: list[ExtraTensor] = []
    for n, layer in enumerate(ple_layers):
        rows = sum(primes[n * heads:(n + 1) * heads])
        rows = -(-rows // divisor) * divisor
        p = f"layers.{layer}.ple"
        # Held as (rows / divisor, divisor, width): the same elements, each dimension within
        # the bound on one (the released table has hundreds of millions of rows, stored in
        # split_ngram_parts shards that loading concatenates).
        out += [extra(f"{p}.ple_embedding.ngram_embedding.weight",
                      [rows // divisor, divisor, dim // heads]),
                extra(f"{p}.key_proj.weight", [wide, dim], linear=True),
                extra(f"{p}.value_proj.weight", [hidden, dim], linear=True),
                extra(f"{p}.conv1d.weight", [wide, 1, kernel])]
        out += [extra(f"{p}.{name}.weight", [wide])
                for name in ("norm_key", "norm_query", "norm_conv")]
    return out


def _indexer(c: HFConfig, types: list[str]) -> Indexer | None:
    """QSA's indexer (`Qwen4ExpTextQSAIndexer`): one fused projection of (indexer_n_heads +
    1) × indexer_head_dim from the hidden state and RMS norms on query and key, as many
    weights as MiniMax-M3's split projections; one key of indexer_head_dim cached per token
    (`update_indexer`). Every attention layer is indexed, so the five keys are required."""
    if "indexed_gqa" not in types:
        return None
    keys = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
            "indexer_compress_ratio")
    missing = [k for k in keys if c.raw(k) is None]
    if missing:
        raise InputError(f"{c.label}: {missing[0]}", "attention layers are QSA layers in "
                         "Qwen4-Exp and need all of " + ", ".join(keys))
    if c.integer("indexer_kv_heads") != 1:
        raise InputError(f"{c.label}: indexer_kv_heads", "Qwen4-Exp QSA requires 1")
    budget, ratio = c.integer("indexer_budget"), c.integer("indexer_compress_ratio")
    if budget % ratio:
        raise InputError(f"{c.label}: indexer_budget",
                         f"must be a multiple of indexer_compress_ratio ({ratio})")
    return Indexer(heads=c.integer("indexer_n_heads"), head_dim=c.integer("indexer_head_dim"),
                   topk=budget)


def _stack(c: HFConfig) -> tuple[Stack, list[int]]:
    hidden = c.integer("hidden_size")
    layers = c.integer("num_hidden_layers")
    names = c.str_list("layer_types")
    if names is None:
        interval = c.integer("full_attention_interval", 4)
        names = ["linear_attention" if (i + 1) % interval else "indexed_attention"
                 for i in range(layers)]
    else:
        c.superseded("full_attention_interval")
    if len(names) != layers:
        raise InputError(f"{c.label}: layer_types",
                         f"has {len(names)} entries for {layers} layers")
    unknown = sorted(set(names) - set(_KINDS))
    if unknown:
        raise InputError(f"{c.label}: layer_types", f"unknown layer type {unknown[0]!r}; "
                         "known: linear_attention, indexed_attention")
    types = [_KINDS[n] for n in names]
    gate = c.raw("output_gate_type") or c.raw("hidden_act", "silu")
    if gate not in ("sigmoid", "silu"):
        raise InputError(f"{c.label}: output_gate_type", "must be sigmoid or silu")
    hc, rank = c.integer("hc_count", minimum=2), c.integer("hc_lowrank")
    ple_ids = sorted(set(c.int_list("ple_layer_ids") or []))
    bad = [i for i in ple_ids if not 1 <= i <= layers or types[i - 1] != LayerKind.GDN]
    if bad:
        raise InputError(f"{c.label}: ple_layer_ids", f"layer {bad[0]} is not a one-indexed "
                         "linear_attention layer")
    ple_layers = [i - 1 for i in ple_ids]
    if not ple_layers:  # no PLE layer: the n-gram tables' shape keys shape nothing
        c.superseded("ple_embed_dim", "ple_conv_kernel_size", "ngram_size", "heads_per_ngram",
                     "ngram_vocab_size_base", "make_ngram_vocab_size_divisible_by")
    tensors = (_hyper("layers.{i}.attn_hyper_connection", hidden, hc, rank,
                      list(range(layers)), True)
               + _hyper("layers.{i}.mlp_hyper_connection", hidden, hc, rank,
                        list(range(layers)), True)
               + _hyper("hyper_connection_mixer", hidden, hc, rank, None, False)
               + (_ple(c, hidden, hc, ple_layers) if ple_layers else []))
    experts = c.integer("num_experts")
    dtype = c.dtype
    bias = c.flag("attention_bias")
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=c.integer("num_attention_heads"),
        kv_heads=c.integer("num_key_value_heads"), head_dim=c.integer("head_dim"),
        intermediate_size=0, vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"),
        # No input or post-attention norms: each hyper-connection's hc_norm stands in, and
        # the final mixer replaces the final norm (`Qwen4ExpTextDecoderLayer`).
        norms_per_layer=0, final_norm=False,
        qkv_bias=bias, o_bias=bias, qk_norm="head", attn_output_gate=True,
        partial_rotary_factor=partial_rotary(c), rope_scaling=rope_scaling(c),
        layer_types=types, indexer=_indexer(c, types),
        linear_attention=gated_delta_net(c, dtype, fused=False),
        moe=MoE(experts=experts, top_k=c.integer("num_experts_per_tok"),
                expert_intermediate_size=c.integer("moe_intermediate_size"),
                shared_experts=1,
                shared_intermediate_size=c.integer("shared_expert_intermediate_size"),
                shared_expert_gate=True, layers=list(range(layers))),
        extra=tensors,
    )
    return stack, ple_layers


def _notes(c: HFConfig, ple_layers: list[int]) -> list[str]:
    notes = [NO_ENGINE]
    if not c.has("mamba_ssm_dtype"):
        notes.append(STATE_DTYPE)
    if ple_layers:
        notes.append(PLE_STATE)
    return notes


def _finish(spec: ModelSpec, ple_layers: list[int]) -> ModelSpec:
    if ple_layers:
        return spec.model_copy(update={"state_estimated": PLE_STATE})
    return spec


def qwen4_exp_text(c: HFConfig) -> ModelSpec:
    """Qwen4-Exp's language model (`Qwen4ExpForCausalLM`)."""
    stack, ple = _stack(c)
    return _finish(decoder_model(c, stack, notes=_notes(c, ple)), ple)


def qwen4_exp(c: HFConfig) -> ModelSpec:
    """Qwen4-Exp with vision (`Qwen4ExpForConditionalGeneration`): the language model and
    Qwen3.5-MoE's vision tower (`Qwen4ExpVisionModel` is `Qwen3_5MoeVisionModel`)."""
    _, text = sub_config(c, "text_config", "qwen4_exp_text")
    stack, ple = _stack(text)
    stack = stack.model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings")})
    return _finish(vlm_model(c, stack, _vision(c, "qwen4_exp_vision"), text,
                             notes=_notes(text, ple)), ple)
