"""The model description: one pydantic model that YAML files, presets and importers produce.

It describes stages and state rather than one fixed block diagram: a decoder stack with
per-layer kinds (full, sliding, chunked, MLA, recurrent, cross-attention, shared KV), MoE
layers, an encoder (vision, audio or text) with its geometry and a projector, diffusion
components, quantization, and a coarse form for when only totals are known.
Every model is `frozen` and `extra="forbid"`, so a misspelt key is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SkipValidation,
    model_validator,
)
from pydantic_core import PydanticCustomError

from llm_inventory import bounds as _b

# Re-exported: the names live apart so that the layer kinds load without pydantic.
from llm_inventory.spec.names import Component as Component
from llm_inventory.spec.names import LayerKind as LayerKind
from llm_inventory.spec.names import Shard as Shard

# Every count carries its upper bound (llm_inventory.bounds), so no absurd value reaches the
# engine's loops or float arithmetic; a count without a more telling bound gets PARAMETERS.
Pos = Annotated[int, Field(ge=1, le=_b.PARAMETERS.limit)]
NonNeg = Annotated[int, Field(ge=0, le=_b.PARAMETERS.limit)]
Layers = Annotated[int, Field(ge=1, le=_b.LAYERS.limit)]
LayerIndex = Annotated[int, Field(ge=0, le=_b.LAYERS.limit)]
Heads = Annotated[int, Field(ge=1, le=_b.HEADS.limit)]
Width = Annotated[int, Field(ge=1, le=_b.WIDTH.limit)]
Width0 = Annotated[int, Field(ge=0, le=_b.WIDTH.limit)]
Rows0 = Annotated[int, Field(ge=0, le=_b.VOCAB.limit)]
Dim = Annotated[int, Field(ge=1, le=_b.VOCAB.limit)]  # one dimension of a tensor
Experts = Annotated[int, Field(ge=1, le=_b.EXPERTS.limit)]
Experts0 = Annotated[int, Field(ge=0, le=_b.EXPERTS.limit)]
Tokens = Annotated[int, Field(ge=1, le=_b.CONTEXT.limit)]
Tokens0 = Annotated[int, Field(ge=0, le=_b.CONTEXT.limit)]
Pixels = Annotated[int, Field(ge=1, le=_b.PIXELS.limit)]
Frames = Annotated[int, Field(ge=1, le=_b.FRAMES.limit)]
Bits = Annotated[int, Field(ge=1, le=64)]


def _at_most(limit: int) -> BeforeValidator:
    """A length bound on a str field that, unlike max_length, still accepts lone surrogates
    (a folder name that is not UTF-8 reaches Python as one)."""

    def check(value: object) -> object:
        if isinstance(value, str) and len(value) > limit:
            raise PydanticCustomError("string_too_long",
                                      "String should have at most {max_length} characters",
                                      {"max_length": limit})
        return value

    return BeforeValidator(check)


Name = Annotated[str, _at_most(_b.NAME), Field(json_schema_extra={"maxLength": _b.NAME})]
Text = Annotated[str, _at_most(_b.TEXT), Field(json_schema_extra={"maxLength": _b.TEXT})]
LayerList = Annotated[list[LayerIndex], Field(max_length=_b.LIST.limit)]
Tiles = Annotated[int, Field(ge=1, le=_b.IMAGES.limit)]
Steps = Annotated[int, Field(ge=1, le=_b.STEPS.limit)]
FlopCount = Annotated[int, Field(ge=0, le=_b.FLOPS.limit)]




class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Family(StrEnum):
    DENSE = "dense"
    MOE = "moe"
    VLM = "vlm"
    ENCODER_DECODER = "encoder_decoder"
    ENCODER = "encoder"
    DIFFUSION = "diffusion"

    @property
    def decodes(self) -> bool:
        """Whether the model runs a decode loop, keeping state across its steps."""
        return self not in (Family.ENCODER, Family.DIFFUSION)


class MLA(_Spec):
    """Multi-head latent attention (DeepSeek-V2/V3): projections and the cached latent."""

    kv_lora_rank: Width
    qk_rope_head_dim: Width0  # 0: NoPE, no rotary part in the latent (GLM-5.3)
    qk_nope_head_dim: Width
    v_head_dim: Width
    q_lora_rank: Width | None = None  # None: queries come from one full projection


class Indexer(_Spec):
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5, DeepSeek-V4's
    compressed layers): `heads` query heads of `head_dim` over the query latent, one key of
    `head_dim` per token (or per compressed entry), and the `topk` entries each query keeps."""

    heads: Pos
    head_dim: Pos
    topk: Pos
    # GLM-5.3-Flash (`index_kpool`): the indexer scores pools of this many tokens, each
    # token's key weighted by a learned gate (`kinds/pooled_dsa.py`); None: token by token.
    pool: Pos | None = None


