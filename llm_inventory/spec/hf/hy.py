"""Tencent Hy3 (transformers 5.25 `models/hy_v3`, `HYV3ForCausalLM`): a Llama-style decoder
with per-head q/k RMSNorms (`HYV3Attention`, Apertus's), a dense MLP on the layers
`mlp_layer_types` marks dense (the first alone by default) and elsewhere `HYV3MoE`: a
router (weight only; its `e_score_correction_bias` is a buffer), routed experts of
`moe_intermediate_size` and one shared MLP of `num_shared_experts` × `moe_intermediate_size`
(`HYV3MLP`, which falls back to `intermediate_size` when that product is 0).

Hy4 (`hy_v4`) is GLM-5's sparse-attention MLA with Hy's additions: see `hy_v4`."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    core,
    decoder_model,
    extra,
    sub_config,
    text_decoder,
    vlm_model,
)
from llm_inventory.spec.hf.deepseek import _deepseek, mtp_block
from llm_inventory.spec.hf.vision import vit
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    Indexer,
    LayerOverride,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


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


def _hy_v4_indexer_types(c: HFConfig, layers: int) -> list[int]:
    """The layers whose indexer is "shared" (no indexer of their own): `indexer_types`,
    else every layer but 0 and those where (i − 1) % 4 == 0 (`HYV4Config.__post_init__`)."""
    modes = c.str_list("indexer_types")
    if modes is None:
        return [i for i in range(layers) if i != 0 and (i - 1) % 4 != 0]
    if len(modes) < layers or set(modes[:layers]) - {"full", "shared"} or modes[0] != "full":
        raise InputError(f"{c.label}: indexer_types",
                         f"needs full or shared for each of the {layers} layers, layer 0 full")
    return [i for i, mode in enumerate(modes[:layers]) if mode == "shared"]


def _hy_v4_extra(c: HFConfig, hidden: int, heads: int, v_dim: int, layers: int
                 ) -> list[ExtraTensor]:
    """What `HYV4Attention` and the hyper-connections add to GLM-5's layer: a sigmoid output
    gate `gate_proj` (hidden → heads × v_head_dim) and a learned sink per head on every
    layer; `HYV4HyperConnection` around attention and MLP (`fn` of 2 × hc_mult rows over
    the hc_mult × hidden streams, `base` of 2 × hc_mult, two scales) and `HYV4HyperHead`'s
    final collapse (`hc_fn` of hc_mult rows, `hc_base`, one scale)."""
    mult, every, a = c.integer("hc_mult"), list(range(layers)), Component.ATTENTION
    out = [extra("layers.{i}.self_attn.gate_proj.weight", [heads * v_dim, hidden],
                 linear=True, shard=Shard.COLUMN, layers=every, component=a),
           extra("layers.{i}.self_attn.sinks", [heads], shard=Shard.COLUMN, layers=every,
                 component=a)]
    for block in ("attn_hc", "ffn_hc"):
        out += [extra(f"layers.{{i}}.{block}.fn", [2 * mult, mult * hidden], layers=every),
                extra(f"layers.{{i}}.{block}.base", [2 * mult], layers=every),
                extra(f"layers.{{i}}.{block}.scale", [2], layers=every)]
    out += [extra("hc_head.hc_fn", [mult, mult * hidden]), extra("hc_head.hc_base", [mult]),
            extra("hc_head.hc_scale", [1])]
    return out


def hy_v4(c: HFConfig) -> ModelSpec:
    """Tencent Hy4 (transformers 5.25 `models/hy_v4`, `HYV4ForCausalLM`): GLM-5's
    DeepSeek-Sparse-Attention layer (`GlmMoeDsaAttention`: MLA with query LoRA and a
    lightning indexer over the query latent, none on "shared" `indexer_types` layers) with
    an output gate and attention sinks, `HYV4MoE` (GLM-4.7-Flash's: routed experts and
    `n_shared_experts` × `moe_intermediate_size` shared, dense MLPs on the `mlp_layer_types`
    "dense" layers, the first alone by default), and DeepSeek-V4-style hyper-connections
    without the Sinkhorn mix. transformers builds no multi-token-prediction layers."""
    layers = c.integer("num_hidden_layers")
    kinds = c.str_list("layer_types")
    if kinds is not None and set(kinds) - {"indexed_attention"}:
        raise InputError(f"{c.label}: layer_types",
                         f"every layer is indexed_attention, got {sorted(set(kinds))}")
    shared = _hy_v4_indexer_types(c, layers)
    overrides = [LayerOverride(layers=shared, shares_indexer=True)] if shared else []
    heads, hidden = c.integer("num_attention_heads"), c.integer("hidden_size")
    indexer = Indexer(heads=c.integer("index_n_heads"), head_dim=c.integer("index_head_dim"),
                      topk=c.integer("index_topk"))
    return _deepseek(c, mtp_copies=False, first_dense=1, layer_types=["indexed_mla"],
                     indexer=indexer, overrides=overrides,
                     extra=_hy_v4_extra(c, hidden, heads, c.integer("v_head_dim"), layers))


def _hy_v4_vl_tower(v: HFConfig) -> Stack:
    """`HYV4VLVisionModel` (HunYuan-VL's tower, transformers 5.25 models/hy_v4_vl): a patch
    conv with bias, learned positions for a (max_image_size ÷ patch)² grid plus one,
    pre-LayerNorm layers of biased multi-head attention (no sinks) and a plain biased MLP,
    no final norm."""
    hidden, channels, patch = (v.integer("hidden_size"), v.integer("num_channels"),
                               v.integer("patch_size"))
    edge = v.integer("max_image_size") // patch
    # num_key_value_heads is set to the heads by __post_init__ and shapes nothing else.
    v.superseded("num_key_value_heads")
    stem = [extra("embeddings.patch_embedding.weight", [hidden, channels, patch, patch]),
            extra("embeddings.patch_embedding.bias", [hidden])]
    return vit(v, final_norm=False, position_embeddings=edge * edge + 1, extra=stem)


def hy_v4_vl(c: HFConfig) -> ModelSpec:
    """Hy4 with vision (`HYV4VLForConditionalGeneration`): the tower above, its patch merger
    (`HYV4VLVisionPatchMerger`: an RMSNorm, a merge × merge strided conv to merge² × hidden
    channels, a 1 × 1 conv to `out_hidden_size`, and a learned `image_newline` closing each
    row of merged patches) and the `hy_v4_vl_text` language model, Hy4's layers.

    The image's token count follows Qwen's smart_resize to whole merged patches with a
    newline per row; the processor's pixel limits (512² to 2048² by default, processor
    settings) are not applied, so tokens for images outside them are an estimate."""
    _, v = sub_config(c, "vision_config")
    decoder, text = text_decoder(c)
    width, merge = v.integer("hidden_size"), v.integer("spatial_merge_size")
    out = v.integer("out_hidden_size")
    projector = [extra("patch_merger.before_rms.weight", [width]),
                 extra("patch_merger.proj_conv.weight", [width * merge * merge, width, merge,
                                                         merge], linear=True),
                 extra("patch_merger.proj_conv.bias", [width * merge * merge]),
                 extra("patch_merger.proj_out.weight", [out, width * merge * merge, 1, 1],
                       linear=True),
                 extra("patch_merger.proj_out.bias", [out]),
                 extra("patch_merger.image_newline", [out])]
    # HYV4VLImageProcessor's class defaults for the pixel limits (transformers 5.25
    # models/hy_v4_vl/image_processing_hy_v4_vl.py: min_pixels 512², max_pixels 2048²)
    media = Media(patch_size=v.integer("patch_size"), spatial_merge_size=merge,
                  row_break=True, round_sides=True, min_pixels=512 * 512,
                  max_pixels=2048 * 2048)
    encoder = Encoder(kind="vision", stack=_hy_v4_vl_tower(v), media=media,
                      projector=projector)
    tied = c.flag("tie_word_embeddings")
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), encoder, text,
                     ["image tokens follow HYV4VLImageProcessor's smart_resize (whole merged "
                      "patches, 512² … 2048² pixels at its defaults) plus a newline per row; a "
                      "preprocessor_config.json that changes the limits is not read"])
