"""GLM-5.3-Flash (transformers 5.25 `models/glm5_next`): `Glm5NextForConditionalGeneration`,
a vision tower and `Glm5NextTextModel`, whose layers are Kimi Delta Attention or GLM-5's
sparse MLA with a pooled indexer, each followed by a dense MLP or routed experts, with
manifold-constrained hyper-connections (the Sinkhorn mix) around both blocks.

`glm5_next_text` is the language model (transformers has no model class of its own for it:
it is built inside `glm5_next`); `glm5_next` is the composite.
"""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    decoder_model,
    extra,
    linear,
    norm,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.hf.vision import vit
from llm_inventory.spec.model import (
    MLA,
    Component,
    Encoder,
    ExtraTensor,
    Indexer,
    LayerKind,
    LayerOverride,
    LinearAttention,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

_KINDS = {"linear_attention": LayerKind.KDA, "indexed_attention": LayerKind.POOLED_DSA}

# The DSA layers' indexer record per token is transformers' layout, no engine's (see
# engine/kinds/pooled_dsa.py): the state built from it is an estimate for serving.
STATE_ASSUMED = ("the sparse-attention layers' indexer record per token (key, pool-gate "
                 "score and validity flag: 2 × index_head_dim + 1 elements at the cache "
                 "dtype) is transformers 5.25's cache (Glm5NextTextIndexer, "
                 "DynamicIndexedLayer); no serving engine's layout for GLM-5.3's pooled "
                 "indexer was read, so the state per token is an estimate for engines")


def _layer_kinds(c: HFConfig, layers: int) -> list[str]:
    """`layer_types` ("linear_attention" for KDA, "indexed_attention" or its old name
    "full_attention" for DSA), else KDA on every layer but each fourth (i % 4 == 3)
    (`Glm5NextTextConfig.__post_init__`)."""
    names = c.str_list("layer_types")
    if names is None:
        names = ["indexed_attention" if i % 4 == 3 else "linear_attention"
                 for i in range(layers)]
    names = ["indexed_attention" if n == "full_attention" else n for n in names]
    if len(names) != layers or set(names) - set(_KINDS):
        raise InputError(f"{c.label}: layer_types", f"needs {layers} entries of "
                         "linear_attention or indexed_attention")
    return [_KINDS[n] for n in names]


def _indexer_modes(c: HFConfig, layers: int) -> list[str]:
    """Per layer "full" (runs its own indexer) or "shared" (reuses the previous full
    layer's top-k): `indexer_types`, else `index_topk_pattern` (a string of F and S, or a
    list), else "full" where max(i − index_skip_topk_offset + 1, 0) is a multiple of
    index_topk_freq (offset 2 and frequency 1 when unset: every layer full)
    (`Glm5NextTextConfig.__post_init__`)."""
    modes = c.str_list("indexer_types")
    pattern = c.raw("index_topk_pattern")
    if modes is not None:
        c.superseded("index_topk_pattern", "index_topk_freq", "index_skip_topk_offset")
    elif pattern is not None:
        c.superseded("index_topk_freq", "index_skip_topk_offset")
        letters = {"F": "full", "S": "shared"}
        if isinstance(pattern, str) and not set(pattern) - set(letters):
            modes = [letters[ch] for ch in pattern]
        else:
            modes = c.str_list("index_topk_pattern")
            if modes is None:
                raise InputError(f"{c.label}: index_topk_pattern",
                                 "must be a string of F and S, or a list of full and shared")
    else:
        # Not fields of the class: __post_init__ reads them as kwargs with these defaults.
        freq = max(c.integer("index_topk_freq", 1, minimum=0), 1)
        offset = c.integer("index_skip_topk_offset", 2, minimum=0)
        modes = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared"
                 for i in range(layers)]
    if len(modes) < layers or set(modes[:layers]) - {"full", "shared"}:
        raise InputError(f"{c.label}: indexer_types",
                         f"needs full or shared for each of the {layers} layers")
    return modes[:layers]


