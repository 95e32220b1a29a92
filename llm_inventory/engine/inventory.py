"""The inventory of one topology: the facts a serving plan must respect.

It follows the seed's practice list: parameter bytes (resident and active, per component),
persistent state (per token, per sequence, per kind with its release rule; media features,
recurrent and sampler state), prefill and decode shapes (GEMMs, FLOPs, bytes, intensity),
conditional communication, and the independently placeable stages with the splits the
topology makes available.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine import dtypes, kinds
from llm_inventory.engine.checkpoint_compare import (
    CheckpointComparison,
    checkpoint_weight_bytes,
    compare_checkpoint,
)
from llm_inventory.engine.comm import Communication, communication
from llm_inventory.engine.dtypes import weight_dtypes
from llm_inventory.engine.media import MediaGeometry, feature_tokens
from llm_inventory.engine.model_state import context_notes, state_layers
from llm_inventory.engine.params import ParameterCount, count_parameters
from llm_inventory.engine.roofline import Efficiency, Timing, roofline
from llm_inventory.engine.sampling import SamplerStateItem, sampler_state
from llm_inventory.engine.shapes import Gemm, PhaseWork, attention_flops, phase_work
from llm_inventory.engine.state import KindState, StateRequest, size_state
from llm_inventory.engine.tensors import TensorGroup, model_tensors
from llm_inventory.engine.trust import Trust, counted, counted_state, estimate, exact
from llm_inventory.engine.trust import roofline as trust_roofline
from llm_inventory.engine.weight_scheme import WeightScheme, describe_weights
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import Component, Family, ModelSpec, Quantization
from llm_inventory.units import DTYPE_BITS, normalize_dtype


class InventoryRequest(BaseModel):
    """What to inventory: a model and the workload its figures are quoted at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    context: int = Field(default=8000, ge=1)  # positions per sequence (text + media)
    prompt_tokens: int | None = Field(default=None, ge=1)  # text prompt; default min(1000, …)
    batch: int = Field(default=1, ge=1)  # decode batch (sequences per step)
    dtype: str | None = None  # weight dtype override (runtime quantization below 16 bits)
    kv_dtype: str | None = None
    images: int = Field(default=1, ge=0)  # media items per request (encoder models)
    image_width: int | None = Field(default=None, ge=1)
    image_height: int | None = Field(default=None, ge=1)
    frames: int = Field(default=1, ge=1)
    patch_size: int | None = Field(default=None, ge=1)
    merge: int | None = Field(default=None, ge=1)
    temporal_patch: int | None = Field(default=None, ge=1)
    device: Device | None = None  # for roofline timings on one device
    efficiency: Efficiency = Efficiency()


class StateSummary(BaseModel):
    """Persistent state per request."""

    kv_dtype: str
    context: int
    bytes_per_token: int  # while every window is still filling
    bytes_per_sequence: int  # at `context` positions
    fixed_bytes_per_sequence: int  # recurrent and cross-attention state
    kinds: list[KindState]
    media_tokens_per_request: int  # feature tokens the request's media add
    media_in_context: bool  # True: they occupy positions; False: cross-attention reads them
    sampler: list[SamplerStateItem]


class EncoderWork(BaseModel):
    """One media item through the encoder."""

    tokens: int  # positions the encoder runs over (patches, frames …)
    feature_tokens: int  # what reaches the language model
    flops: int
    weight_bytes: int


class DiffusionWork(BaseModel):
    """One image through the step loop."""

    latent_tokens: int
    steps: int
    guidance_factor: int  # 2 with classifier-free guidance: the batch doubles
    denoiser_flops_per_step: int
    denoiser_flops: int
    flops_per_step_given: bool
    batch_compatible_when: list[str]


class Stage(BaseModel):
    """An independently placeable part of the serving graph."""

    name: str
    role: Literal["encoder", "prefill", "decode", "experts", "text_encoder", "denoiser", "vae",
                  "forward"]
    parameters: int | None
    weight_bytes: int | None
    runs: str  # how often the stage runs for one request
    state: str  # what it keeps between runs


class Split(BaseModel):
    name: str
    available: bool
    why: str