class Compression(_Spec):
    """DeepSeek-V4's attention: low-rank queries, one key-and-value head (K = V), a grouped
    low-rank output projection, a sliding window on every layer, and older tokens compressed
    `ratio` to one entry (CSA layers at `csa_ratio` with an indexer, HCA at `hca_ratio`)."""

    q_lora_rank: Pos
    o_groups: Pos
    o_lora_rank: Pos
    rope_dim: Pos
    csa_ratio: Pos = 4
    hca_ratio: Pos = 128


class MoE(_Spec):
    """Mixture-of-experts MLP: which layers, how many experts, how big, what else."""

    experts: Experts
    top_k: Experts
    expert_intermediate_size: Width
    # Zero-computation (identity) experts the router may pick beside the real ones
    # (LongCat-Flash): the router has experts + zero_experts rows, no weights behind them.
    zero_experts: NonNeg = 0
    # Rows transformers allocates in gate_up_proj for the zero experts (LongcatFlashExperts):
    # never used, held by no checkpoint and loaded by no engine; counted apart.
    reference_zero_rows: bool = False
    gated: bool = True  # the experts (and shared experts) have a gate projection
    expert_bias: bool = False  # per-expert biases on both projections (gpt-oss)
    router_bias: bool = False
    shared_experts: Experts0 = 0
    shared_intermediate_size: Width0 = 0  # per shared expert
    shared_expert_gate: bool = False  # a sigmoid gate Linear(hidden, 1) on the shared path
    # Nemotron-3's latent MoE: routed experts work in a narrower width, reached through
    # fc1_latent_proj (hidden → latent) and fc2_latent_proj (latent → hidden).
    latent_size: Pos | None = None
    # Which layers are MoE: an explicit list, or the rule
    # i >= first_dense and i % every == offset and i not in dense_layers.
    layers: LayerList | None = None
    first_dense: LayerIndex = 0
    every: Layers = 1
    offset: LayerIndex = 0
    dense_layers: LayerList = Field(default_factory=list)

    def is_moe_layer(self, index: int) -> bool:
        if self.layers is not None:
            return index in self.layers
        return (
            index >= self.first_dense
            and index % self.every == self.offset % self.every
            and index not in self.dense_layers
        )

    @model_validator(mode="after")
    def _check(self) -> MoE:
        if self.top_k > self.experts + self.zero_experts:
            raise ValueError(f"top_k ({self.top_k}) exceeds the {self.experts} experts")
        if self.shared_experts and not self.shared_intermediate_size:
            raise ValueError("shared_experts needs shared_intermediate_size")
        return self


class MTP(_Spec):
    """Multi-token-prediction layers (DeepSeek-V3 `num_nextn_predict_layers`, GLM-4.5,
    Qwen3-Next `mtp_num_hidden_layers`): weights checkpoints hold and transformers does not
    build, numbered after the decoder's layers (`model.layers.{layers + j}`).

    Each is a decoder layer of `kind` (default: the last layer's) whose MLP is the decoder's
    MoE when `moe`, plus `extra` tensors per MTP layer (the embedding/hidden norms and the
    2h → h projection that feed it, its shared-head norm …); `layers` in an extra tensor are
    ignored: it repeats once per MTP layer.
    """

    layers: Pos = 1
    kind: Annotated[str, Field(min_length=1)] | None = None
    moe: bool = True
    extra: list[ExtraTensor] = Field(default_factory=list, max_length=_b.LIST.limit)


