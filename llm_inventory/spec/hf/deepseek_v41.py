"""DeepSeek-V4.1 (`deepseek_v41`, `deepseek_v41_text`): the classes of transformers' main
branch at commit 0a2080b43eb64e6d448186a4f3f0bc9c618f4797 (`models/deepseek_v41`,
`DeepseekV41ForCausalLM`; transformers 5.25 has none). Every layer attends over a sliding
window of one K = V latent; layers with a compress ratio also read their group's shared
compressed KV, which only the group's source layer computes and keeps (kinds `csa2` and
`csa2_source`); manifold-constrained hyper-connections around every block; a MoE on every
layer; Engram n-gram hash tables on `engram_layer_ids`.

What the checkpoint holds that transformers (and so this count) leaves out, each noted:
the DSpark draft layers (`num_nextn_predict_layers`, `mtp.*`) and the vision tower with its
aligner and image delimiters (`vision.*`, `aligner.*`, `image_*`), which that commit's
`_keys_to_ignore_on_load_unexpected` drops ("their modules land in follow-up PRs").
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    decoder_model,
    extra,
    rope_scaling,
    sub_config,
)
from llm_inventory.spec.model import (
    Component,
    Compression,
    ExtraTensor,
    Indexer,
    LayerOverride,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

_SOURCE = "transformers main @0a2080b (models/deepseek_v41)"
# DeepseekV41TextConfig's released schedule, used when compress_ratios is absent and the
# model has its 40 layers (`default_compress_ratios` and friends).
_RELEASED_RATIOS = [0, 0] + [2] * 18 + [1] * 20
_RELEASED_KV_SOURCES = [2, 8, 14, 20]
_RELEASED_INDEX_SOURCES = [2, 8, 14, 20, 24, 28, 32, 36]
# The engram table's scales: one per `block_size` channels (DeepseekV41EngramEmbedding).
_ENGRAM_SCALE_BLOCK = 32
# A table's rows are listed in blocks of this many (one tensor dimension stays within the
# bound on one; the released tables have 384 million rows): the same elements.
_ROW_BLOCK = 4096


def _fail(c: HFConfig, key: str, message: str) -> InputError:
    return InputError(f"{c.label}: {key}", message)


def _ratios(c: HFConfig, layers: int, nextn: int) -> list[int]:
    """`compress_ratios` for the backbone (`DeepseekV41TextConfig.__post_init__`): the file's
    list (num_hidden_layers entries, optionally the draft layers' after them); else the
    released schedule at 40 layers; else that pattern scaled: two sliding-only layers, a
    ratio-2 block of (n − 1) ÷ 2 layers, then ratio 1."""
    ratios = c.int_list("compress_ratios")
    if ratios is None:
        if layers == len(_RELEASED_RATIOS):
            return list(_RELEASED_RATIOS)
        slide = min(2, layers)
        enc = max(0, (layers - slide + 1) // 2)
        return [0] * slide + [2] * enc + [1] * max(0, layers - slide - enc)
    if not layers <= len(ratios) <= layers + nextn:
        raise _fail(c, "compress_ratios", f"needs num_hidden_layers ({layers}) entries, up to "
                    f"{layers + nextn} with the draft layers', got {len(ratios)}")
    return ratios[:layers]


def _sources(c: HFConfig, ratios: list[int]) -> tuple[list[int], list[int]]:
    """(KV sources, index sources), with `DeepseekV41TextConfig.__post_init__`'s defaults
    and checks: the released lists on the released schedule; else the first layer of each
    run of equal nonzero ratios owns the group, and the index sources are the KV sources."""
    n = len(ratios)
    kv = c.int_list("kv_source_layer_ids")
    if kv is None:
        kv = list(_RELEASED_KV_SOURCES) if ratios == _RELEASED_RATIOS[:n] else [
            i for i in range(n) if ratios[i] > 0 and (i == 0 or ratios[i - 1] != ratios[i])]
    index = c.int_list("index_source_layer_ids")
    if index is None:
        index = list(_RELEASED_INDEX_SOURCES) if kv == _RELEASED_KV_SOURCES else list(kv)
    if any(i >= n or ratios[i] == 0 for i in kv):
        raise _fail(c, "kv_source_layer_ids", f"each must be a layer below {n} with "
                    f"compress_ratios > 0, got {kv}")
    if any(i >= n or ratios[i] == 0 for i in index):
        raise _fail(c, "index_source_layer_ids", f"each must be a layer below {n} with "
                    f"compress_ratios > 0, got {index}")
    if any(i not in kv and not any(s < i for s in kv) for i in index):
        raise _fail(c, "index_source_layer_ids", "each needs a kv_source_layer_ids entry "
                    f"at or before it, got {index}")
    if any(ratios[i] > 0 and not any(s <= i for s in kv) for i in range(n)):
        raise _fail(c, "kv_source_layer_ids", "every layer with compress_ratios > 0 needs a "
                    "KV source at or before it")
    candidate = c.raw("candidate_source_layer_id")
    if candidate is not None and (isinstance(candidate, bool) or not isinstance(candidate, int)
                                  or (candidate >= 0 and candidate not in index)):
        raise _fail(c, "candidate_source_layer_id", "must be one of index_source_layer_ids "
                    f"{index}, or negative, got {candidate!r}")
    return sorted(set(kv)), sorted(set(index))


def _hyper(hidden: int, mult: int, layers: int) -> list[ExtraTensor]:
    """mHC around attention and MoE (`DeepseekV41DecoderLayer`): `hc_{attn,ffn}_fn`
    ((2 + n) × n rows over the n × hidden streams), `_base` and three `_scale`s; the final
    collapse reuses the last mix, with no parameters of its own."""
    rows, every = (2 + mult) * mult, list(range(layers))
    out = []
    for site in ("attn", "ffn"):
        out += [extra(f"layers.{{i}}.hc_{site}_fn", [rows, mult * hidden], layers=every),
                extra(f"layers.{{i}}.hc_{site}_base", [rows], layers=every),
                extra(f"layers.{{i}}.hc_{site}_scale", [3], layers=every)]
    return out


def _rows(name: str, rows: int, width: int, layer: int) -> list[ExtraTensor]:
    """A table of `rows` × `width` on `layer`, split like an embedding over TP ranks, listed
    in blocks of _ROW_BLOCK rows plus the remainder."""
    blocks, tail = divmod(rows, _ROW_BLOCK)
    out = []
    if blocks:
        out.append(extra(name, [blocks, _ROW_BLOCK, width], layers=[layer], shard=Shard.VOCAB,
                         component=Component.EMBEDDINGS))
    if tail:
        out.append(extra(f"{name}[tail]", [tail, width], layers=[layer], shard=Shard.VOCAB,
                         component=Component.EMBEDDINGS))
    return out


def _engram(c: HFConfig, hidden: int, mult: int, layers: int) -> list[ExtraTensor]:
    """`DeepseekV41Engram` on each engram layer: its hash table (`embed.weight`,
    engram_num_embeddings[k] rows of engram_head_dim, and `embed.scale`, one scale per 32
    channels per row: both parameters), `wkv` ((max_ngram − 1) × heads rows looked up,
    concatenated, to hc_mult + 1 widths of hidden) and the `q_weight` / `k_weight` gates
    (hc_mult × hidden)."""
    ids = c.int_list("engram_layer_ids") or []
    sizes = c.int_list("engram_num_embeddings")
    sizes = [0] * len(ids) if sizes is None else sizes
    if len(sizes) != len(ids):
        raise _fail(c, "engram_num_embeddings", f"needs one entry per engram layer "
                    f"({len(ids)}), got {len(sizes)}")
    if any(i >= layers for i in ids) or len(set(ids)) != len(ids):
        raise _fail(c, "engram_layer_ids", f"must be distinct layers below {layers}, got {ids}")
    if not ids:
        # no engram layer: the table's shape keys size nothing
        c.superseded("engram_head_dim", "engram_max_ngram_size", "engram_n_heads")
        return []
    dim = c.integer("engram_head_dim")
    columns = (c.integer("engram_max_ngram_size", minimum=2) - 1) * c.integer("engram_n_heads")
    out: list[ExtraTensor] = []
    for layer, rows in zip(ids, sizes, strict=True):
        p = f"layers.{layer}.engram"
        if rows:
            out += _rows(f"{p}.embed.weight", rows, dim, layer)
            if dim // _ENGRAM_SCALE_BLOCK:
                out += _rows(f"{p}.embed.scale", rows, dim // _ENGRAM_SCALE_BLOCK, layer)
        out += [extra(f"{p}.wkv.weight", [hidden * (mult + 1), columns * dim], linear=True,
                      layers=[layer]),
                extra(f"{p}.q_weight", [mult, hidden], layers=[layer]),
                extra(f"{p}.k_weight", [mult, hidden], layers=[layer])]
    return out


def _language_model(c: HFConfig) -> tuple[Stack, list[str]]:
    """`DeepseekV41TextModel` under `DeepseekV41ForCausalLM`'s head (never tied: the class
    declares no tied weights)."""
    layers, hidden = c.integer("num_hidden_layers"), c.integer("hidden_size")
    heads, head_dim = c.integer("num_attention_heads"), c.integer("head_dim")
    rope = c.integer("qk_rope_head_dim")
    nextn = c.integer("num_nextn_predict_layers", minimum=0)
    mult = c.integer("hc_mult")
    if rope > head_dim:
        raise _fail(c, "qk_rope_head_dim", f"must be at most head_dim ({head_dim}), got {rope}")
    ratios = _ratios(c, layers, nextn)
    kv, index = _sources(c, ratios)
    c.superseded("layer_types")  # __post_init__ rebuilds it from kv_source_layer_ids
    overrides = [LayerOverride(layers=[i for i in range(layers) if ratios[i] == r],
                               compress_ratio=r) for r in sorted(set(ratios) - {0})]
    readers = [i for i in range(layers) if i not in index]
    if readers:
        overrides.append(LayerOverride(layers=readers, shares_indexer=True))
    notes = []
    shared = c.integer("n_shared_experts", minimum=0)
    if shared != 1:
        notes.append(f"n_shared_experts is {shared}; DeepseekV41SparseMoeBlock builds one "
                     "shared expert of moe_intermediate_size whatever it says, and so does "
                     "this count")
    if c.flag("tie_word_embeddings"):
        notes.append("tie_word_embeddings is true, but DeepseekV41ForCausalLM declares no "
                     "tied weights: its output head is its own")
    experts = c.integer("n_routed_experts")
    stack = Stack(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        kv_heads=1,
        head_dim=head_dim,
        intermediate_size=c.integer("moe_intermediate_size"),
        vocab_size=c.integer("vocab_size"),
        layer_types=["csa2_source" if i in kv else "csa2" for i in range(layers)],
        sliding_window=c.integer("sliding_window"),
        partial_rotary_factor=rope / head_dim,
        rope_scaling=rope_scaling(c),
        compression=Compression(q_lora_rank=c.integer("q_lora_rank"),
                                o_groups=c.integer("o_groups"),
                                o_lora_rank=c.integer("o_lora_rank"), rope_dim=rope),
        indexer=Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                        topk=c.integer("index_topk")),
        moe=MoE(experts=experts, top_k=c.integer("num_experts_per_tok"),
                expert_intermediate_size=c.integer("moe_intermediate_size"),
                router_bias=True, shared_experts=1,
                shared_intermediate_size=c.integer("moe_intermediate_size")),
        overrides=overrides,
        extra=[*_hyper(hidden, mult, layers),
               extra("layers.{i}.mlp.gate.bias_vl", [experts], layers=list(range(layers)),
                     component=Component.ROUTER),
               *_engram(c, hidden, mult, layers)],
    )
    sizes = c.int_list("engram_num_embeddings") or []
    if any(sizes):
        notes.append("the Engram hash tables (engram_num_embeddings rows of engram_head_dim, "
                     "and their per-32-channel scales, which transformers also holds as "
                     "parameters) are counted as weights on their layers, split over tensor-"
                     "parallel ranks like an embedding, and as active, as transformers' "
                     "count has it, though a token reads only (engram_max_ngram_size − 1) × "
                     "engram_n_heads rows of each. TensorRT-LLM keeps them elsewhere: its "
                     "DeepseekV41Engram (tensorrt_llm/_torch/models/modeling_deepseekv41.py) "
                     "looks them up from FP8 table shards in pinned host memory, so for it "
                     "the device weights here overstate by the tables' bytes")
    if nextn:
        notes.append(f"the checkpoint also holds {nextn} DSpark draft layer(s) (mtp.*: "
                     "each with its own MoE of dspark_n_routed_experts, and Markov and "
                     f"confidence heads); {_SOURCE} does not build them (it drops mtp.* on "
                     "load), so the count leaves them out, as it does other models' MTP "
                     "layers that transformers does not build")
    notes.append("state: every layer keeps a sliding window of one K = V vector of head_dim; "
                 "each KV-source layer also keeps its group's compressed entries (head_dim "
                 "per compress ratio tokens) and, on an index source, their indexer keys "
                 "(index_head_dim each), as DeepseekV41CSACache does. vLLM has no "
                 "DeepSeek-V4.1 model file (its tree has deepseek_v4.py, no deepseek_v41); "
                 "TensorRT-LLM serves it (modeling_deepseekv41.py, CSA2 attention) with a "
                 "paged layout this count has not read: this is transformers' cache at the "
                 "KV dtype, not an engine's")
    return stack, notes


def deepseek_v41_text(c: HFConfig) -> ModelSpec:
    """A flat DeepSeek-V4.1 text config: `DeepseekV41ForCausalLM` built on it (the class
    unwraps a composite's text config and takes a text config as it is)."""
    stack, notes = _language_model(c)
    return decoder_model(c, stack, notes=notes)


def deepseek_v41(c: HFConfig) -> ModelSpec:
    """The composite `DeepseekV41Config`: `DeepseekV41ForCausalLM` builds the text model of
    its `text_config` (the class's defaults when absent) and nothing of its
    `vision_config`."""
    _, text = sub_config(c, "text_config", "deepseek_v41_text")
    stack, notes = _language_model(text)
    if c.has("vision_config"):
        # opened, so its keys are judged (irrelevant.py: nothing is built from them)
        sub_config(c, "vision_config", "deepseek_v41_vision")[1].raw("model_type")
        notes.append("the checkpoint's vision tower, aligner and image delimiters (vision.*, "
                     f"aligner.*, image_start/end/newline) are not built by {_SOURCE}, which "
                     "drops them on load; the count leaves them out and reads no image "
                     "tokens")
    c.superseded("tie_word_embeddings")  # DeepseekV41ForCausalLM ties nothing
    spec = decoder_model(c, stack, notes=notes)
    return spec.model_copy(update={"max_context": text.integer("max_position_embeddings")})