class Inventory(BaseModel):
    schema_version: int = 1
    model: str
    family: Family
    source: str | None
    notes: list[str]  # facts about the model that qualify its figures
    warnings: list[str] = []  # about this request: a context past the model's positions
    parameters: ParameterCount
    weight_bytes: int
    weight_dtype: str  # the dtype of unquantized tensors; `weights` holds the stored scheme
    weights: WeightScheme
    state: StateSummary | None
    media: MediaGeometry | None
    encoder: EncoderWork | None
    prefill: PhaseWork | None
    decode: PhaseWork | None
    diffusion: DiffusionWork | None
    communication: Communication | None
    stages: list[Stage]
    splits: list[Split]
    timing: Timing | None = None  # roofline on one device, when a device is given
    weight_bytes_source: Literal["config", "checkpoint headers", "checkpoint index"] = "config"
    checkpoint: CheckpointComparison | None = None  # config against the files' headers
    # False when the model is a generic estimate of an unmodelled architecture; `estimated`
    # then says what is estimated (and what a checkpoint's headers keep exact).
    exact: bool = True
    estimated: str | None = None
    trust: dict[str, Trust] = Field(default_factory=dict)  # how each field group was obtained


def _media(spec: ModelSpec, request: InventoryRequest) -> MediaGeometry | None:
    if spec.encoder is None or spec.family is Family.ENCODER:
        return None
    media = spec.encoder.media
    if (request.image_width is None and request.patch_size is None
            and media.tokens_per_item is None and media.image_size is None
            and media.token_budget is None):
        return None
    return feature_tokens(
        media, width=request.image_width, height=request.image_height, frames=request.frames,
        patch_size=request.patch_size, merge=request.merge,
        temporal_patch=request.temporal_patch,
    )


def _encoder_work(
    spec: ModelSpec, groups: list[TensorGroup], geometry: MediaGeometry, dtype: str,
    request: InventoryRequest,
) -> EncoderWork:
    """FLOPs for one item: every encoder/projector weight over the encoder's positions."""
    from llm_inventory.engine.weights import group_bytes

    assert spec.encoder is not None
    positions = geometry.patches or geometry.feature_tokens
    if geometry.patches and spec.encoder.media.tiling == "none":
        # per tile: its patches and the class token the encoder keeps
        positions = (positions + (1 if spec.encoder.media.class_token else 0)) \
            * geometry.tiles
    flops = weight = 0
    for group in groups:
        if group.stack not in ("encoder", "projector"):
            continue
        weight += group_bytes(group, dtype, None)
        if group.linear and len(group.shape) >= 2:
            rows = positions if group.stack == "encoder" else geometry.feature_tokens
            flops += 2 * rows * group.shape[-2] * group.shape[-1] * group.copies
    stack = spec.encoder.stack
    if stack is not None and stack.shaped:
        flops += attention_flops(stack, start=0, stop=positions, sequences=1,
                                 encoder_tokens=0) * 2  # bidirectional: every pair
    elif spec.encoder.parameters:
        # A tower given by its count: 2 FLOPs per weight per position (an estimate).
        flops += 2 * spec.encoder.parameters * positions
        if spec.coarse is not None:  # a shaped spec already holds it as one tensor group
            weight += spec.encoder.parameters * DTYPE_BITS[dtype] // 8
    return EncoderWork(tokens=positions, feature_tokens=geometry.feature_tokens,
                       flops=flops * request.images, weight_bytes=weight)


def _diffusion(spec: ModelSpec) -> DiffusionWork:
    assert spec.diffusion is not None
    d = spec.diffusion
    side = d.image_size // d.vae_scale_factor // d.patch_size
    latent = side * side
    denoiser = next((p for p in d.parts if p.role == "denoiser"), None)
    given = denoiser is not None and denoiser.flops_per_step is not None
    if denoiser is None:
        per_step = 0
    elif denoiser.flops_per_step is not None:
        per_step = denoiser.flops_per_step
    else:
        per_step = 2 * denoiser.parameters * (latent + d.text_tokens)
    factor = 2 if d.classifier_free_guidance else 1
    return DiffusionWork(
        latent_tokens=latent,
        steps=d.steps,
        guidance_factor=factor,
        denoiser_flops_per_step=per_step * factor,
        denoiser_flops=per_step * factor * d.steps,
        flops_per_step_given=given,
        batch_compatible_when=[
            "same resolution (latent shape)", "same number of steps and scheduler",
            "same guidance setting", "compatible conditioning and backend",
        ],
    )


def _component_sum(params: ParameterCount, components: set[Component]) -> tuple[int, int]:
    rows = [c for c in params.by_component if c.component in components]
    return sum(c.parameters for c in rows), sum(c.weight_bytes for c in rows)


