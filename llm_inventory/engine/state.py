"""Persistent state per sequence: the KV cache and the other kinds of state a model keeps.

Rules, per token per layer unless said (elements × the state dtype's width):
- full attention: K + V = kv_heads × (k_head_dim + v_head_dim), held for every token;
- sliding window W: as full, for the last min(tokens, W) tokens;
- chunked attention C: as full, for at most min(tokens, C) tokens (the current chunk);
- MLA: one latent of latent_dim elements (kv_lora_rank + rope dim), no factor of two;
- cross-attention: K + V over the encoder's tokens, fixed per request;
- shared KV: nothing (the layer reads another layer's cache);
- recurrent / state-space: a fixed number of elements per sequence.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.parallel import kv_heads_per_device, kv_replication, pp_ranges
from llm_inventory.errors import InputError
from llm_inventory.units import bytes_for, normalize_dtype


class StateKind(StrEnum):
    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MLA = "mla"
    CROSS = "cross"
    SHARED = "shared"
    RECURRENT = "recurrent"


RELEASE_RULES: dict[StateKind, str] = {
    StateKind.FULL: "held until the sequence ends: every entry stays load-bearing",
    StateKind.SLIDING: "entries older than the window are dead and may be freed as it slides",
    StateKind.CHUNKED: "a finished chunk's entries are dead once the next chunk starts",
    StateKind.MLA: "held until the sequence ends (one compressed latent per token)",
    StateKind.CROSS: (
        "belongs to the encoded input, not the text: reusable across questions about the "
        "same input, freed when no request uses that input"
    ),
    StateKind.SHARED: "stores nothing: the layer reads another layer's cache",
    StateKind.RECURRENT: (
        "fixed size, overwritten every step: freed when the sequence ends, never partially"
    ),
}

# Kinds whose bytes grow with the sequence (at least until a window or chunk caps them).
PER_TOKEN_KINDS = frozenset(
    {StateKind.FULL, StateKind.SLIDING, StateKind.CHUNKED, StateKind.MLA}
)
HEAD_SHARDED_KINDS = frozenset(
    {StateKind.FULL, StateKind.SLIDING, StateKind.CHUNKED, StateKind.CROSS}
)

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class StateLayer(BaseModel):
    """A run of `count` consecutive identical layers starting at layer `first`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StateKind
    first: NonNegativeInt = 0
    count: PositiveInt = 1
    kv_heads: NonNegativeInt = 0
    k_head_dim: NonNegativeInt = 0
    v_head_dim: NonNegativeInt = 0
    window: PositiveInt | None = None
    latent_dim: NonNegativeInt = 0
    encoder_tokens: NonNegativeInt = 0
    state_elements: NonNegativeInt = 0
    dtype: str | None = None  # overrides the request's KV dtype (SSM state is often fp32)

    def elements_per_token(self) -> int:
        """Elements one token adds to one layer of this kind (0 for fixed-size kinds)."""
        if self.kind in (StateKind.FULL, StateKind.SLIDING, StateKind.CHUNKED):
            return self.kv_heads * (self.k_head_dim + self.v_head_dim)
        if self.kind is StateKind.MLA:
            return self.latent_dim
        return 0


