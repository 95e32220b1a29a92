"""Gemma 4 (transformers `models/gemma4`, `Gemma4Config`): a ViT with 2-D learned positions
pooled 3 × 3, an optional conformer audio tower, and a decoder whose global layers differ
from its sliding ones (head_dim, KV heads, K = V), with per-layer embeddings, KV shared
across the last layers, and an MoE block beside the dense MLP (26B-A4B)."""

from __future__ import annotations

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import HFConfig
from llm_inventory.spec.hf.common import (
    core,
    extra,
    layer_types,
    linear,
    norm,
    over_defaults,
    sub_config,
    vlm_model,
)
from llm_inventory.spec.model import (
    Component,
    Encoder,
    ExtraTensor,
    LayerKind,
    LayerOverride,
    Media,
    ModelSpec,
    MoE,
    Shard,
    Stack,
)


def _kinds(text: HFConfig) -> list[str]:
    """`layer_types`, else 5 sliding : 1 full; the last layer is forced full
    (Gemma4TextConfig.__post_init__)."""
    layers = text.integer("num_hidden_layers")
    kinds: list[str] = list(layer_types(text) or [
        LayerKind.FULL if (i + 1) % 6 == 0 else LayerKind.SLIDING for i in range(layers)])
    if len(kinds) != layers:
        raise InputError(f"{text.label}: layer_types",
                         f"has {len(kinds)} entries for {layers} layers")
    kinds[-1] = LayerKind.FULL
    return kinds


def kv_shared(text: HFConfig, kinds: list[str]) -> list[int]:
    """The layers that reuse an earlier layer's cache: the last `num_kv_shared_layers`
    (`Gemma4TextConfig.kv_sharing_modes`, "reuse"); each reads the last earlier layer of its
    own type, which must exist."""
    layers = len(kinds)
    shared = text.integer("num_kv_shared_layers", minimum=0)
    if shared > layers:
        raise InputError(f"{text.label}: num_kv_shared_layers",
                         f"must be at most the {layers} layers, got {shared}")
    first = layers - shared
    if 0 < shared < layers and set(kinds[:first]) != set(kinds):
        raise InputError(f"{text.label}: num_kv_shared_layers",
                         "the layers before the shared ones must include every layer type "
                         "the shared layers read")
    return list(range(first, layers))


def _per_layer_shapes(text: HFConfig, kinds: list[str], k_eq_v: bool) -> dict[int, dict[str, int]]:
    """Head dim and KV heads per layer: `per_layer_config` when the file gives it, else the
    global layers' `global_head_dim` and (with K = V) `num_global_key_value_heads`."""
    given = text.raw("per_layer_config")
    if given is not None:
        if not isinstance(given, dict):
            raise InputError(f"{text.label}: per_layer_config",
                             f"must be a mapping of layer index to shapes, got {given!r}")
        shapes: dict[int, dict[str, int]] = {}
        table = text.sub("per_layer_config")  # opened as a mapping: its entries are read
        for key, value in given.items():
            if not str(key).isdigit() or not isinstance(value, dict):
                raise InputError(f"{text.label}: per_layer_config",
                                 f"entry {key!r} must map a layer index to its shapes")
            entry = table.sub(str(key))
            shapes[int(key)] = {k: entry.integer(k) for k in ("head_dim", "num_key_value_heads")
                                if entry.has(k)}
        return shapes
    override = {"head_dim": text.integer("global_head_dim")}
    global_kv = text.opt_integer("num_global_key_value_heads")
    if k_eq_v and global_kv is not None:
        override["num_key_value_heads"] = global_kv
    return {i: dict(override) for i, kind in enumerate(kinds) if kind == LayerKind.FULL}