class SSM(_Spec):
    """A Mamba (v1) or Mamba-2 mixer; its state is fixed per sequence."""

    version: Literal[1, 2] = 1
    d_state: Width
    d_conv: Width = 4
    expand: Width = 2
    d_inner: Pos | None = None  # expanded width; default expand × hidden_size
    dt_rank: Width | None = None  # Mamba-1; default ceil(hidden / 16)
    n_groups: Heads = 1  # Mamba-2
    heads: Heads | None = None  # Mamba-2 heads; default d_inner / head_dim
    head_dim: Width = 64  # Mamba-2
    conv_bias: bool = True
    proj_bias: bool = False
    out_proj_bias: bool | None = None  # default: proj_bias (Falcon-H1 sets it apart)
    inner_norms: bool = False  # Jamba's dt/B/C RMS norms inside the mixer
    gated_norm: bool = True  # Mamba-2's gated RMS norm before out_proj
    state_dtype: Name | None = None  # None: the KV cache dtype
    conv_dtype: str | None = None  # the conv window's; None: as the SSM state


class LinearAttention(_Spec):
    """A linear-attention mixer (Gated DeltaNet, KDA, lightning attention): heads whose state
    is a key × value matrix, fixed per sequence, plus a short causal conv window over the
    projected q/k/v channels (none when `conv_kernel` is 0)."""

    key_heads: Pos
    value_heads: Pos | None = None  # default: key_heads
    key_head_dim: Pos
    value_head_dim: Pos | None = None  # default: key_head_dim
    conv_kernel: NonNeg = 4
    # Gated DeltaNet's input projections: Qwen3-Next fuses them (in_proj_qkvz, in_proj_ba),
    # Qwen3.5 keeps four (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a); same shapes.
    fused_projections: bool = False
    state_dtype: str | None = None  # the recurrent state's (mamba_ssm_dtype); None: KV dtype
    conv_dtype: str | None = None  # the conv window's; None: as the recurrent state
    # KDA's output gate: low rank (g_a_proj, g_b_proj; Kimi Linear) or one full-rank g_proj
    # (Kimi-K3's `use_full_rank_gate`); and the entries of its decay A_log (None: one per
    # head; Kimi-K3's checkpoint stores one per head dim).
    full_rank_gate: bool = False
    decay_entries: Pos | None = None
    # KDA's forget gate: low rank (f_a_proj, f_b_proj; Kimi Linear) or one full-rank f_proj
    # (Ling 3's `BailingHybridForgetGate`).
    full_rank_forget_gate: bool = False

    @property
    def v_heads(self) -> int:
        return self.value_heads or self.key_heads

    @property
    def v_dim(self) -> int:
        return self.value_head_dim or self.key_head_dim


class ShortConv(_Spec):
    """A gated short convolution (LFM2): in_proj to 3 × hidden, a depthwise causal conv of
    `kernel` taps over hidden channels, out_proj; its state is the last kernel − 1 inputs."""

    kernel: Pos = 3
    bias: bool = False
    state_dtype: Name | None = None  # None: the KV cache dtype


class ResidualConv(_Spec):
    """Inkling's short convolutions beside attention: a depthwise causal conv of `kernel`
    taps, no bias, each added back to its input, on K and on V after their projections and
    on the attention and MLP outputs before each residual add; run and cached in
    `state_dtype` (transformers keeps these modules in float32)."""

    kernel: Pos = 4
    state_dtype: Name = "fp32"
    # Whether the kind yields Inkling's four conv weights; False where a family's convs have
    # other weights (Inkling 2's dynamic and scaled convolutions) and lists them itself.
    weights: bool = True


class Loop(_Spec):
    """Looped layers (Inkling 2 Loop): layers `start` … `end` − 1 run `passes` times for
    every token, each pass over its own cache (transformers appends passes − 1 copies of
    those layers' cache layers, `Inkling2LoopTextModel.forward`)."""

    start: LayerIndex
    end: LayerIndex
    passes: Pos


