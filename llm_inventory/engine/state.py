"""Persistent state per sequence: the KV cache and the other kinds of state a model keeps.

Each layer kind holds its own rule (see `engine/kinds/`): full attention keeps K and V for
every token, a sliding window or a chunk caps the tokens held, MLA keeps one latent per
token, cross-attention K and V over the encoder's tokens, shared-KV layers nothing, recurrent
layers a fixed state per sequence. This module adds the layers up: per kind, per sequence,
in total, and on the most loaded device of a TP × PP split.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine import kinds
from llm_inventory.engine.kinds.layer import NonNegativeInt, PositiveInt, StateLayer
from llm_inventory.engine.kinds.uniform import STATE_BASIS
from llm_inventory.engine.parallel import pp_ranges
from llm_inventory.engine.trust import Trust, exact
from llm_inventory.errors import InputError
from llm_inventory.units import normalize_dtype

__all__ = ["DeviceState", "KindState", "StateLayer", "StateRequest", "StateResult",
           "size_state", "uniform_layers"]


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

    kind: str
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
    # False when the model is a generic estimate of an unmodelled architecture; `estimated`
    # then says what is estimated (and what a checkpoint's headers keep exact).
    exact: bool = True
    estimated: str | None = None
    trust: dict[str, Trust] = Field(default_factory=lambda: {"state": exact(STATE_BASIS)})


def tokens_held(layer: StateLayer, tokens: int, block_size: int | None) -> int:
    """Token slots one sequence of `tokens` tokens occupies in one layer at its peak."""
    return kinds.get(layer.kind).tokens_held(layer, tokens, block_size)


def layer_dtype(layer: StateLayer, kv_dtype: str) -> str:
    """The dtype a layer's state is kept in: its own (SSM state), else the KV cache's."""
    return normalize_dtype(layer.dtype, "dtype") if layer.dtype else kv_dtype


def size_state(request: StateRequest) -> StateResult:
    """Size the persistent state of `request`: per kind, per sequence, in total, per device.

    Raises InputError when the split is impossible (tp against KV heads, pp above layers).
    """
    kv_dtype = normalize_dtype(request.dtype, "dtype")
    if not request.layers:
        raise InputError("layers", "the model has no layers that keep state")
    for layer in request.layers:
        kinds.get(layer.kind).validate(layer)

    rows: dict[tuple[object, ...], KindState] = {}
    for layer in request.layers:
        kind = kinds.get(layer.kind)
        dtype = layer_dtype(layer, kv_dtype)
        per_seq = kind.sequence_bytes(layer, request.tokens, dtype, request.block_size)
        # One row per distinct shape: every field but the run's position and length.
        key = (tuple(layer.model_dump(exclude={"first", "count", "dtype"}).items()), dtype)
        per_token_layer = kind.bytes_per_token(layer, dtype)
        row = rows.get(key)
        count = layer.count + (row.layers if row else 0)
        rows[key] = KindState(
            kind=layer.kind,
            layers=count,
            window=layer.window,
            dtype=dtype,
            elements_per_token_per_layer=kind.elements_per_token(layer),
            bytes_per_token_per_layer=per_token_layer,
            bytes_per_token=per_token_layer * count,
            tokens_held=kind.tokens_held(layer, request.tokens, request.block_size),
            bytes_per_sequence=per_seq * count,
            total_bytes=per_seq * count * request.sequences,
            release=kind.release,
        )
    result_rows = list(rows.values())
    devices = _stage_devices(request, kv_dtype)

    growing = [r for r in result_rows if kinds.get(r.kind).grows]
    uniform = len(result_rows) == 1 or (
        len({r.bytes_per_token_per_layer for r in growing}) == 1
        and len(growing) == len(result_rows)
    )
    bytes_per_sequence = sum(r.bytes_per_sequence for r in result_rows)
    fixed = sum(r.bytes_per_sequence for r in result_rows if not kinds.get(r.kind).grows)
    return StateResult(
        layers=_layer_count(request.layers),
        tokens=request.tokens,
        sequences=request.sequences,
        dtype=kv_dtype,
        block_size=request.block_size,
        bytes_per_token_per_layer=result_rows[0].bytes_per_token_per_layer if uniform else None,
        bytes_per_token=sum(r.bytes_per_token for r in result_rows),
        bytes_per_sequence=bytes_per_sequence,
        total_bytes=bytes_per_sequence * request.sequences,
        fixed_bytes_per_sequence=fixed,
        kinds=result_rows,
        per_device=max(devices, key=lambda d: d.bytes),
        device_sum_bytes=sum(d.bytes for d in devices) * request.tp,
    )


def _layer_count(layers: tuple[StateLayer, ...]) -> int:
    return max(layer.first + layer.count for layer in layers)


def _stage_devices(request: StateRequest, kv_dtype: str) -> list[DeviceState]:
    """The state one TP rank of each pipeline stage holds."""
    total_layers = _layer_count(request.layers)
    stages = pp_ranges(total_layers, request.pp)
    tp = request.tp
    for layer in request.layers:
        kinds.get(layer.kind).check_split(layer, tp)
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
            kind = kinds.get(layer.kind)
            dtype = layer_dtype(layer, kv_dtype)
            device_heads = kind.heads_per_device(layer, tp)
            if device_heads is not None:
                heads.add(device_heads)
            replicated |= kind.replicated(layer, tp)
            rate += kind.bytes_per_token(layer, dtype, tp) * overlap
            per_seq += overlap * kind.sequence_bytes(layer, request.tokens, dtype,
                                                     request.block_size, tp)
        devices.append(DeviceState(
            tp=tp,
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
    kind: str,
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
