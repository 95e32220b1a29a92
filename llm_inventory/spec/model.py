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
    SkipValidation,
    model_validator,
)
from pydantic_core import PydanticCustomError

from llm_inventory import bounds as _b

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
Params0 = Annotated[int, Field(ge=0, le=_b.PARAMETERS.limit)]
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


class LayerKind(StrEnum):
    """What a decoder layer's mixer is, and so what state it keeps."""

    FULL = "full"  # full causal attention: KV for every token
    SLIDING = "sliding"  # sliding-window attention: KV for the last `sliding_window` tokens
    CHUNKED = "chunked"  # chunked local attention: KV within the current `chunk_size` chunk
    MLA = "mla"  # multi-head latent attention: one compressed latent per token
    MAMBA = "mamba"  # recurrent / state-space mixer: fixed state per sequence
    CROSS = "cross"  # cross-attention to encoder output (no self-attention KV)
    SHARED = "shared"  # attention that reads another layer's KV: stores nothing


class Component(StrEnum):
    """Where a parameter belongs in the per-component breakdown."""

    EMBEDDINGS = "embeddings"
    ATTENTION = "attention"
    MLP = "mlp"
    EXPERTS = "experts"
    SHARED_EXPERTS = "shared_experts"
    ROUTER = "router"
    MIXER = "mixer"  # recurrent / state-space mixers
    NORMS = "norms"
    LM_HEAD = "lm_head"
    ENCODER = "encoder"
    PROJECTOR = "projector"
    DENOISER = "denoiser"
    TEXT_ENCODER = "text_encoder"
    VAE = "vae"
    OTHER = "other"


class Shard(StrEnum):
    """How tensor parallelism divides a tensor."""

    COLUMN = "column"  # output features split across ranks
    ROW = "row"  # input features split across ranks
    VOCAB = "vocab"  # vocabulary rows split (embedding, lm_head)
    KV = "kv"  # K/V projection: split by KV head, replicated past the head count
    REPLICATED = "replicated"  # every rank holds all of it


class MLA(_Spec):
    """Multi-head latent attention (DeepSeek-V2/V3): projections and the cached latent."""

    kv_lora_rank: Width
    qk_rope_head_dim: Width
    qk_nope_head_dim: Width
    v_head_dim: Width
    q_lora_rank: Width | None = None  # None: queries come from one full projection


class MoE(_Spec):
    """Mixture-of-experts MLP: which layers, how many experts, how big, what else."""

    experts: Experts
    top_k: Experts
    expert_intermediate_size: Width
    gated: bool = True
    expert_bias: bool = False  # per-expert biases on both projections (gpt-oss)
    router_bias: bool = False
    shared_experts: Experts0 = 0
    shared_intermediate_size: Width0 = 0  # per shared expert
    shared_expert_gate: bool = False  # a sigmoid gate Linear(hidden, 1) on the shared path
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
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) exceeds the {self.experts} experts")
        if self.shared_experts and not self.shared_intermediate_size:
            raise ValueError("shared_experts needs shared_intermediate_size")
        return self