class ExtraTensor(_Spec):
    """A tensor the stack's flags do not describe: patch embeddings, gates, poolers …

    `layers`, when given, repeats the tensor once per listed layer of its stack (and the
    layer index decides the pipeline stage); otherwise it is a single tensor.
    """

    name: Name
    shape: Annotated[list[Dim], Field(max_length=_b.TENSOR_RANK.limit)]
    component: Component = Component.OTHER
    shard: Shard = Shard.REPLICATED
    layers: LayerList | None = None
    linear: bool = False  # a matmul weight quantization applies to


class RopeScaling(_Spec):
    """A config's `rope_scaling` / `rope_parameters`: how the rotary embedding is extended
    past the trained positions (`type`: linear, dynamic, yarn, deepseek_yarn, llama3,
    longrope, mrope, default …)."""

    type: Annotated[str, Field(min_length=1)] = "default"
    factor: Annotated[float, Field(gt=0)] | None = None
    original_max_positions: Pos | None = None


class LayerOverride(_Spec):
    """Shapes that differ on some layers: the layers listed, or every layer of the kinds
    listed (Gemma 4's global layers, MiMo-V2's sliding layers, Nemotron-H's MLP-less mixer
    layers, per-layer `block_configs`). Fields left unset keep the stack's value; later
    overrides win over earlier ones."""

    layers: LayerList | None = None
    kinds: list[Annotated[str, Field(min_length=1)]] | None = None
    heads: Heads | None = None
    kv_heads: Pos | None = None
    head_dim: Pos | None = None
    v_head_dim: Pos | None = None
    intermediate_size: Width0 | None = None
    mlp: Literal["gated", "plain", "none"] | None = None
    qkv_bias: bool | None = None
    o_bias: bool | None = None
    qk_norm: Literal["none", "head", "full"] | None = None
    sliding_window: Tokens | None = None
    partial_rotary_factor: Annotated[float, Field(gt=0, le=1)] | None = None
    rope: bool | None = None
    attn_output_gate: bool | None = None
    k_eq_v: bool | None = None
    shares_indexer: bool | None = None
    sinks: bool | None = None  # MiMo-V2's sinks on its sliding layers alone
    compress_ratio: Pos | None = None  # DeepSeek-V4.1's per-layer compress_ratios entry

    @model_validator(mode="after")
    def _check(self) -> LayerOverride:
        if (self.layers is None) == (self.kinds is None):
            raise ValueError("give exactly one of layers or kinds")
        return self

    def applies(self, index: int, kind: str) -> bool:
        return (self.layers is not None and index in self.layers) or (
            self.kinds is not None and kind in self.kinds)

    def updates(self) -> dict[str, object]:
        return {k: v for k, v in self.model_dump(exclude={"layers", "kinds"}).items()
                if v is not None}