def _ple(text: HFConfig, layers: int, hidden: int) -> tuple[list[ExtraTensor], int]:
    """Per-layer embeddings: one packed table of `num_hidden_layers` ×
    `hidden_size_per_layer_input` per token, its projection from the hidden state and norm,
    and in every layer a gate in, a projection out and a norm. (tensors, norms per layer)"""
    width = text.integer("hidden_size_per_layer_input", minimum=0)
    if not width:
        return [], 0
    every = list(range(layers))
    tensors = [
        extra("embed_tokens_per_layer.weight",
              [text.integer("vocab_size_per_layer_input"), layers * width],
              shard=Shard.VOCAB, component=Component.EMBEDDINGS),
        extra("per_layer_model_projection.weight", [layers * width, hidden], linear=True,
              shard=Shard.COLUMN, component=Component.EMBEDDINGS),
        extra("per_layer_projection_norm.weight", [width], component=Component.NORMS),
        extra("per_layer_input_gate.weight", [width, hidden], linear=True, layers=every),
        extra("per_layer_projection.weight", [hidden, width], linear=True, layers=every),
    ]
    return tensors, 1


def gemma4_text_stack(text: HFConfig, *, unified: bool = False) -> Stack:
    """The Gemma 4 decoder (`Gemma4TextModel`): four norms per layer, q/k norms per head
    (v's has no scale), global layers with their own head_dim and KV heads and, with
    `attention_k_eq_v`, no v_proj; KV-shared layers keep only q_proj, q_norm and o_proj
    (and a double-wide MLP with `use_double_wide_mlp`); with `enable_moe_block` every layer
    adds a router (projection, input scale, per-expert scale), routed experts and three
    norms beside its dense MLP. `unified`: Gemma 4 Unified's text model
    (`Gemma4UnifiedTextModel`), the same layers with neither per-layer embeddings nor an MoE
    block (its config has no such keys)."""
    layers, hidden = text.integer("num_hidden_layers"), text.integer("hidden_size")
    kinds = _kinds(text)
    shared = kv_shared(text, kinds)
    k_eq_v = text.flag("attention_k_eq_v")
    overrides: list[LayerOverride] = []
    for index, shape in sorted(_per_layer_shapes(text, kinds, k_eq_v).items()):
        if index >= layers:
            raise InputError(f"{text.label}: per_layer_config",
                             f"names layer {index} of {layers}")
        overrides.append(LayerOverride(layers=[index], head_dim=shape.get("head_dim"),
                                       kv_heads=shape.get("num_key_value_heads")))
    # The global layers: proportional RoPE over a quarter of the head, and K = V.
    overrides.append(LayerOverride(kinds=[LayerKind.FULL], k_eq_v=k_eq_v or None,
                                   partial_rotary_factor=_global_rotary(text)))
    # Read whether or not a layer shares KV, so a file that sets it is understood.
    double_wide = text.flag("use_double_wide_mlp")
    if shared and double_wide:
        overrides.append(LayerOverride(layers=shared,
                                       intermediate_size=2 * text.integer("intermediate_size")))
    for index in shared:
        kinds[index] = LayerKind.SHARED
    window = text.integer("sliding_window")
    if text.raw("use_bidirectional_attention") == "all":
        window = window // 2 + 1  # Gemma4TextConfig.__post_init__: exclusive bounds
    ple, ple_norms = _ple(text, layers, hidden) if not unified else ([], 0)
    moe = None
    norms = 4 + ple_norms
    extras = list(ple)
    if not unified and text.flag("enable_moe_block"):
        experts = text.integer("num_experts")
        moe = MoE(experts=experts, top_k=text.integer("top_k_experts"),
                  expert_intermediate_size=text.integer("moe_intermediate_size"),
                  shared_experts=1, shared_intermediate_size=text.integer("intermediate_size"))
        every = list(range(layers))
        extras += [extra("router.scale", [hidden], layers=every, component=Component.ROUTER),
                   extra("router.per_expert_scale", [experts], layers=every,
                         component=Component.ROUTER)]
        norms += 3
    # Two rotary embeddings: the sliding layers' default one, the global layers'
    # proportional one (rope_parameters per layer type).
    return Stack(**core(
        text, norms_per_layer=norms, qk_norm="head", layer_types=kinds,
        sliding_window=window, moe=moe, extra=extras, overrides=overrides, local_rope=True,
    ))