class SSM(_Spec):
    """A Mamba (v1) or Mamba-2 mixer; its state is fixed per sequence."""

    version: Literal[1, 2] = 1
    d_state: Width
    d_conv: Width = 4
    expand: Width = 2
    dt_rank: Width | None = None  # Mamba-1; default ceil(hidden / 16)
    n_groups: Heads = 1  # Mamba-2
    heads: Heads | None = None  # Mamba-2 heads; default d_inner / head_dim
    head_dim: Width = 64  # Mamba-2
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False  # Jamba's dt/B/C RMS norms inside the mixer
    gated_norm: bool = True  # Mamba-2's gated RMS norm before out_proj
    state_dtype: Name | None = None  # None: the KV cache dtype


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
    tied_embeddings: bool = False
    lm_head: bool = True
    lm_head_bias: bool = False
    position_embeddings: Tokens0 = 0  # learned absolute positions (rows)
    token_types: Rows0 = 0  # BERT-style token-type embeddings (rows)
    embedding_norm: bool = False  # a norm right after the embeddings
    pooler: bool = False  # BERT pooler: Linear(hidden, hidden) with bias
    layer_types: Annotated[list[LayerKind], Field(max_length=_b.LAYERS.limit)] | None = None
    sliding_window: Tokens | None = None
    chunk_size: Tokens | None = None
    mla: MLA | None = None
    moe: MoE | None = None
    ssm: SSM | None = None
    rope: bool = True  # rotary positions (engines keep a cos/sin cache)
    partial_rotary_factor: Annotated[float, Field(gt=0, le=1)] = 1.0
    # Positions of each cos/sin cache an engine precomputes (scaled RoPE variants extend
    # it: linear and dynamic NTK × factor, YaRN original × factor); None: one cache of the
    # model's max_context.
    rope_cache_positions: Annotated[list[Tokens], Field(max_length=64)] | None = None
    cross_attention: bool = False  # every layer also attends to the encoder (Whisper)
    cross_qk_norm: bool = False  # per-head q/k norms on cross-attention (Mllama)
    extra: list[ExtraTensor] = Field(default_factory=list, max_length=_b.LIST.limit)

    @property
    def shaped(self) -> bool:
        """Whether the stack has the shapes parameters can be counted from."""
        if self.hidden_size is None:
            return False
        return self.heads is not None or set(self.kinds()) == {LayerKind.MAMBA}

    def kind_of(self, index: int) -> LayerKind:
        if not self.layer_types:
            return LayerKind.MLA if self.mla else LayerKind.FULL
        return self.layer_types[index % len(self.layer_types)]

    def kinds(self) -> list[LayerKind]:
        return [self.kind_of(i) for i in range(self.layers)]

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

    @model_validator(mode="after")
    def _check(self) -> Stack:
        kinds = set(self.layer_types or [])
        if LayerKind.SLIDING in kinds and not self.sliding_window:
            raise ValueError("layer_types has sliding layers but sliding_window is not set")
        if LayerKind.CHUNKED in kinds and not self.chunk_size:
            raise ValueError("layer_types has chunked layers but chunk_size is not set")
        if LayerKind.MLA in kinds and not self.mla:
            raise ValueError("layer_types has mla layers but the mla block is missing")
        if LayerKind.MAMBA in kinds and not self.ssm:
            raise ValueError("layer_types has mamba layers but the ssm block is missing")
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
    max_tiles: Tiles = 1  # tiled encoders (Mllama): tiles per image


class Encoder(_Spec):
    """An encoder stage: vision tower, audio encoder or text encoder, with its projector."""

    kind: Literal["vision", "audio", "text"] = "vision"
    stack: Stack | None = None
    parameters: Params0 | None = None  # coarse: a given count instead of a stack
    media: Media = Field(default_factory=Media)
    projector: list[ExtraTensor] = Field(default_factory=list, max_length=_b.LIST.limit)
    projector_parameters: Params0 | None = None  # coarse projector count


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
    # Serving kernels that pad expert matrices at load time: the per-rank intermediate and
    # each matmul's reduction dimension rounded up to a multiple of this (vLLM's MXFP4 MoE
    # kernels on Hopper: 256).
    runtime_pad: Width | None = None


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

    name: str
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
    notes: list[str] = Field(default_factory=list)
    tensors: Annotated[list[CheckpointTensor], SkipValidation] = Field(
        default_factory=list, exclude=True, repr=False)


class ModelSpec(_Spec):
    """A model's topology: what a serving plan must respect."""

    name: Name
    family: Family
    source: Text | None = None  # where the shapes came from
    dtype: Name = "bf16"  # unquantized weight dtype
    decoder: Stack | None = None
    encoder: Encoder | None = None
    diffusion: Diffusion | None = None
    coarse: Coarse | None = None
    quantization: Quantization | None = None
    max_context: Tokens | None = None  # max_position_embeddings, where known
    notes: list[Text] = Field(default_factory=list, max_length=_b.LIST.limit)
    checkpoint: CheckpointFacts | None = None  # read from real files' headers, when given

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