class Stack(_Spec):
    """A transformer stack: a decoder, or an encoder's layers.

    Per-layer kinds come from `layer_types`, repeated cyclically to `layers` entries (so
    Gemma 2's alternation is `[sliding, full]`); default every layer `full`.
    """

    layers: Layers
    hidden_size: Width | None = None
    heads: Heads | None = None
    kv_heads: Heads | None = None  # default: heads (multi-head attention)
    head_dim: Width | None = None  # default: hidden_size / heads
    v_head_dim: Width | None = None  # default: head_dim
    intermediate_size: Width0 | None = None
    mlp: Literal["gated", "plain", "none"] = "gated"
    mlp_bias: bool = False
    qkv_bias: bool = False
    k_bias: bool | None = None  # default: qkv_bias (Whisper's k_proj has none)
    o_bias: bool = False
    qk_norm: Literal["none", "head", "full"] = "none"
    sinks: bool = False  # a learned per-head attention sink (gpt-oss)
    norm: Literal["rms", "layer"] = "rms"  # layer norm carries a bias
    norms_per_layer: Annotated[int, Field(ge=0, le=_b.NORMS.limit)] = 2
    final_norm: bool = True
    vocab_size: Rows0 = 0
    embedding_rows: Rows0 | None = None  # when the input table differs from vocab_size
    # Width of the token table and the output head when it is not hidden_size (OPT-350m's
    # word_embed_proj_dim: project_in / project_out, given as extra tensors, bridge the two).
    embedding_dim: Pos | None = None
    tied_embeddings: bool = False
    lm_head: bool = True
    lm_head_bias: bool = False
    position_embeddings: Tokens0 = 0  # learned absolute positions (rows)
    token_types: Rows0 = 0  # BERT-style token-type embeddings (rows)
    embedding_norm: bool = False  # a norm right after the embeddings
    pooler: bool = False  # BERT pooler: Linear(hidden, hidden) with bias
    layer_types: Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]],
                           Field(max_length=_b.LAYERS.limit)] | None = None
    sliding_window: Tokens | None = None
    chunk_size: Tokens | None = None
    mla: MLA | None = None
    indexer: Indexer | None = None
    # The layer reuses the previous indexed layer's top-k (GLM IndexShare `indexer_types`
    # "shared"): no indexer weights, no indexer keys of its own.
    shares_indexer: bool = False
    # DeepSeek-V4.1 (kinds csa2, csa2_source): the layer's own compress ratio, tokens per
    # entry of its group's shared compressed KV (1: every token its own entry); None: the
    # layer has no compressed branch (a window alone).
    compress_ratio: Pos | None = None
    compression: Compression | None = None
    mtp: MTP | None = None
    moe: MoE | None = None
    ssm: SSM | None = None
    linear_attention: LinearAttention | None = None
    short_conv: ShortConv | None = None
    residual_conv: ResidualConv | None = None
    loop: Loop | None = None
    # Kinds of mixers every layer runs in parallel beside its own (Falcon-H1: Mamba-2 beside
    # attention, their outputs summed).
    parallel_mixers: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    rope: bool = True  # rotary positions (engines keep a cos/sin cache)
    partial_rotary_factor: Annotated[float, Field(gt=0, le=1)] = 1.0
    rope_scaling: RopeScaling | None = None  # how the rotary embedding is extended
    local_rope: bool = False  # sliding layers keep their own unscaled rotary (Gemma 3)
    cross_attention: bool = False  # every layer also attends to the encoder (Whisper)
    cross_qk_norm: bool = False  # per-head q/k norms on cross-attention (Mllama)
    attn_output_gate: bool = False  # q_proj also yields a sigmoid gate on the output (×2)
    k_eq_v: bool = False  # keys double as values: no v_proj (Gemma 4 attention_k_eq_v)
    extra: list[ExtraTensor] = Field(default_factory=list, max_length=_b.LIST.limit)
    overrides: list[LayerOverride] = Field(default_factory=list)
    _at: dict[int, Stack] = PrivateAttr(default_factory=dict)

    def at(self, index: int) -> Stack:
        """The stack as layer `index` sees it: its overrides applied (cached per layer)."""
        if not self.overrides:
            return self
        found = self._at.get(index)
        if found is None:
            kind = self.kind_of(index)
            update: dict[str, object] = {}
            for override in self.overrides:
                if override.applies(index, kind):
                    update.update(override.updates())
            if update:
                update["overrides"] = []
                found = self.model_copy(update=update)
                found._at = {}
            else:
                found = self
            self._at[index] = found
        return found

    @property
    def shaped(self) -> bool:
        """Whether the stack has the shapes parameters can be counted from."""
        if self.hidden_size is None:
            return False
        return self.heads is not None or set(self.kinds()) == {LayerKind.MAMBA}

    def kind_of(self, index: int) -> str:
        """The kind name of layer `index` (`layer_types` repeats cyclically)."""
        if not self.layer_types:
            return LayerKind.MLA if self.mla else LayerKind.FULL
        return self.layer_types[index % len(self.layer_types)]

    def kinds(self) -> list[str]:
        return [self.kind_of(i) for i in range(self.layers)]

    def visits(self, index: int) -> int:
        """How many times a token runs layer `index` (a looped layer's passes, else 1)."""
        loop = self.loop
        return loop.passes if loop is not None and loop.start <= index < loop.end else 1

    @property
    def visited_layers(self) -> int:
        """Layers a token runs through, a looped layer once per pass."""
        return sum(self.visits(i) for i in range(self.layers))

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads or 0

    @property
    def k_dim(self) -> int:
        if self.head_dim:
            return self.head_dim
        if self.hidden_size and self.heads:
            return self.hidden_size // self.heads
        return 0

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.k_dim

    def _check_blocks(self) -> None:
        """Each kind the stack names has the block it is built from (the kind's `requires`);
        a name no kind is registered under is left to the engine, which names it."""
        from llm_inventory.engine import kinds as layer_kinds
        from llm_inventory.errors import InputError

        for name in sorted({*(self.layer_types or []), *self.parallel_mixers}):
            try:
                field = layer_kinds.get(name).requires
            except InputError:
                continue
            if field and not getattr(self, field):
                raise ValueError(f"layer_types has {name} layers but {field} is not set")

    @model_validator(mode="after")
    def _check(self) -> Stack:
        self._check_blocks()
        if self.heads and self.kv_heads and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) is not a multiple of kv_heads "
                             f"({self.kv_heads})")
        if self.layer_types is not None and not self.layer_types:
            raise ValueError("layer_types must not be empty")
        return self


