"""Meta's Muse models (transformers 5.25 `models/muse_spark`, `models/muse_glimmer`).

Muse Spark (`MuseSparkForConditionalGeneration`) and Muse Glimmer
(`MuseGlimmerForConditionalGeneration`) share one text layer: Gemma-style sandwich norms
(centred RMSNorms, weight stored as w and applied as 1 + w), weightless q/k norms, a sigmoid
output gate `gate_proj` (hidden → heads × head_dim) beside q/k/v/o, a weightless norm on the
token embeddings, and iRoPE: every fourth layer counted back from the last is full attention
without rotary (NoPE), the others sliding-window attention with rotary. Spark's MLP is
`MuseSparkMoE` (experts at a narrower `moe_hidden_size`), and its residual adds are learned
gates; Glimmer's is a dense SwiGLU. Both wrap the same vision tower; Spark adds a
convolutional audio encoder.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    decoder_model,
    extra,
    linear,
    norm,
    present_or_default,
    rope_scaling,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.hf.vision import vit
from llm_inventory.spec.model import (
    Component,
    Encoder,
    LayerKind,
    LayerOverride,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)

_KINDS = {"full_attention": LayerKind.FULL, "sliding_attention": LayerKind.SLIDING}


def _attention_layers(c: HFConfig, layers: int) -> tuple[list[LayerKind], list[int]]:
    """(each layer's kind, the NoPE layers). `layer_types`, else full attention on every
    fourth layer counted back from the last and sliding elsewhere; `layer_rope_theta`, whose
    zeros are the layers given no rotary, else zeros on those same layers
    (`MuseSparkTextConfig.__post_init__`, `MuseGlimmerTextConfig.__post_init__`). The text
    model applies its one rotary table wherever the entry is non-zero, so only the zeros
    shape anything."""
    default = [i for i in range(layers) if (layers - 1 - i) % 4 == 0]
    names = c.str_list("layer_types")
    if names is None:
        kinds = [LayerKind.FULL if i in default else LayerKind.SLIDING for i in range(layers)]
    elif len(names) < layers or set(names[:layers]) - set(_KINDS):
        raise InputError(f"{c.label}: layer_types", f"needs full_attention or "
                         f"sliding_attention for each of the {layers} layers")
    else:
        kinds = [_KINDS[name] for name in names[:layers]]
    thetas = c.raw("layer_rope_theta")
    if thetas is None:
        nope = default
    elif not isinstance(thetas, list) or len(thetas) < layers or not all(
            isinstance(t, int | float) and not isinstance(t, bool) and t >= 0
            for t in thetas[:layers]):
        raise InputError(f"{c.label}: layer_rope_theta",
                         f"needs a rotary base (0 for none) for each of the {layers} layers")
    else:
        nope = [i for i, theta in enumerate(thetas[:layers]) if theta == 0]
    return kinds, nope


def _text(c: HFConfig, *, mlp: dict[str, Any], norms: int, extras: list[Any]
          ) -> tuple[Stack, list[str]]:
    """The layers both text models share; `mlp`, `norms` and `extras` are what differs.
    The notes name layers whose `layer_types` and rotary disagree: transformers (followed
    here) windows a layer by `layer_types`, vLLM by whether it applies rotary."""
    layers = c.integer("num_hidden_layers")
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    head_dim = c.integer("head_dim", hidden // heads)
    kinds, nope = _attention_layers(c, layers)
    window = present_or_default(c, "sliding_window")
    if window is None and LayerKind.SLIDING in kinds:
        raise InputError(f"{c.label}: sliding_window",
                         "needs a window for the sliding_attention layers")
    bias = c.flag("attention_bias")
    every = list(range(layers))
    gate = extra("layers.{i}.self_attn.gate_proj.weight", [heads * head_dim, hidden],
                 linear=True, shard=Shard.COLUMN, layers=every, component=Component.ATTENTION)
    apart = [i for i, kind in enumerate(kinds) if (kind == LayerKind.SLIDING) == (i in nope)]
    which = f"layer{'s' if len(apart) > 1 else ''} {', '.join(map(str, apart))}"
    notes = [f"{which}: layer_types and layer_rope_theta disagree; "
             "their cache follows layer_types as transformers does, while vLLM windows a "
             "layer exactly when it applies rotary"] if apart else []
    return Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=present_or_default(c, "num_key_value_heads") or heads, head_dim=head_dim,
        vocab_size=c.integer("vocab_size"), qkv_bias=bias, o_bias=bias,
        # The text model has no head; the composite's lm_head is its own (see the builders).
        tied_embeddings=False, norms_per_layer=norms, layer_types=kinds,
        sliding_window=window if LayerKind.SLIDING in kinds else None,
        overrides=[LayerOverride(layers=nope, rope=False)] if nope else [],
        rope_scaling=rope_scaling(c), extra=[gate, *extras], **mlp), notes


def muse_spark_text(c: HFConfig) -> ModelSpec:
    """`MuseSparkTextModel`: the shared layer with weighted input, pre-feedforward and
    post-feedforward norms (the post-attention norm has no weight), two learned residual
    gates of `hidden_size` per layer (`MuseSparkResidualGate`), and an MLP per
    `mlp_layer_types` (all "sparse" by default): a dense SwiGLU of `intermediate_size`, or
    `MuseSparkMoE` — a router over the hidden state (weight only; its
    `e_score_correction_bias` is a buffer), `pre_expert_proj` to `moe_hidden_size`, a
    centred norm there, the routed experts at that width each ending in a shared
    `post_expert_norm`, and `post_expert_proj` back. No shared expert."""
    layers = c.integer("num_hidden_layers")
    hidden = c.integer("hidden_size")
    types = c.str_list("mlp_layer_types")
    if types is None:
        sparse = list(range(layers))
    elif len(types) < layers or set(types[:layers]) - {"dense", "sparse"}:
        raise InputError(f"{c.label}: mlp_layer_types",
                         f"needs dense or sparse for each of the {layers} layers")
    else:
        sparse = [i for i, kind in enumerate(types[:layers]) if kind == "sparse"]
    width = c.integer("moe_hidden_size")
    moe = MoE(experts=c.integer("num_local_experts"), top_k=c.integer("num_experts_per_tok"),
              expert_intermediate_size=c.integer("moe_intermediate_size"), latent_size=width,
              layers=sparse) if sparse else None
    dense = len(sparse) < layers
    every = list(range(layers))
    extras = [extra(f"layers.{{i}}.{gate}.gate", [hidden], layers=every)
              for gate in ("post_attention_residual_gate", "post_feedforward_residual_gate")]
    if sparse:
        extras += [extra("layers.{i}.mlp.pre_expert_norm.weight", [width], layers=sparse,
                         component=Component.NORMS),
                   extra("layers.{i}.mlp.experts.post_expert_norm.weight", [width],
                         layers=sparse, component=Component.NORMS)]
    if not dense:
        c.superseded("intermediate_size")  # no "dense" layer builds MuseSparkTextMLP
    mlp = {"moe": moe, "intermediate_size": c.integer("intermediate_size") if dense else None}
    stack, notes = _text(c, mlp=mlp, norms=3, extras=extras)
    # MuseSparkTopkRouter.weight is made float32 and the residual gates cast to it.
    fp32 = len(sparse) * (moe.experts if moe else 0) * hidden + 2 * layers * hidden
    notes.append(f"transformers builds the router weights and residual gates in float32 "
                 f"({fp32:,} parameters); weight bytes here count them at the model dtype "
                 "(no checkpoint was seen to say how it stores them)")
    return decoder_model(c, stack, notes=[_SPARK_PAGING, *notes])


def _vision(v: HFConfig) -> Encoder:
    """`MuseSparkVisionModel` / `MuseGlimmerVisionModel`: a bias-free linear patch embedding
    of `patch_temporal` × 3 × `patch_size`² values, a learned table of `pos_emb_height` ×
    `pos_emb_width` positions (resampled to the image), `ln_pre`, pre-LayerNorm layers of
    biased multi-head attention (2-D rotary, no weights) and a plain biased MLP, `ln_post`,
    then a pixel shuffle of `merge_size` × `merge_size` patches into one token of merge² ×
    hidden. Windowed or full attention per layer (`layer_types`) changes no tensor.

    The processor (`MuseGlimmerImageProcessor`) resizes an image to the whole merged
    patches nearest its aspect ratio under `max_image_tokens` (4,096); here the patches
    are rounded to whole merged patches without that cap, so image tokens are an estimate."""
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    temporal, merge = v.integer("patch_temporal"), v.integer("merge_size")
    stem = [extra("patch_embedder.patch_embedding.weight", [hidden, temporal * 3 * patch * patch],
                  linear=True), *norm("ln_pre", hidden, bias=True)]
    rows = v.integer("pos_emb_height") * v.integer("pos_emb_width")
    tower = vit(v, rope=True, position_embeddings=rows, extra=stem)
    media = Media(patch_size=patch, temporal_patch_size=temporal, spatial_merge_size=merge,
                  round_sides=True)
    return Encoder(kind="vision", stack=tower, media=media)


def _adapter(c: HFConfig, hidden: int) -> list[Any]:
    """`*VisionAdapter` (fc1: `out_hidden_size` → `projector_hidden_size`, fc2 square, no
    biases) and `vision_projection` to the text width; `perception_emb_norm` has no weight."""
    out, inner = c.integer("out_hidden_size"), c.integer("projector_hidden_size")
    return (linear("vision_adapter.fc1", inner, out, bias=False, shard=Shard.COLUMN)
            + linear("vision_adapter.fc2", inner, inner, bias=False, shard=Shard.ROW)
            + linear("vision_projection", hidden, inner, bias=False))


def _stages(a: HFConfig) -> tuple[list[int], list[int], list[int]]:
    """(patch_sizes, hidden_sizes, depths), one entry per `num_hidden_layers` stage, as
    `MuseSparkAudioConfig.validate_architecture` requires."""
    stages = a.integer("num_hidden_layers")
    lists = [a.int_list(key) or [] for key in ("patch_sizes", "hidden_sizes", "depths")]
    if any(len(values) != stages for values in lists) or any(
            v < 1 for values in lists for v in values):
        raise InputError(f"{a.label}: hidden_sizes", "patch_sizes, hidden_sizes and depths "
                         f"need one positive entry for each of the {stages} stages")
    return lists[0], lists[1], lists[2]


def _audio(a: HFConfig, text_hidden: int) -> Encoder:
    """`MuseSparkAudioModel`: a causal convolutional pyramid over the raw waveform, no
    attention. Stage l embeds `patch_sizes[l]` steps of the previous width (1 channel for the
    waveform) by a biased Linear to `hidden_sizes[l]` and an RMSNorm, then `depths[l]` blocks
    of a biased depthwise Conv1d of `conv_kernel_size`, an RMSNorm and a biased plain MLP of
    `mlp_ratio` × width; then an RMSNorm, a biased projection to `out_hidden_size` (which
    must be the text width) and an RMSNorm. Held as one layer-free stack of these tensors
    (its one `mlp_only` layer builds nothing) whose final norm is the pyramid's."""
    patches, widths, depths = _stages(a)
    kernel, ratio = a.integer("conv_kernel_size"), a.number("mlp_ratio")
    out = a.integer("out_hidden_size")
    if out != text_hidden:
        raise InputError(f"{a.label}: out_hidden_size", f"must equal the text hidden_size "
                         f"({text_hidden}), got {out}")
    tensors: list[Any] = []
    inputs = 1
    for stage, (patch, width, depth) in enumerate(zip(patches, widths, depths, strict=True)):
        at = f"layers.{stage}"
        tensors += linear(f"{at}.patch_embedder.proj", width, inputs * patch)
        tensors += norm(f"{at}.patch_embedder.norm", width, bias=False)
        inner = int(width * ratio)
        for block in range(depth):
            here = f"{at}.conv_blocks.{block}"
            tensors += [extra(f"{here}.conv.weight", [width, 1, kernel]),
                        extra(f"{here}.conv.bias", [width])]
            tensors += norm(f"{here}.norm", width, bias=False)
            tensors += linear(f"{here}.mlp.fc1", inner, width) + linear(
                f"{here}.mlp.fc2", width, inner)
        inputs = width
    tensors += linear("proj", out, widths[-1]) + norm("post_proj_norm", out, bias=False)
    tower = Stack(layers=1, hidden_size=widths[-1], heads=1, layer_types=[LayerKind.MLP_ONLY],
                  mlp="none", norms_per_layer=0, vocab_size=0, lm_head=False, rope=False,
                  extra=tensors)
    return Encoder(kind="audio", stack=tower)


# vllm/model_executor/models/muse_glimmer.py (MuseGlimmerAttention.__init__): Attention with
# per_layer_sliding_window = sliding_window where the layer applies rotary, None where not.
_GLIMMER_PAGING = ("vLLM pages a layer with rotary as sliding-window and a NoPE layer as full "
                   "attention (muse_glimmer.py, MuseGlimmerAttention); the importer follows "
                   "layer_types, the same layers in the default pattern")
_SPARK_PAGING = ("no serving engine's source has a Muse Spark model file: its cache is paged "
                 "as vLLM pages the Muse Glimmer layers it shares (muse_glimmer.py, "
                 "MuseGlimmerAttention: sliding-window on rotary layers, full on NoPE), a "
                 "rule borrowed, not read")
_IMAGE_NOTE = ("image tokens are an estimate: the patches rounded to whole merged patches; "
               "the processor's aspect-ratio grid under max_image_tokens is not applied")


def muse_spark(c: HFConfig) -> ModelSpec:
    """Muse Spark: the vision tower and adapter, the audio encoder (its features are the
    text width, scattered onto the audio tokens with no projector) and the
    `muse_spark_text` language model. `MuseSparkForConditionalGeneration` declares no tied
    weights: its lm_head is its own whatever any `tie_word_embeddings` says."""
    _, v = sub_config(c, "vision_config", "muse_spark_vision")
    _, a = sub_config(c, "audio_config", "muse_spark_audio")
    _, text = sub_config(c, "text_config", "muse_spark_text")
    language = muse_spark_text(text)
    decoder = language.decoder
    assert decoder is not None
    hidden = decoder.hidden_size or 0
    vision = _vision(v).model_copy(update={"projector": _adapter(c, hidden)})
    spec = vlm_model(c, decoder, vision, text, [_IMAGE_NOTE, *language.notes])
    return spec.model_copy(update={"extra_encoders": [_audio(a, hidden)]})


def muse_glimmer_text(c: HFConfig) -> ModelSpec:
    """`MuseGlimmerTextModel`: the shared layer with all four sandwich norms weighted
    (`MuseGlimmerTextDecoderLayer`), plain residual adds and a dense SwiGLU MLP of
    `intermediate_size` on every layer."""
    stack, notes = _text(c, mlp={"intermediate_size": c.integer("intermediate_size")},
                         norms=4, extras=[])
    return decoder_model(c, stack, notes=[_GLIMMER_PAGING, *notes])


def muse_glimmer(c: HFConfig) -> ModelSpec:
    """Muse Glimmer: Muse Spark's vision tower and adapter (the same classes under Glimmer's
    names) and the `muse_glimmer_text` language model. `MuseGlimmerForConditionalGeneration`
    ties lm_head to the embeddings when the composite's own `tie_word_embeddings` is set;
    `MuseGlimmerConfig` has no such field, so absent it is untied."""
    _, v = sub_config(c, "vision_config", "muse_glimmer_vision")
    _, text = sub_config(c, "text_config", "muse_glimmer_text")
    language = muse_glimmer_text(text)
    decoder = language.decoder
    assert decoder is not None
    vision = _vision(v).model_copy(update={"projector": _adapter(c, decoder.hidden_size or 0)})
    tied = c.flag("tie_word_embeddings", False)
    return vlm_model(c, decoder.model_copy(update={"tied_embeddings": tied}), vision, text,
                     [_IMAGE_NOTE, *language.notes])


# vllm/model_executor/models/registry.py maps MuseGlimmerAssistantModel to qwen3_dflash.py's
# DFlashQwen3ForCausalLM; its _resolve_layer_attention gives a "sliding_attention" layer
# per_layer_sliding_window = sliding_window and the others full attention.
_ASSISTANT_NOTE = ("a DFlash drafter: no embedding or head of its own (it borrows its "
                   "target's); its K/V is kept per context token, sliding as layer_types says, "
                   "as vLLM's qwen3_dflash.py (_resolve_layer_attention) pages it; --speculative "
                   "has no dflash method, so planning it as a target's drafter is not modelled")


def muse_glimmer_assistant(c: HFConfig) -> ModelSpec:
    """`MuseGlimmerAssistantModel` (transformers 5.25 `models/muse_glimmer_assistant`), Muse
    Glimmer's DFlash drafter: `encoder.fc` projects the target's hidden states at
    `target_layer_ids` (their count × hidden → hidden, no bias) and `output_norm_enc`
    normalises them; then Qwen3-style layers (bias-free q/k/v/o, per-head q/k RMSNorms, two
    norms, a SwiGLU of `intermediate_size`), sliding or full as `layer_types` says (all
    sliding by default), and a final norm. The context's K/V is cached per token
    (`DFlashCache`); the drafted block's is not kept."""
    layers = c.integer("num_hidden_layers")
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    names = c.str_list("layer_types")
    if names is None:
        kinds = [LayerKind.SLIDING] * layers
    elif len(names) < layers or set(names[:layers]) - set(_KINDS):
        raise InputError(f"{c.label}: layer_types", f"needs full_attention or "
                         f"sliding_attention for each of the {layers} layers")
    else:
        kinds = [_KINDS[name] for name in names[:layers]]
    targets = c.int_list("target_layer_ids")
    if targets is None:
        raise InputError(f"{c.label}: target_layer_ids",
                         "needs the target layers whose hidden states the drafter reads")
    if not targets or any(t < 0 for t in targets):
        raise InputError(f"{c.label}: target_layer_ids", "needs one or more layer indices")
    encoder = (linear("encoder.fc", hidden, len(targets) * hidden, bias=False)
               + norm("encoder.output_norm_enc", hidden, bias=False))
    stack = Stack(
        layers=layers, hidden_size=hidden, heads=heads,
        kv_heads=present_or_default(c, "num_key_value_heads") or heads,
        head_dim=c.integer("head_dim", hidden // heads),
        intermediate_size=c.integer("intermediate_size"), qk_norm="head", vocab_size=0,
        lm_head=False, layer_types=kinds,
        sliding_window=c.integer("sliding_window") if LayerKind.SLIDING in kinds else None,
        rope_scaling=rope_scaling(c), extra=encoder)
    return decoder_model(c, stack, notes=[_ASSISTANT_NOTE])