def _extra_encoder_sums(spec: ModelSpec, dtype: str) -> list[tuple[int, int]]:
    """(parameters, weight bytes) of each further encoder with its projector."""
    from llm_inventory.engine.weights import group_bytes

    groups = [g for g in model_tensors(spec) if g.stack == "other_encoder"]
    sums = []
    for encoder in spec.extra_encoders:
        prefix = f"{encoder.kind}_encoder."
        own = [g for g in groups if g.name.startswith(prefix)]
        sums.append((sum(g.parameters for g in own),
                     sum(group_bytes(g, dtype, None) for g in own)))
    return sums


def _stages(spec: ModelSpec, params: ParameterCount, has_state: bool) -> list[Stage]:
    stages: list[Stage] = []
    if spec.family is Family.DIFFUSION:
        assert spec.diffusion is not None
        for part in spec.diffusion.parts:
            bits = DTYPE_BITS[normalize_dtype(part.dtype or spec.dtype)]
            runs = {"text_encoder": "once per request (per prompt)",
                    "denoiser": f"{spec.diffusion.steps} steps per image",
                    "vae": "once per image (latent → pixels)"}[part.role]
            stages.append(Stage(name=part.name, role=part.role, parameters=part.parameters,
                                weight_bytes=part.parameters * bits // 8, runs=runs,
                                state="the latent, same shape every step"
                                if part.role == "denoiser" else "none"))
        return stages
    if spec.family is Family.ENCODER:
        return [Stage(name="forward", role="forward", parameters=params.total,
                      weight_bytes=params.weight_bytes,
                      runs="once per input: a batch of complete inputs, no decode loop",
                      state="none (no stream to pace, no state to extend)")]
    if spec.encoder is not None:
        total, nbytes = _component_sum(params, {Component.ENCODER, Component.PROJECTOR})
        more = _extra_encoder_sums(spec, params.weight_dtype) if spec.extra_encoders else []
        total -= sum(m[0] for m in more)
        nbytes -= sum(m[1] for m in more)
        if params.given and spec.encoder.parameters:
            total = spec.encoder.parameters + (spec.encoder.projector_parameters or 0)
            nbytes = total * DTYPE_BITS[params.weight_dtype] // 8
        for kind, (count, size) in [(spec.encoder.kind, (total, nbytes))] + [
                (e.kind, m) for e, m in zip(spec.extra_encoders, more, strict=True)]:
            stages.append(Stage(
                name=f"{kind} encoder + projector", role="encoder",
                parameters=count or None, weight_bytes=size or None,
                runs="once per media item (reusable across questions about the same input)",
                state="its output features, cacheable per input",
            ))
    lm_params = params.total - sum(s.parameters or 0 for s in stages)
    lm_bytes = params.weight_bytes - sum(s.weight_bytes or 0 for s in stages)
    stages.append(Stage(name="prefill", role="prefill", parameters=lm_params,
                        weight_bytes=lm_bytes, runs="once per request over the prompt "
                        "(chunkable)", state="creates the KV state" if has_state else "none"))
    stages.append(Stage(name="decode", role="decode", parameters=lm_params,
                        weight_bytes=lm_bytes, runs="once per output token (atomic step "
                        "across the batch)",
                        state="reads and extends the KV state" if has_state else "none"))
    experts, expert_bytes = _component_sum(params, {Component.EXPERTS})
    if experts:
        stages.append(Stage(name="expert groups", role="experts", parameters=experts,
                            weight_bytes=expert_bytes,
                            runs="every MoE layer, for the tokens routed to them",
                            state="none"))
    return stages


def _splits(spec: ModelSpec, has_state: bool) -> list[Split]:
    moe = (spec.decoder is not None and spec.decoder.moe is not None) or (
        spec.coarse is not None and spec.coarse.experts is not None)
    diffusion = spec.family is Family.DIFFUSION
    return [
        Split(name="tensor (TP)", available=True,
              why="attention heads, MLP columns and vocabulary shard across devices"),
        Split(name="pipeline (PP)", available=spec.decoder is not None,
              why="layers split into stages" if spec.decoder is not None
              else "no layer stack described"),
        Split(name="expert (EP)", available=moe,
              why="experts dominate the parameters and can live on different devices" if moe
              else "a dense model has no experts to place"),
        Split(name="data (DP)", available=True, why="whole replicas serve separate requests"),
        Split(name="encoder disaggregation", available=spec.encoder is not None
              and spec.family is not Family.ENCODER,
              why="the encoder can run on its own devices" if spec.encoder is not None
              and spec.family is not Family.ENCODER else "no separate encoder stage"),
        Split(name="prefill/decode disaggregation", available=has_state,
              why="prefill and decode run in separate pools; the KV state is handed over"
              if has_state else "no decode loop or no state to hand over"),
        Split(name="diffusion components", available=diffusion,
              why="text encoder, denoiser and VAE can be placed apart" if diffusion
              else "not a diffusion pipeline"),
    ]