class Media(_Spec):
    """How an encoder turns one input item into feature tokens for the language model."""

    image_size: Pixels | None = None  # default square input side, pixels
    patch_size: Pixels | None = None
    temporal_patch_size: Frames = 1  # video frames folded into one patch
    spatial_merge_size: Pixels = 1  # merge m × m patches into one token after the encoder
    class_token: bool = False  # a CLS token that reaches the language model
    tokens_per_item: Tokens | None = None  # given directly (coarse or fixed-size encoders)
    # Tiled encoders: tiles per image (Mllama: always all of them), or the most the
    # "grid" tiling cuts.
    max_tiles: Tiles = 1
    # At most this many tokens per item: the input is resized, aspect kept, to the largest
    # sides that are multiples of patch × merge within budget × merge² patches (Gemma 4).
    token_budget: Pos | None = None
    row_break: bool = False  # a break token closes each row of merged patches (Pixtral)
    # An image past this many pixels on a side is scaled down to fit, and each side padded
    # up to whole merged patches (Pixtral).
    longest_edge: Pos | None = None
    # Sides are rounded to the nearest multiple of patch × merge (Qwen's smart_resize), the
    # area then scaled, aspect kept, into min_pixels … max_pixels where they are given (the
    # processor's settings; None: that limit is not applied).
    round_sides: bool = False
    min_pixels: Pos | None = None
    max_pixels: Pos | None = None
    # How a large image is cut into `image_size` tiles: "grid" (InternVL: the grid of at
    # most max_tiles tiles closest to its aspect ratio, plus a thumbnail tile when there
    # is more than one), "anyres" (LLaVA-NeXT: a base tile plus the best-fitting
    # grid_pinpoints resolution, its features unpadded to the image's aspect), "split"
    # (LFM2-VL: an image past max_pixels × split_tolerance is cut as "grid" cuts it, its
    # thumbnail the smart-resized image; a smaller one is that image alone).
    tiling: Literal["none", "grid", "anyres", "split"] = "none"
    split_tolerance: float | None = None
    # LFM2-VL's markers: a start and an end token around the image, one before each tile
    # and one before the thumbnail (they occupy the context like the features).
    tile_markers: bool = False
    min_tiles: Pos = 1
    thumbnail: bool = False
    grid_pinpoints: list[tuple[Pos, Pos]] = Field(default_factory=list)  # (height, width) px
    newline_token: bool = False  # anyres: a newline token closes each row of the grid
    anyres_max_tiles: Pos | None = None  # OneVision anyres_max_N: pool the grid down past N


class Encoder(_Spec):
    """An encoder stage: vision tower, audio encoder or text encoder, with its projector."""

    kind: Literal["vision", "audio", "text"] = "vision"
    stack: Stack | None = None
    parameters: NonNeg | None = None  # coarse: a given count instead of a stack
    media: Media = Field(default_factory=Media)
    projector: list[ExtraTensor] = Field(default_factory=list, max_length=_b.LIST.limit)
    projector_parameters: NonNeg | None = None  # coarse projector count


class DiffusionPart(_Spec):
    """One component of a diffusion pipeline, by its parameter count."""

    name: Name
    role: Literal["text_encoder", "denoiser", "vae"]
    parameters: Pos
    dtype: Name | None = None
    flops_per_step: FlopCount | None = None  # denoiser: given FLOPs for one step, if known


