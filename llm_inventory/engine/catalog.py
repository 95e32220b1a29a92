"""Headline figures of a model, for listing presets side by side.

Per model: parameters (total and active per token), the bytes its weights occupy as the
checkpoint stores them, and the persistent state one token adds (KV, MLA latents; at the
model's own dtype) beside the fixed state one sequence holds (recurrent layers). A
diffusion pipeline's parameters are the sum of its components'; it keeps no per-token state.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from llm_inventory.engine.kinds.uniform import STATE_BASIS
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import ComponentCount, count_parameters
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.engine.trust import Trust, counted, counted_state
from llm_inventory.spec.model import Family, ModelSpec
from llm_inventory.units import normalize_dtype


class ModelFigures(BaseModel):
    """What one model weighs and what one token of context costs it."""

    family: Family
    parameters: int
    active_parameters: int
    parameters_given: bool  # True: totals given (coarse form, diffusion parts), not counted
    weight_dtype: str
    quantization: str | None  # the checkpoint's format (fp8, mxfp4 …); None: weight_dtype
    weight_bytes: int
    kv_dtype: str
    kv_bytes_per_token: int | None  # None: no per-token state (encoder-only, diffusion)
    fixed_state_bytes_per_sequence: int  # recurrent state, whatever the length
    layers: int | None
    max_context: int | None


class ModelEntry(BaseModel):
    """One preset: where it came from and, when it can be built, its figures."""

    name: str
    aliases: list[str]
    description: str
    source: str
    file: str
    family: Family | None = None
    parameters: int | None = None
    active_parameters: int | None = None
    parameters_given: bool | None = None
    weight_dtype: str | None = None
    quantization: str | None = None
    weight_bytes: int | None = None
    kv_dtype: str | None = None
    kv_bytes_per_token: int | None = None
    fixed_state_bytes_per_sequence: int | None = None
    layers: int | None = None
    max_context: int | None = None
    error: str | None = None  # why the preset cannot be built (an architecture not yet read)
    # False when the model is a generic estimate of an unmodelled architecture; `estimated`
    # then says what is estimated (and what a checkpoint's headers keep exact).
    exact: bool = True
    estimated: str | None = None
    trust: dict[str, Trust] = Field(default_factory=dict)  # how the figures were obtained


class ModelCatalog(BaseModel):
    """Every preset, in the index's order."""

    schema_version: int = 1
    models: list[ModelEntry]


class KindCount(BaseModel):
    kind: str
    layers: int


class ModelDetail(ModelEntry):
    """One preset in full: its entry plus notes, layer kinds and the parameter breakdown."""

    schema_version: int = 1
    notes: list[str] = []
    layer_kinds: list[KindCount] = []
    experts: int | None = None
    top_k: int | None = None
    by_component: list[ComponentCount] = []
    media_tokens_per_item: int | None = None


def model_figures(spec: ModelSpec) -> ModelFigures:
    """Parameters, weight bytes and per-token state of `spec` (state at the model's dtype)."""
    kv_dtype = normalize_dtype(spec.dtype)
    counted = count_parameters(spec)
    layers = state_layers(spec)
    per_token: int | None = None
    fixed = 0
    if layers:
        state = size_state(StateRequest(layers=layers, tokens=1, dtype=kv_dtype))
        per_token = state.bytes_per_token
        fixed = state.fixed_bytes_per_sequence
    stack = spec.decoder or (spec.encoder.stack if spec.encoder else None)
    return ModelFigures(
        family=spec.family,
        parameters=counted.total,
        active_parameters=counted.active,
        parameters_given=counted.given,
        weight_dtype=counted.weight_dtype,
        quantization=counted.quantization,
        weight_bytes=counted.weight_bytes,
        kv_dtype=kv_dtype,
        kv_bytes_per_token=per_token,
        fixed_state_bytes_per_sequence=fixed,
        layers=stack.layers if stack else None,
        max_context=spec.max_context,
    )


def catalog_entry(
    name: str, *, aliases: list[str], description: str, source: str, file: str,
    spec: ModelSpec | None, error: str | None = None,
) -> ModelEntry:
    """A preset's row: its figures when `spec` was built, else the reason it was not."""
    entry = ModelEntry(name=name, aliases=aliases, description=description, source=source,
                       file=file, error=error)
    if spec is None:
        return entry
    figures = model_figures(spec)
    return entry.model_copy(update={
        **figures.model_dump(), "exact": spec.exact, "estimated": spec.estimated,
        "trust": {"parameters": counted(spec, "given totals (coarse form)" if spec.coarse
                                        else "counted from the tensors"),
                  "state": counted_state(spec, STATE_BASIS)}})


def model_detail(entry: ModelEntry, spec: ModelSpec) -> ModelDetail:
    """The full view of one preset: notes, layer kinds, experts and parameters per component."""
    detail = ModelDetail(**entry.model_dump(), notes=list(spec.notes))
    if spec.family is Family.DIFFUSION:
        return detail
    counted = count_parameters(spec)
    kinds: Counter[str] = Counter()
    if spec.decoder is not None:
        kinds.update(spec.decoder.kinds())
    media = None
    if spec.encoder is not None and spec.encoder.media.tokens_per_item is not None:
        media = spec.encoder.media.tokens_per_item
    return detail.model_copy(update={
        "layer_kinds": [KindCount(kind=k, layers=n) for k, n in kinds.items()],
        "experts": counted.experts,
        "top_k": counted.top_k,
        "by_component": counted.by_component,
        "media_tokens_per_item": media,
    })