def _moe_layers(c: HFConfig, layers: int) -> list[int]:
    """`mlp_layer_types` ("sparse" layers), else the first min(3, layers) dense and the
    rest sparse (`Glm5NextTextConfig.__post_init__`)."""
    names = c.str_list("mlp_layer_types")
    if names is None:
        return list(range(min(3, layers), layers))
    if len(names) != layers or set(names) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"needs {layers} entries of dense or sparse")
    return [i for i, name in enumerate(names) if name == "sparse"]


def _linear_attention(c: HFConfig) -> LinearAttention:
    """`Glm5NextTextLinearAttention` (Kimi Linear's KDA: low-rank forget and output gates,
    conv1d without bias): linear_head_dim, linear_num_heads and linear_conv_kernel_dim, or
    linear_attn_config's head_dim, num_heads and short_conv_kernel_size where a checkpoint
    gives it (they win, as `__post_init__` says)."""
    given = c.sub("linear_attn_config") if c.has("linear_attn_config") else None

    def read(key: str, own: str) -> int:
        if given is not None and given.has(key):
            c.superseded(own)
            return given.integer(key)
        return c.integer(own)

    return LinearAttention(
        key_heads=read("num_heads", "linear_num_heads"),
        key_head_dim=read("head_dim", "linear_head_dim"),
        conv_kernel=read("short_conv_kernel_size", "linear_conv_kernel_dim"),
        # KDA's recurrent state is fp32 (transformers casts it; vLLM kda_state_dtype); the
        # conv window is kept at the model dtype (transformers' LinearAttentionLayer).
        state_dtype="fp32", conv_dtype=c.dtype)


def _hyper_connections(c: HFConfig, hidden: int, layers: int) -> list[ExtraTensor]:
    """`Glm5NextTextHyperConnection` around attention (`attn_hc`) and the MLP (`ffn_hc`) of
    every layer: `fn` of (2 + hc_mult) × hc_mult rows over the hc_mult × hidden streams
    (pre, post and the hc_mult × hc_mult Sinkhorn mix), `base` of as many entries and three
    scales. The final collapse (`Glm5NextTextHyperHead`) is a mean: no weights."""
    mult, every = c.integer("hc_mult"), list(range(layers))
    rows = (2 + mult) * mult
    out: list[ExtraTensor] = []
    for block in ("attn_hc", "ffn_hc"):
        out += [extra(f"layers.{{i}}.{block}.fn", [rows, mult * hidden], layers=every),
                extra(f"layers.{{i}}.{block}.base", [rows], layers=every),
                extra(f"layers.{{i}}.{block}.scale", [3], layers=every)]
    return out


def glm5_next_text(c: HFConfig) -> ModelSpec:
    """The language model alone (`_language_model`). transformers has no model class with
    a head for it: inside `Glm5NextForConditionalGeneration` the head is tied by the
    composite's own `tie_word_embeddings` (False by default), never by the text config's, so
    here the head is the composite's default one, untied."""
    spec = _language_model(c)
    assert spec.decoder is not None
    notes = list(spec.notes)
    if spec.decoder.tied_embeddings:
        notes.append("tie_word_embeddings is true in the text config, but transformers ties "
                     "the output head by the composite's flag (Glm5NextConfig, false by "
                     "default): the head is its own")
    return spec.model_copy(update={
        "decoder": spec.decoder.model_copy(update={"tied_embeddings": False}),
        "notes": notes})