class Diffusion(_Spec):
    """A diffusion pipeline: text encoders, a denoiser run `steps` times, a VAE decoder."""

    parts: Annotated[list[DiffusionPart], Field(max_length=64)]
    steps: Steps = 28
    classifier_free_guidance: bool = True  # doubles the denoiser's batch
    image_size: Pixels = 1024
    vae_scale_factor: Pixels = 8
    latent_channels: Width = 4
    patch_size: Pixels = 1  # a transformer denoiser patchifies the latent
    text_tokens: Tokens = 77


class Coarse(_Spec):
    """Totals given directly, for when shapes are not known (the seed's "8 × 7B, two active").

    With experts, resident = shared + experts × expert_parameters and active = shared +
    top_k × expert_parameters.
    """

    total: NonNeg | None = None
    active: NonNeg | None = None
    experts: Experts | None = None
    top_k: Experts | None = None
    expert_parameters: NonNeg | None = None
    shared_parameters: NonNeg = 0

    @model_validator(mode="after")
    def _check(self) -> Coarse:
        expert_fields = (self.experts, self.top_k, self.expert_parameters)
        if any(v is not None for v in expert_fields) and None in expert_fields:
            raise ValueError("experts, top_k and expert_parameters go together")
        if self.experts and self.top_k and self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) exceeds the {self.experts} experts")
        if self.total is None and self.experts is None:
            raise ValueError("give total, or experts with top_k and expert_parameters")
        return self


class Quantization(_Spec):
    """How a checkpoint stores its matmul weights.

    `bits` per weight element; `group_size` elements share one scale (and one zero point
    when `zero_point`); `block` is a 2-D block of a block-scaled format (DeepSeek's FP8
    128 × 128). `ignore` lists module patterns left unquantized (`lm_head`, globs, or
    `re:` regular expressions); `experts_only` quantizes only expert weights (gpt-oss MXFP4).
    """

    method: Name
    bits: Annotated[float, Field(gt=0, le=16)]
    group_size: Width | None = None
    block: tuple[Width, Width] | None = None
    per_channel: bool = False  # one scale per output row
    scale_bits: Bits = 32
    zero_point: bool = False
    zero_point_bits: Bits = 4
    act_order_index: bool = False  # GPTQ's g_idx: one int32 per input feature
    ignore: list[Text] = Field(default_factory=list, max_length=_b.LIST.limit)
    experts_only: bool = False
    # Per-module schemes (modelopt MIXED_PRECISION): module name, as tensors are named here
    # with one expert standing for all, to the scheme its weights are stored in. When given,
    # a matmul weight of a module it does not name is unquantized.
    per_module: dict[Text, Quantization] = Field(default_factory=dict,
                                                 max_length=_b.LIST.limit)
    # The routed experts' own scheme, where the checkpoint stores them apart from the rest
    # (DeepSeek-V4's `expert_dtype: fp4` beside block-scaled FP8); None: the scheme above.
    experts: Quantization | None = None


class TensorRole(StrEnum):
    """What a checkpoint tensor is, beside being a parameter."""

    WEIGHT = "weight"  # a parameter (packed integer formats hold several per element)
    SCALE = "scale"  # a quantization scale (weight_scale_inv, scales, absmax …)
    ZERO_POINT = "zero_point"  # a quantization zero point (qzeros …)
    INDEX = "index"  # GPTQ's activation-order index (g_idx)
    BUFFER = "buffer"  # stored but not a parameter (e_score_correction_bias, rope_freqs …)


@dataclass(frozen=True, slots=True)
class CheckpointTensor:
    """One tensor as a checkpoint's header describes it (the weights are never read).

    `shape` is outermost first (a GGUF's dimensions reversed); `bytes` is what the file
    holds for it. From an index alone only `name` and `file` are known. A plain dataclass,
    not a pydantic model: checkpoints hold up to ~10⁵ tensors, and the readers validate
    each one themselves.
    """

    name: Name
    dtype: str | None = None  # as the file spells it: BF16, F8_E4M3, Q4_K …
    shape: tuple[int, ...] | None = None
    elements: int | None = None
    bytes: int | None = None
    file: str = ""
    component: Component = Component.OTHER
    role: TensorRole = TensorRole.WEIGHT
    layer: int | None = None  # decoder layer index read from the name