def _global_rotary(text: HFConfig) -> float | None:
    rope = text.raw("rope_parameters")
    full = rope.get("full_attention") if isinstance(rope, dict) else None
    factor = full.get("partial_rotary_factor") if isinstance(full, dict) else None
    return float(factor) if isinstance(factor, int | float) and 0 < factor <= 1 else None


def _vision(v: HFConfig) -> Stack:
    """The vision tower (`Gemma4VisionModel`): a bias-free linear patch embedding over
    3 × patch² pixels, two learned position tables (x and y) of `position_embedding_size`
    rows, and Gemma-style layers (four norms, q/k norms per head, gated MLP, no biases); the
    pooler has no weights, and the clipping bounds and standardization are buffers."""
    hidden, patch = v.integer("hidden_size"), v.integer("patch_size")
    stem = [extra("patch_embedder.input_proj.weight", [hidden, 3 * patch * patch],
                  linear=True)]
    return Stack(
        layers=v.integer("num_hidden_layers"), hidden_size=hidden,
        heads=v.integer("num_attention_heads"), kv_heads=v.integer("num_key_value_heads"),
        head_dim=v.integer("head_dim"), intermediate_size=v.integer("intermediate_size"),
        qkv_bias=v.flag("attention_bias"), o_bias=v.flag("attention_bias"),
        norms_per_layer=4, qk_norm="head", final_norm=False, vocab_size=0, lm_head=False,
        position_embeddings=2 * v.integer("position_embedding_size"), extra=stem,
    )


def conformer(hidden: int, heads: int, layers: int, kernel: int, relative: str,
              stem: list[ExtraTensor]) -> Stack:
    """A USM conformer stack (Gemma 3n's and Gemma 4's audio towers): per layer two
    feed-forwards (h → 4h → h, each with a pre and a post norm), attention (q, k, v and a
    post projection, a relative-position projection `relative` and a per-dim scale), a
    light convolution (h → 2h GLU, a depthwise conv of `kernel`, h → h, two norms) and the
    attention and output norms; no biases. `stem` comes before the layers."""
    head_dim = hidden // heads
    every = list(range(layers))
    per_layer = [
        extra("ffw_layer_end.ffw_layer_1.weight", [4 * hidden, hidden], linear=True),
        extra("ffw_layer_end.ffw_layer_2.weight", [hidden, 4 * hidden], linear=True),
        extra(f"{relative}.weight", [hidden, hidden], linear=True),
        extra("attention.per_dim_scale", [head_dim]),
        extra("lconv1d.linear_start.weight", [2 * hidden, hidden], linear=True),
        extra("lconv1d.linear_end.weight", [hidden, hidden], linear=True),
        extra("lconv1d.depthwise_conv1d.weight", [hidden, 1, kernel]),
    ]
    # Norms per layer: both feed-forwards' pre and post, the light convolution's pre and
    # conv norms, and the attention's pre, its post and the layer's output norm.
    return Stack(layers=layers, hidden_size=hidden, heads=heads, head_dim=head_dim,
                 intermediate_size=4 * hidden, mlp="plain", norms_per_layer=9,
                 final_norm=False, vocab_size=0, lm_head=False, rope=False,
                 extra=stem + [t.model_copy(update={"layers": every}) for t in per_layer])