class StateRequest(BaseModel):
    """What to size: a layer layout, a workload and a split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    layers: tuple[StateLayer, ...]
    tokens: NonNegativeInt
    sequences: PositiveInt = 1
    dtype: str = "bf16"
    block_size: PositiveInt | None = None
    tp: PositiveInt = 1
    pp: PositiveInt = 1


class KindState(BaseModel):
    """One row of the result: every layer of one kind (and shape) together."""

    kind: StateKind
    layers: int
    window: int | None
    dtype: str
    elements_per_token_per_layer: int
    bytes_per_token_per_layer: int
    bytes_per_token: int
    tokens_held: int
    bytes_per_sequence: int
    total_bytes: int
    release: str


class DeviceState(BaseModel):
    """The share of the state that the most loaded device holds."""

    tp: int
    pp: int
    stage: int
    stage_layers: int
    kv_heads_per_device: int | None
    replicated: bool
    bytes_per_token: int
    bytes_per_sequence: int
    bytes: int


class StateResult(BaseModel):
    """Persistent state for `sequences` sequences of `tokens` tokens."""

    schema_version: int = 1
    layers: int  # decoder layers (a layer may keep two kinds, e.g. self and cross)
    tokens: int
    sequences: int
    dtype: str
    block_size: int | None
    bytes_per_token_per_layer: int | None
    bytes_per_token: int
    bytes_per_sequence: int
    total_bytes: int
    fixed_bytes_per_sequence: int
    kinds: list[KindState]
    per_device: DeviceState
    device_sum_bytes: int = Field(
        description="Every device's share added up: equals total_bytes unless state is replicated"
    )


def _round_up(tokens: int, block: int | None) -> int:
    return -(-tokens // block) * block if block else tokens


def tokens_held(layer: StateLayer, tokens: int, block_size: int | None) -> int:
    """Token slots one sequence of `tokens` tokens occupies in one layer at its peak.

    With paging, a sliding window that no longer starts on a block boundary spans one block
    more than the window: ⌈(W − 1) / block⌉ + 1 blocks.
    """
    if layer.kind in (StateKind.FULL, StateKind.MLA):
        return _round_up(tokens, block_size)
    if layer.kind is StateKind.CHUNKED:
        assert layer.window is not None
        return _round_up(min(tokens, layer.window), block_size)
    if layer.kind is StateKind.SLIDING:
        assert layer.window is not None
        held = min(tokens, layer.window)
        if block_size is None:
            return held
        if tokens <= layer.window:
            return _round_up(tokens, block_size)
        blocks = -(-(layer.window - 1) // block_size) + 1
        return min(blocks * block_size, _round_up(tokens, block_size))
    if layer.kind is StateKind.CROSS:
        return layer.encoder_tokens
    return 0


def _layer_bytes_per_sequence(
    layer: StateLayer, tokens: int, dtype: str, block_size: int | None, kv_heads: int
) -> int:
    """Bytes of one layer for one sequence, with `kv_heads` heads (the device's share)."""
    if layer.kind is StateKind.SHARED:
        return 0
    if layer.kind in (StateKind.RECURRENT, StateKind.CROSS):
        return fixed_bytes(layer, dtype, kv_heads)
    if layer.kind is StateKind.MLA:
        return bytes_for(layer.latent_dim * tokens_held(layer, tokens, block_size), dtype)
    per_token = kv_heads * (layer.k_head_dim + layer.v_head_dim)
    return bytes_for(per_token * tokens_held(layer, tokens, block_size), dtype)


def _validate(layer: StateLayer) -> None:
    kind = layer.kind
    if kind in HEAD_SHARDED_KINDS and (
        layer.kv_heads < 1 or layer.k_head_dim + layer.v_head_dim < 1
    ):
        raise InputError("kv_heads", f"a {kind} layer needs KV heads and a head dimension")
    if kind in (StateKind.SLIDING, StateKind.CHUNKED) and layer.window is None:
        raise InputError("window", f"a {kind} layer needs a window size")
    if kind is StateKind.MLA and layer.latent_dim < 1:
        raise InputError("latent_dim", "an MLA layer needs its latent width")


def fixed_bytes(layer: StateLayer, dtype: str, kv_heads: int, tp: int = 1) -> int:
    """Per-sequence bytes of a fixed-size kind on one TP rank: cross-attention K and V over
    the encoder's tokens with `kv_heads` heads; recurrent state split over the TP ranks."""
    if layer.kind is StateKind.RECURRENT:
        return bytes_for(-(-layer.state_elements // tp), dtype)
    if layer.kind is StateKind.CROSS:
        return bytes_for(kv_heads * (layer.k_head_dim + layer.v_head_dim)
                         * layer.encoder_tokens, dtype)
    return 0


def _device_heads(layer: StateLayer, tp: int) -> int:
    if layer.kind in HEAD_SHARDED_KINDS:
        return kv_heads_per_device(layer.kv_heads, tp)
    return layer.kv_heads


def _device_layer_bytes(
    layer: StateLayer, tokens: int, dtype: str, block: int | None, tp: int
) -> int:
    """One layer's bytes per sequence on one TP rank.

    Attention heads shard (or replicate, never below one head); an MLA latent is whole on
    every rank; recurrent state shards with the mixer's channels.
    """
    if layer.kind is StateKind.RECURRENT:
        return fixed_bytes(layer, dtype, 0, tp)
    return _layer_bytes_per_sequence(layer, tokens, dtype, block, _device_heads(layer, tp))


def per_token_bytes(layer: StateLayer, dtype: str, kv_heads: int) -> int:
    """Bytes one token adds to one layer with `kv_heads` KV heads (0 for fixed kinds)."""
    if layer.kind in (StateKind.FULL, StateKind.SLIDING, StateKind.CHUNKED):
        return bytes_for(kv_heads * (layer.k_head_dim + layer.v_head_dim), dtype)
    if layer.kind is StateKind.MLA:
        return bytes_for(layer.latent_dim, dtype)
    return 0


def size_state(request: StateRequest) -> StateResult:
    """Size the persistent state of `request`: per kind, per sequence, in total, per device.

    Raises InputError when the split is impossible (tp against KV heads, pp above layers).
    """
    kv_dtype = normalize_dtype(request.dtype, "dtype")
    if not request.layers:
        raise InputError("layers", "the model has no layers that keep state")
    for layer in request.layers:
        _validate(layer)

    rows: dict[tuple[object, ...], KindState] = {}
    for layer in request.layers:
        dtype = normalize_dtype(layer.dtype, "dtype") if layer.dtype else kv_dtype
        per_seq = _layer_bytes_per_sequence(
            layer, request.tokens, dtype, request.block_size, layer.kv_heads
        )
        key = (
            layer.kind, layer.window, layer.kv_heads, layer.k_head_dim, layer.v_head_dim,
            layer.latent_dim, layer.encoder_tokens, layer.state_elements, dtype,
        )
        per_token_layer = per_token_bytes(layer, dtype, layer.kv_heads)
        row = rows.get(key)
        layers = layer.count + (row.layers if row else 0)
        rows[key] = KindState(
            kind=layer.kind,
            layers=layers,
            window=layer.window,
            dtype=dtype,
            elements_per_token_per_layer=layer.elements_per_token(),
            bytes_per_token_per_layer=per_token_layer,
            bytes_per_token=per_token_layer * layers,
            tokens_held=tokens_held(layer, request.tokens, request.block_size),
            bytes_per_sequence=per_seq * layers,
            total_bytes=per_seq * layers * request.sequences,
            release=RELEASE_RULES[layer.kind],
        )
    kinds = list(rows.values())
    devices = _stage_devices(request, kv_dtype)

    per_token_rows = {r.bytes_per_token_per_layer for r in kinds if r.kind in PER_TOKEN_KINDS}
    uniform = len(kinds) == 1 or (
        len(per_token_rows) == 1 and all(r.kind in PER_TOKEN_KINDS for r in kinds)
    )
    bytes_per_sequence = sum(r.bytes_per_sequence for r in kinds)
    fixed = sum(r.bytes_per_sequence for r in kinds if r.kind not in PER_TOKEN_KINDS)
    return StateResult(
        layers=_layer_count(request.layers),
        tokens=request.tokens,
        sequences=request.sequences,
        dtype=kv_dtype,
        block_size=request.block_size,
        bytes_per_token_per_layer=kinds[0].bytes_per_token_per_layer if uniform else None,
        bytes_per_token=sum(r.bytes_per_token for r in kinds),
        bytes_per_sequence=bytes_per_sequence,
        total_bytes=bytes_per_sequence * request.sequences,
        fixed_bytes_per_sequence=fixed,
        kinds=kinds,
        per_device=max(devices, key=lambda d: d.bytes),
        device_sum_bytes=sum(d.bytes for d in devices) * request.tp,
    )


def _layer_count(layers: tuple[StateLayer, ...]) -> int:
    return max(layer.first + layer.count for layer in layers)


def _stage_devices(request: StateRequest, kv_dtype: str) -> list[DeviceState]:
    """The state one TP rank of each pipeline stage holds."""
    total_layers = _layer_count(request.layers)
    stages = pp_ranges(total_layers, request.pp)
    devices: list[DeviceState] = []
    for index, stage in enumerate(stages):
        rate = per_seq = 0
        heads: set[int] = set()
        replicated = False
        for layer in request.layers:
            overlap = len(range(max(layer.first, stage.start),
                                min(layer.first + layer.count, stage.stop)))
            if overlap == 0:
                continue
            dtype = normalize_dtype(layer.dtype, "dtype") if layer.dtype else kv_dtype
            device_heads = _device_heads(layer, request.tp)
            if layer.kind in HEAD_SHARDED_KINDS:
                heads.add(device_heads)
                replicated |= kv_replication(layer.kv_heads, request.tp) > 1
            if layer.kind is StateKind.MLA and request.tp > 1:
                replicated = True
            rate += per_token_bytes(layer, dtype, device_heads) * overlap
            per_seq += overlap * _device_layer_bytes(
                layer, request.tokens, dtype, request.block_size, request.tp
            )
        devices.append(DeviceState(
            tp=request.tp,
            pp=request.pp,
            stage=index,
            stage_layers=len(stage),
            kv_heads_per_device=heads.pop() if len(heads) == 1 else None,
            replicated=replicated,
            bytes_per_token=rate,
            bytes_per_sequence=per_seq,
            bytes=per_seq * request.sequences,
        ))
    return devices


def uniform_layers(
    kind: StateKind,
    layers: int,
    *,
    kv_heads: int = 0,
    head_dim: int = 0,
    v_head_dim: int | None = None,
    window: int | None = None,
    latent_dim: int = 0,
) -> tuple[StateLayer, ...]:
    """A stack of `layers` identical layers: the shape `inventory kv` builds from its flags."""
    return (
        StateLayer(
            kind=kind,
            count=layers,
            kv_heads=kv_heads,
            k_head_dim=head_dim,
            v_head_dim=head_dim if v_head_dim is None else v_head_dim,
            window=window,
            latent_dim=latent_dim,
        ),
    )