class CheckpointTally(_Spec):
    """Tensors, elements and bytes under one key (a dtype, a component, a role)."""

    key: str
    tensors: NonNeg
    elements: NonNeg
    bytes: NonNeg


class CheckpointFacts(_Spec):
    """What a checkpoint's headers (or its index alone) say: exact bytes, per dtype and part.

    `by_component` uses the Component names, plus `mtp` for layers past the decoder's layer
    count (DeepSeek-V3's multi-token-prediction layer). `tensors` (left out of dumps) lists
    every tensor for callers that shard real tensors.
    """

    format: Literal["safetensors", "gguf"]
    path: str
    files: list[str]
    headers_read: bool  # False: sizes come from model.safetensors.index.json alone
    tensor_count: NonNeg
    total_bytes: NonNeg  # tensor data, headers excluded
    elements: NonNeg | None = None
    by_dtype: list[CheckpointTally] = Field(default_factory=list)
    by_component: list[CheckpointTally] = Field(default_factory=list)
    by_role: list[CheckpointTally] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)
    notes: list[Text] = Field(default_factory=list, max_length=_b.LIST.limit)
    tensors: Annotated[list[CheckpointTensor], SkipValidation] = Field(
        default_factory=list, exclude=True, repr=False)


class ModelSpec(_Spec):
    """A model's topology: what a serving plan must respect."""

    name: Name
    family: Family
    source: Text | None = None  # where the shapes came from
    # The architecture the shapes were read as: the Hugging Face `model_type` or the GGUF
    # `general.architecture` (None: given by hand). A fact engines read where their rules
    # differ by architecture (llama.cpp loads no sliding window for some); left out of
    # dumps, which describe shapes.
    model_type: Name | None = Field(default=None, exclude=True)
    dtype: Name = "bf16"  # unquantized weight dtype
    decoder: Stack | None = None
    encoder: Encoder | None = None
    # Further encoders beside `encoder`, each with its own projector: an audio tower next to
    # the vision one (Gemma 3n, Gemma 4 E2B/E4B, Qwen2.5-Omni). `--images` reads `encoder`.
    extra_encoders: list[Encoder] = Field(default_factory=list)
    diffusion: Diffusion | None = None
    coarse: Coarse | None = None
    quantization: Quantization | None = None
    max_context: Tokens | None = None  # max_position_embeddings, where known
    notes: list[Text] = Field(default_factory=list, max_length=_b.LIST.limit)
    checkpoint: CheckpointFacts | None = None  # read from real files' headers, when given
    # False: the shapes are a generic estimate (an architecture no importer models), and
    # `estimated` says what is estimated; every result built from the model carries both.
    exact: bool = True
    estimated: str | None = None
    # Set where the shapes are known but the state's rule is assumed, not held to a reference
    # (no modelling code to read): what was assumed. The state is then an estimate.
    state_estimated: Text | None = None

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        family = self.family
        if family is Family.DIFFUSION:
            if self.diffusion is None:
                raise ValueError("a diffusion model needs a `diffusion` block")
            return self
        if family is Family.ENCODER:
            if self.encoder is None and self.decoder is None:
                raise ValueError("an encoder-only model needs an `encoder` (or stack) block")
            return self
        if self.decoder is None:
            raise ValueError(f"a {family} model needs a `decoder` block")
        if not self.decoder.shaped and self.coarse is None:
            raise ValueError(
                "decoder needs hidden_size and heads to count parameters, "
                "or give a `coarse` block with the totals"
            )
        if family in (Family.VLM, Family.ENCODER_DECODER) and self.encoder is None:
            raise ValueError(f"a {family} model needs an `encoder` block")
        if family is Family.MOE and self.decoder.moe is None and (
            self.coarse is None or self.coarse.experts is None
        ):
            raise ValueError("an moe model needs decoder.moe (or coarse experts)")
        return self