def build_inventory(spec: ModelSpec, request: InventoryRequest) -> Inventory:
    """Inventory `spec` at the request's workload."""
    params = count_parameters(spec, request.dtype)
    weight_dtype, quant = weight_dtypes(spec, request.dtype)
    kv_dtype = dtypes.kv_dtype(spec, request.kv_dtype, serving=False)
    act_dtype = dtypes.activation_dtype(spec)
    groups = model_tensors(spec) if spec.coarse is None else []
    geometry = _media(spec, request)
    per_item = geometry.feature_tokens if geometry else 0
    media_tokens = per_item * request.images
    stack = spec.decoder
    cross = stack is not None and kinds.reads_encoder(stack)
    if media_tokens and not cross and media_tokens > request.context:
        raise InputError("context", f"{request.context:,} positions cannot hold the "
                         f"{media_tokens:,} media feature tokens of {request.images} item(s)")
    layers = state_layers(spec, encoder_tokens=media_tokens if cross else 0)
    state: StateSummary | None = None
    prefill = decode = None
    comm = None
    if layers:
        sized = size_state(StateRequest(layers=layers, tokens=request.context, dtype=kv_dtype))
        state = StateSummary(
            kv_dtype=kv_dtype,
            context=request.context,
            bytes_per_token=sized.bytes_per_token,
            bytes_per_sequence=sized.bytes_per_sequence,
            fixed_bytes_per_sequence=sized.fixed_bytes_per_sequence,
            kinds=sized.kinds,
            media_tokens_per_request=media_tokens,
            media_in_context=not cross,
            sampler=sampler_state(),
        )
    coarse = params if spec.coarse is not None else None
    if stack is not None and stack.shaped:
        text = request.prompt_tokens or min(1000, request.context - (0 if cross else
                                                                        media_tokens))
        prompt = text + (0 if cross else media_tokens)
        if prompt > request.context:
            raise InputError("prompt_tokens", f"the prompt ({prompt:,} positions with media) "
                             f"exceeds the context of {request.context:,}")
        per_seq = state.bytes_per_sequence if state else 0
        prefill = phase_work(spec, groups, phase="prefill", tokens=prompt, sequences=1,
                             context=prompt, state_bytes=0, dtype=weight_dtype, quant=quant,
                             encoder_tokens=media_tokens if cross else 0, coarse=coarse)
        decode = phase_work(spec, groups, phase="decode", tokens=1, sequences=request.batch,
                            context=request.context, state_bytes=per_seq, dtype=weight_dtype,
                            quant=quant, encoder_tokens=media_tokens if cross else 0,
                            coarse=coarse)
        prompt_state = None
        if layers:
            prompt_state = size_state(StateRequest(layers=layers, tokens=prompt,
                                                   dtype=kv_dtype)).bytes_per_sequence
        comm = communication(spec, activation_dtype=act_dtype, feature_tokens=per_item or None,
                             prompt_state_bytes=prompt_state)
    elif stack is not None:
        comm = communication(spec, activation_dtype=act_dtype, feature_tokens=per_item or None,
                             prompt_state_bytes=None)
    if spec.family is Family.ENCODER and spec.encoder and spec.encoder.stack:
        prefill = _encoder_forward(spec, groups, request, weight_dtype)
    encoder = None
    if geometry is not None and spec.encoder is not None:
        encoder = _encoder_work(spec, groups, geometry, weight_dtype, request)
    diffusion = _diffusion(spec) if spec.family is Family.DIFFUSION else None
    timing = None
    if request.device is not None and prefill is not None and decode is not None:
        bits = quant.bits if quant is not None else DTYPE_BITS[weight_dtype]
        timing = roofline(
            request.device, tp=1, devices_per_replica=1, weight_bits=int(bits),
            batch=request.batch, prompt_tokens=prefill.tokens,
            prefill_flops=prefill.flops, prefill_bytes_per_device=prefill.bytes_read,
            prefill_allreduce=0, decode_flops=decode.flops,
            decode_bytes_per_device=decode.bytes_read, decode_allreduce=0,
            encoder_flops=encoder.flops if encoder is not None else 0,
            efficiency=request.efficiency,
        )
    weight_bytes = params.weight_bytes
    source: Literal["config", "checkpoint headers", "checkpoint index"] = "config"
    comparison = None
    if spec.checkpoint is not None:
        comparison = compare_checkpoint(spec)
        stored = checkpoint_weight_bytes(spec)
        if stored is not None and request.dtype is None:
            weight_bytes = stored
            source = ("checkpoint headers" if spec.checkpoint.headers_read
                      else "checkpoint index")
    return Inventory(
        model=spec.name,
        exact=spec.exact,
        estimated=spec.estimated,
        family=spec.family,
        source=spec.source,
        notes=spec.notes,
        warnings=context_notes(spec, request.context) if layers else [],
        parameters=params,
        weight_bytes=weight_bytes,
        weight_bytes_source=source,
        checkpoint=comparison,
        weight_dtype=weight_dtype,
        weights=describe_weights(spec, request.dtype),
        state=state,
        media=geometry,
        encoder=encoder,
        prefill=prefill,
        decode=decode,
        diffusion=diffusion,
        communication=comm,
        stages=_stages(spec, params, bool(layers)),
        splits=_splits(spec, bool(layers)),
        timing=timing,
        trust=_trust(spec, timing, source, quant),
    )