def _audio(a: HFConfig) -> Stack:
    """The audio tower (`Gemma4AudioModel`): two strided 3 × 3 convolutions (each with a
    LayerNorm without bias) and a linear input projection, the conformer layers
    (relative-key projection `relative_k_proj`), and an output projection with bias."""
    hidden = a.integer("hidden_size")
    channels = a.int_list("subsampling_conv_channels") or []
    if len(channels) != 2:
        raise InputError(f"{a.label}: subsampling_conv_channels",
                         f"must list two channel counts, got {channels!r}")
    stem = [extra("subsample_conv_projection.layer0.conv.weight", [channels[0], 1, 3, 3]),
            extra("subsample_conv_projection.layer0.norm.weight", [channels[0]]),
            extra("subsample_conv_projection.layer1.conv.weight",
                  [channels[1], channels[0], 3, 3]),
            extra("subsample_conv_projection.layer1.norm.weight", [channels[1]]),
            extra("subsample_conv_projection.input_proj_linear.weight",
                  [hidden, channels[0] // 4 * channels[1]], linear=True)]
    stem += linear("output_proj", a.integer("output_proj_dims"), hidden)
    return conformer(hidden, a.integer("num_attention_heads"), a.integer("num_hidden_layers"),
                     a.integer("conv_kernel_size"), "self_attn.relative_k_proj", stem)


def _embedder(name: str, width: int, hidden: int) -> list[ExtraTensor]:
    """`Gemma4MultimodalEmbedder`: a scale-free RMSNorm, then Linear(width, hidden)."""
    return linear(f"{name}.embedding_projection", hidden, width, bias=False, shard=Shard.COLUMN)


def gemma4(c: HFConfig) -> ModelSpec:
    """Gemma 4 (E2B, E4B, 26B-A4B, 31B): the decoder of `gemma4_text_stack`, a vision tower
    whose features are pooled 3 × 3 into at most `vision_soft_tokens_per_image` tokens, an
    audio tower when `audio_config` is given, and a linear embedder for each tower."""
    _, text = sub_config(c, "text_config", "gemma4_text")
    decoder = gemma4_text_stack(text).model_copy(
        update={"tied_embeddings": c.flag("tie_word_embeddings")})
    hidden = decoder.hidden_size or 0
    notes = _notes(text, decoder)
    encoder: Encoder | None = None
    if c.has("vision_config"):
        _, v = sub_config(c, "vision_config", "gemma4_vision")
        pool = v.integer("pooling_kernel_size")
        # The image processor's budget (Gemma4ImageProcessor.max_soft_tokens, 280 by
        # default); hub files repeat it as vision_soft_tokens_per_image.
        given = (c.opt_integer("vision_soft_tokens_per_image"),
                 v.opt_integer("default_output_length"))
        budget = given[0] or given[1] or 280
        media = Media(patch_size=v.integer("patch_size"), spatial_merge_size=pool,
                      token_budget=budget)
        encoder = Encoder(kind="vision", stack=_vision(v), media=media,
                          projector=_embedder("embed_vision", v.integer("hidden_size"), hidden))
    more: list[Encoder] = []
    if c.raw("audio_config") is not None:
        _, a = sub_config(c, "audio_config", "gemma4_audio")
        more.append(Encoder(kind="audio", stack=_audio(a), projector=_embedder(
            "embed_audio", a.integer("output_proj_dims"), hidden)))
    if encoder is None:
        if not more:
            return _text_only(c, decoder, text, notes)
        encoder, more = more[0], more[1:]
    spec = vlm_model(c, decoder, encoder, text, notes)
    return spec.model_copy(update={"extra_encoders": more})


def gemma4_text(c: HFConfig) -> ModelSpec:
    """A Gemma 4 language model alone (`Gemma4ForCausalLM`, a `Gemma4TextConfig` at the top
    level): the decoder of `gemma4_text_stack`, no tower."""
    decoder = gemma4_text_stack(c)
    return _text_only(c, decoder, c, _notes(c, decoder))


# What `Gemma4AssistantConfig.validate_architecture` refuses in the drafter's text config:
# the key, the value it must have.
_ASSISTANT_FIXED = {"hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0,
                    "enable_moe_block": False, "use_double_wide_mlp": False}


def gemma4_assistant(c: HFConfig) -> ModelSpec:
    """`Gemma4AssistantForCausalLM` (transformers 5.25 `models/gemma4_assistant`), the
    drafter Gemma 4 checkpoints ship beside them: a Gemma 4 text decoder every layer of which
    reads the target's KV (`num_kv_shared_layers` is every layer, set so when 0 by
    `Gemma4AssistantConfig.__post_init__`), so it caches nothing; `pre_projection` from the
    target's embedding and last hidden state (2 × `backbone_hidden_size` → hidden),
    `post_projection` back (hidden → `backbone_hidden_size`), no biases; a head tied to its
    embedding by the composite's `tie_word_embeddings`; and with `use_ordered_embeddings`
    the centroid head (`Gemma4AssistantMaskedEmbedder.centroids`, hidden → `num_centroids`;
    its token ordering is a buffer)."""
    return _assistant(c, "gemma4_text", unified=False)


def gemma4_unified_assistant(c: HFConfig) -> ModelSpec:
    """`Gemma4UnifiedAssistantForCausalLM` (transformers 5.25
    `models/gemma4_unified_assistant`): Gemma 4's assistant over Gemma 4 Unified's text
    model (`gemma4_assistant`'s parts, the unified decoder)."""
    return _assistant(c, "gemma4_unified_text", unified=True)


def _assistant(c: HFConfig, text_type: str, *, unified: bool) -> ModelSpec:
    """A Gemma 4 assistant over `text_type`'s decoder (see `gemma4_assistant`). Gemma 4's
    text config must also have no per-layer inputs, MoE block or double-wide MLP
    (`Gemma4AssistantConfig.validate_architecture`); every layer must read the target's KV,
    which the unified class does not check but the tool models alone."""
    _, text = sub_config(c, "text_config", text_type)
    layers = text.integer("num_hidden_layers")
    if not text.integer("num_kv_shared_layers", 0, minimum=0):
        text = over_defaults({**text.data, "num_kv_shared_layers": layers}, text_type,
                             text.label, c.name)
    for key, wanted in ({} if unified else _ASSISTANT_FIXED).items():
        value = text.flag(key) if isinstance(wanted, bool) else text.integer(key, minimum=0)
        if value != wanted:
            raise InputError(f"{text.label}: {key}", f"must be {str(wanted).lower()} in a "
                             f"Gemma 4 assistant (transformers refuses it), got {value}")
    shared = text.integer("num_kv_shared_layers", minimum=0)
    if shared != layers:
        raise InputError(f"{text.label}: num_kv_shared_layers",
                         f"must be every layer ({layers}) in a Gemma 4 assistant, got {shared}")
    decoder = gemma4_text_stack(text, unified=unified)
    hidden = decoder.hidden_size or 0
    backbone = c.integer("backbone_hidden_size")
    extras = (linear("pre_projection", hidden, 2 * backbone, bias=False)
              + linear("post_projection", backbone, hidden, bias=False))
    centroids = c.integer("num_centroids")  # read either way: it sizes nothing unordered
    if c.flag("use_ordered_embeddings"):
        extras += linear("masked_embedding.centroids", centroids, hidden, bias=False)
    decoder = decoder.model_copy(update={"tied_embeddings": c.flag("tie_word_embeddings"),
                                         "extra": [*decoder.extra, *extras]})
    notes = [*_notes(text, decoder, shared=False),
             "a drafter: every layer reads the target's K and V (shared_kv_states) and it "
             "caches none of its own; planning it beside its target is not modelled"]
    return _text_only(c, decoder, text, notes)


def gemma4_unified_text(c: HFConfig) -> ModelSpec:
    """A Gemma 4 Unified language model alone (`Gemma4UnifiedForCausalLM`): the unified
    decoder of `gemma4_text_stack`."""
    decoder = gemma4_text_stack(c, unified=True)
    return _text_only(c, decoder, c, _notes(c, decoder))


def _mm_embedder(name: str, width: int, hidden: int) -> list[ExtraTensor]:
    """`Gemma4UnifiedMultimodalEmbedder`: a scale-free RMSNorm, then a projection to the
    text width (no bias)."""
    return linear(f"{name}.embedding_projection", hidden, width, bias=False)


def gemma4_unified(c: HFConfig) -> ModelSpec:
    """Gemma 4 Unified (`Gemma4UnifiedForConditionalGeneration`), encoder-free: the unified
    decoder; with `vision_config`, `Gemma4UnifiedVisionEmbedder` in place of a vision tower
    (LayerNorm over each raw merged patch of (patch_size × pooling_kernel_size)² × 3 pixels,
    a Dense to `mm_embed_dim` with bias, a LayerNorm, a factorized 2-D position table of
    `mm_posemb_size` × 2 × `mm_embed_dim`, a LayerNorm, then the multimodal embedder from
    `output_proj_dims`); with `audio_config`, raw waveform frames of `audio_embed_dim`
    samples through the multimodal embedder alone."""
    _, text = sub_config(c, "text_config", "gemma4_unified_text")
    decoder = gemma4_text_stack(text, unified=True).model_copy(
        update={"tied_embeddings": c.flag("tie_word_embeddings")})
    hidden = decoder.hidden_size or 0
    notes = _notes(text, decoder)
    encoders: list[Encoder] = []
    if c.raw("vision_config") is not None:
        _, v = sub_config(c, "vision_config", "gemma4_unified_vision")
        patch, pool = v.integer("patch_size"), v.integer("pooling_kernel_size")
        pixels, width = (patch * pool) ** 2 * 3, v.integer("mm_embed_dim")
        tower = (norm("embed_vision.patch_ln1", pixels, bias=True)
                 + linear("embed_vision.patch_dense", width, pixels)
                 + norm("embed_vision.patch_ln2", width, bias=True)
                 + [extra("embed_vision.pos_embedding", [v.integer("mm_posemb_size"), 2, width])]
                 + norm("embed_vision.pos_norm", width, bias=True))
        # the image processor's budget (Gemma4UnifiedImageProcessor.max_soft_tokens, 280)
        budget = c.opt_integer("vision_soft_tokens_per_image") or 280
        encoders.append(Encoder(
            kind="vision",
            media=Media(patch_size=patch, spatial_merge_size=pool, token_budget=budget),
            projector=tower + _mm_embedder("embed_vision.multimodal_embedder",
                                           v.integer("output_proj_dims"), hidden)))
    if c.raw("audio_config") is not None:
        _, a = sub_config(c, "audio_config", "gemma4_unified_audio")
        encoders.append(Encoder(kind="audio", projector=_mm_embedder(
            "embed_audio", a.integer("audio_embed_dim"), hidden)))
    if not encoders:
        return _text_only(c, decoder, text, notes)
    notes.append("encoder-free: images and audio are embedded by projections alone "
                 "(no vision or audio tower)")
    spec = vlm_model(c, decoder, encoders[0], text, notes)
    return spec.model_copy(update={"extra_encoders": encoders[1:]})


def _text_only(c: HFConfig, decoder: Stack, text: HFConfig, notes: list[str]) -> ModelSpec:
    from llm_inventory.spec.hf.common import decoder_model

    return decoder_model(c, decoder, notes=notes).model_copy(
        update={"max_context": text.opt_integer("max_position_embeddings")})


def _notes(text: HFConfig, decoder: Stack, shared: bool = True) -> list[str]:
    """What the count leaves to say; `shared`: say which layers read an earlier one's KV."""
    notes: list[str] = []
    k_eq_v = [decoder.at(i) for i, kind in enumerate(decoder.kinds())
              if kind == LayerKind.FULL and decoder.at(i).k_eq_v]
    if k_eq_v:
        slots = sum(s.n_kv_heads * s.k_dim * (s.hidden_size or 0) for s in k_eq_v)
        # vLLM's Gemma4Attention keeps one fused qkv_proj and loads K into its V slot.
        notes.append(f"K = V on global layers: no v_proj, but V is cached; vLLM loads K "
                     f"into a V slot too ({slots:,} parameters beyond these)")
    reading = [i for i, k in enumerate(decoder.kinds()) if k == LayerKind.SHARED]
    if reading and shared:
        notes.append(f"layers {reading[0]}–{reading[-1]} store no KV: each reads the last "
                     "earlier layer's of its type")
    if any(t.name == "embed_tokens_per_layer.weight" for t in decoder.extra):
        notes.append("per-layer embeddings counted; Google's 'effective' E2B/E4B sizes "
                     "leave them out")
    return notes