def _language_model(c: HFConfig) -> ModelSpec:
    """`Glm5NextTextModel` under `Glm5NextForConditionalGeneration`'s head:

    - KDA layers (`Glm5NextTextLinearAttention`) where `layer_types` says
      "linear_attention"; the others `Glm5NextTextAttention`: MLA with query LoRA and no
      rotary part (NoPE; `validate_architecture` refuses a rope dim), `num_key_value_heads`
      equal to the heads, and on "full" `indexer_types` layers the pooled DSA indexer
      (`kinds/pooled_dsa.py`);
    - `Glm5NextTextMoE` on "sparse" `mlp_layer_types` layers (routed experts of
      `moe_intermediate_size`, one shared MLP of n_shared_experts × moe_intermediate_size,
      a router weight; its correction bias is a buffer), `Glm5NextTextMLP` of
      `intermediate_size` on the others;
    - two RMSNorms per layer, the hyper-connections, a final RMSNorm, and the output head
      (tied as the caller says).

    The checkpoint's multi-token-prediction layer (`layers.45`) is ignored on load
    (`_keys_to_ignore_on_load_unexpected`): transformers builds none.

    Engines: SGLang pages the KDA layers' conv window and recurrent state per sequence
    (`Glm5NextTextConfig.mamba2_cache_params`: `KimiLinearStateShape`,
    python/sglang/srt/configs/glm5_next.py) and builds the others as MLA in its sparse
    attention pool (`Glm5NextDecoderLayer`, python/sglang/srt/models/glm5_next.py); vLLM's
    main tree has no glm5_next model. The indexer record those layers keep per token is
    transformers' (see `kinds/pooled_dsa.py`), hence `state_estimated`."""
    layers = c.integer("num_hidden_layers")
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    if c.integer("num_key_value_heads", heads) != heads:
        raise InputError(f"{c.label}: num_key_value_heads",
                         f"must equal num_attention_heads ({heads}), as the class requires")
    kinds = _layer_kinds(c, layers)
    modes = _indexer_modes(c, layers)
    shared = [i for i in range(layers) if kinds[i] == LayerKind.POOLED_DSA
              and modes[i] == "shared"]
    q_rank = c.opt_integer("q_lora_rank")
    if q_rank is None:
        raise InputError(f"{c.label}: q_lora_rank",
                         "is required: the sparse-attention indexer reads the query latent")
    rope = c.integer("qk_rope_head_dim", minimum=0)
    if rope:
        raise InputError(f"{c.label}: qk_rope_head_dim",
                         f"must be 0 (the sparse-attention layers are NoPE), got {rope}")
    mla = MLA(kv_lora_rank=c.integer("kv_lora_rank"), qk_rope_head_dim=0,
              qk_nope_head_dim=c.integer("qk_nope_head_dim"),
              v_head_dim=c.integer("v_head_dim"), q_lora_rank=q_rank)
    pool, topk = c.integer("index_kpool"), c.integer("index_topk")
    if topk % pool:
        raise InputError(f"{c.label}: index_topk",
                         f"must be a multiple of index_kpool ({pool}), got {topk}")
    indexer = Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                      topk=topk, pool=pool)
    size = c.integer("moe_intermediate_size")
    shared_experts = c.integer("n_shared_experts", minimum=0)
    sparse = _moe_layers(c, layers)
    moe = MoE(experts=c.integer("n_routed_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=size, shared_experts=1 if shared_experts else 0,
              shared_intermediate_size=size * shared_experts, layers=sparse) if sparse else None
    bias = c.flag("attention_bias")
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads, kv_heads=heads,
        head_dim=mla.qk_nope_head_dim, v_head_dim=mla.v_head_dim,
        intermediate_size=c.integer("intermediate_size"), vocab_size=c.integer("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings"), qkv_bias=bias, o_bias=bias,
        rope=False, layer_types=[str(k) for k in kinds], mla=mla, indexer=indexer,
        linear_attention=_linear_attention(c), moe=moe,
        overrides=[LayerOverride(layers=shared, shares_indexer=True)] if shared else [],
        extra=_hyper_connections(c, hidden, layers))
    notes: list[str] = []
    mtp = c.opt_integer("num_nextn_predict_layers", minimum=0)
    if mtp:
        notes.append(f"the checkpoint also holds {mtp} multi-token-prediction layer(s) "
                     "transformers does not build (ignored on load): they are neither "
                     "counted nor described")
    spec = decoder_model(c, stack, notes=notes)
    return spec.model_copy(update={"state_estimated": STATE_ASSUMED})