def _trust(spec: ModelSpec, timing: Timing | None,
           weights_from: Literal["config", "checkpoint headers", "checkpoint index"] = "config",
           quant: Quantization | None = None) -> dict[str, Trust]:
    """How each group was obtained. Weight bytes read from a checkpoint are exact for any
    architecture (what the files hold), whatever the config's count is labelled."""
    given = spec.coarse is not None
    tensors = counted(spec, "given totals (coarse form)" if given else "counted from the "
                      "tensors")
    found = {"parameters": tensors,
             "state": counted_state(spec, "bytes per token, as each layer kind keeps them"),
             "shapes": tensors, "communication": counted(spec, "payloads per layer and token")}
    from llm_inventory.engine.gguf_tensors import gguf_trust

    gguf = gguf_trust(spec, quant)
    if gguf is not None:
        found["weights"] = gguf
    elif weights_from != "config":
        found["weights"] = exact(f"read from the {weights_from}; the config's count is "
                                 "shown beside them under checkpoint")
    if timing is not None:
        found["timing"] = (trust_roofline("datasheet peak FLOP/s and bandwidth at 100 %")
                           if timing.trust == "bound" else estimate(timing.estimate))
    return found


def _encoder_forward(
    spec: ModelSpec, groups: list[TensorGroup], request: InventoryRequest, dtype: str
) -> PhaseWork:
    """An encoder-only model's forward pass over one input of `prompt_tokens` tokens."""
    from llm_inventory.engine.weights import group_bytes

    assert spec.encoder is not None and spec.encoder.stack is not None
    stack = spec.encoder.stack
    tokens = request.prompt_tokens or min(512, stack.position_embeddings or 512)
    gemms: list[Gemm] = []
    weight = 0
    for group in groups:
        weight += group_bytes(group, dtype, None)
        if group.linear and len(group.shape) >= 2 and group.component is not Component.OTHER:
            out, inp = group.shape[-2], group.shape[-1]
            gemms.append(Gemm(name=group.name.replace("encoder.layers.{i}.", ""), m=tokens,
                              n=out, k=inp, count=group.copies,
                              flops=2 * tokens * out * inp * group.copies))
    attn = attention_flops(stack, start=0, stop=tokens, sequences=1, encoder_tokens=0) * 2
    matmul = sum(g.flops for g in gemms)
    flops = matmul + attn
    return PhaseWork(phase="prefill", tokens=tokens, sequences=request.batch, context=tokens,
                     gemms=gemms, matmul_flops=matmul, attention_flops=attn, flops=flops,
                     flops_per_token=flops // tokens, weight_bytes_read=weight,
                     state_bytes_read=0, bytes_read=weight,
                     arithmetic_intensity=flops / weight if weight else 0.0)