def _tower(v: HFConfig) -> Stack:
    """`Glm5NextVisionModel`'s layers (transformers 5.25 models/glm5_next): a Conv3d patch
    embedding (temporal_patch_size × patch_size², with bias), blocks of RMS pre-norms,
    fused qkv and an output projection (biased as `attention_bias`), per-head q/k RMSNorms,
    a gated MLP (biased as `attention_bias`), 2-D rotary positions (no weights), and a
    final RMSNorm (`post_layernorm`)."""
    hidden, channels = v.integer("hidden_size"), v.integer("in_channels")
    patch, frames = v.integer("patch_size"), v.integer("temporal_patch_size")
    bias = v.flag("attention_bias")
    stem = [extra("patch_embed.proj.weight", [hidden, channels, frames, patch, patch]),
            extra("patch_embed.proj.bias", [hidden])]
    stack = vit(v, layers=v.integer("depth"), heads_key="num_heads", mlp="gated", bias=bias,
                norm="rms", rope=True, extra=stem)
    return stack.model_copy(update={"qk_norm": "head"})


def _projector(v: HFConfig) -> list[ExtraTensor]:
    """After the tower: `downsample`, a merge × merge strided Conv2d (hidden →
    out_hidden_size, with bias), then `Glm5NextVisionPatchMerger`: `proj` (out → out, no
    bias), a LayerNorm, and a gated MLP to `projection_intermediate_size` and back, no
    biases."""
    hidden, out = v.integer("hidden_size"), v.integer("out_hidden_size")
    merge, inner = v.integer("spatial_merge_size"), v.integer("projection_intermediate_size")
    p = Component.PROJECTOR
    tensors = [extra("downsample.weight", [out, hidden, merge, merge], linear=True,
                     component=p),
               extra("downsample.bias", [out], component=p)]
    tensors += linear("merger.proj", out, out, bias=False, component=p)
    tensors += norm("merger.post_projection_norm", out, bias=True, component=p)
    tensors += linear("merger.gate_proj", inner, out, bias=False, shard=Shard.COLUMN,
                      component=p)
    tensors += linear("merger.up_proj", inner, out, bias=False, shard=Shard.COLUMN,
                      component=p)
    tensors += linear("merger.down_proj", out, inner, bias=False, shard=Shard.ROW,
                      component=p)
    return tensors


def glm5_next(c: HFConfig) -> ModelSpec:
    """`Glm5NextForConditionalGeneration`: the tower above with its downsampling conv and
    patch merger, and the `glm5_next_text` language model. transformers reads a file with
    no `text_config` as a flat text-only checkpoint (its top-level keys are the text
    config) and still builds the default tower (`Glm5NextConfig.__post_init__`).

    The tokens an image becomes follow its patches merged merge × merge; the processor's
    own resizing (`smart_resize` in image_processing_glm5_next.py: sides aligned up to whole
    merged patches within a pixel budget) is not applied, so image tokens are an estimate."""
    _, v = sub_config(c, "vision_config")
    if c.has("text_config"):
        _, text = sub_config(c, "text_config", "glm5_next_text")
    else:  # a flat checkpoint: the top-level keys are the text config's
        text = _flat_text(c)
    language = _language_model(text)
    decoder = language.decoder
    assert decoder is not None
    media = Media(patch_size=v.integer("patch_size"),
                  temporal_patch_size=v.integer("temporal_patch_size"),
                  spatial_merge_size=v.integer("spatial_merge_size"))
    encoder = Encoder(kind="vision", stack=_tower(v), media=media, projector=_projector(v))
    tied = c.flag("tie_word_embeddings")
    notes = [*language.notes, "image tokens are an estimate: the patches merged "
             "spatial_merge_size × spatial_merge_size; the processor's smart_resize and "
             "pixel budget are not applied"]
    spec = vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     notes)
    return spec.model_copy(update={"state_estimated": language.state_estimated})


def _flat_text(c: HFConfig) -> HFConfig:
    """The text config of a flat file: its own keys over `Glm5NextTextConfig`'s defaults
    (transformers passes the top-level keys to that class, so a key the file lacks, shape
    keys included, takes the class's value, as in an absent text_config), read under the
    file's label so every key read there counts as read."""
    from llm_inventory.spec.hf.defaults import class_defaults

    cls = class_defaults("glm5_next_text")
    return HFConfig({**cls.defaults, **cls.aliased(dict(c.data))}, c.label, c.name,
                    defaults=cls.filled)
