"""The persistent state of a uniform stack, sized without pydantic: `inventory kv`'s fast path.

`inventory kv` from flags alone sizes one run of identical layers of one kind (full,
sliding, chunked or MLA). Importing the pydantic models behind `size_state` costs a script
calling `kv` in a loop more than the arithmetic does, so this module asks the kind's own
module (which loads without them: `engine/kinds/attention.py` and the modules beside it)
for every rule, on a plain record of the facts, and returns the JSON form of the
`StateResult` that `size_state` would return: the same keys in the same order, the same
values. It answers only inputs the engine accepts; for anything else (a kind whose rules
need more facts than the flags give, an impossible split, an out-of-range value) it returns
None and the caller asks the engine, which raises the error.

`tests/engine/kinds/test_uniform.py` holds this module to `size_state` over the whole flag
space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from llm_inventory.engine import kinds
from llm_inventory.engine.parallel import pp_ranges
from llm_inventory.errors import InputError
from llm_inventory.units import DTYPE_BITS

if TYPE_CHECKING:
    from llm_inventory.engine.kinds.base import Kind
    from llm_inventory.engine.kinds.layer import StateLayer

#: How `inventory kv`'s figures were obtained (`engine/trust.py`): counted, per kind.
STATE_BASIS = "bytes per token, as each layer kind keeps them"


@dataclass(frozen=True)
class _Run:
    """The facts `inventory kv`'s flags give, under `StateLayer`'s names; every other fact
    a kind may read is absent, so a kind that needs one is left to the engine."""

    kind: str
    count: int
    kv_heads: int
    k_head_dim: int
    v_head_dim: int
    window: int | None
    latent_dim: int
    first: int = 0
    dtype: None = None


def flag_kind(name: str) -> Kind | None:
    """The kind `inventory kv` sizes here: one that grows with the sequence and keeps no
    fixed state (the flags give no state shapes); None for any other."""
    try:
        kind = kinds.get(name)
    except InputError:
        return None
    return kind if kind.grows and kind.holds_tokens and not kind.reads_encoder else None


def uniform_state(
    kind: str,
    layers: int,
    *,
    kv_heads: int,
    k_head_dim: int,
    v_head_dim: int,
    window: int | None,
    latent_dim: int,
    tokens: int,
    sequences: int,
    dtype: str,
    block_size: int | None,
    tp: int,
    pp: int,
) -> dict[str, Any] | None:
    """`size_state(StateRequest(layers=uniform_layers(...), ...)).model_dump(mode="json")`,
    or None when the engine would refuse the input (it then says why)."""
    rules = flag_kind(kind)
    if rules is None or dtype not in DTYPE_BITS:
        return None
    counts = (layers, sequences, tp, pp)
    sizes = (kv_heads, k_head_dim, v_head_dim, latent_dim, tokens)
    if min(counts) < 1 or min(sizes) < 0 or (block_size is not None and block_size < 1):
        return None
    if (window is not None and window < 1) or pp > layers:
        return None
    # A duck-typed StateLayer: the kinds read facts by name, and any they lack is an
    # AttributeError that leaves the input to the engine.
    layer = cast("StateLayer", _Run(kind, layers, kv_heads, k_head_dim, v_head_dim, window,
                                    latent_dim))
    try:
        rules.validate(layer)
        rules.check_split(layer, tp)
        return _result(rules, layer, tokens, sequences, dtype, block_size, tp, pp)
    except (InputError, AttributeError):
        return None


def _result(rules: Kind, layer: StateLayer, tokens: int, sequences: int, dtype: str,
            block_size: int | None, tp: int, pp: int) -> dict[str, Any]:
    """`size_state`'s JSON form for one run of `layer.count` layers (engine/state.py)."""
    layers = layer.count
    per_token_layer = rules.bytes_per_token(layer, dtype)
    per_sequence = rules.sequence_bytes(layer, tokens, dtype, block_size) * layers
    devices: list[dict[str, Any]] = []
    for index, stage in enumerate(pp_ranges(layers, pp)):
        count = len(stage)
        per_seq = count * rules.sequence_bytes(layer, tokens, dtype, block_size, tp)
        devices.append({
            "tp": tp,
            "pp": pp,
            "stage": index,
            "stage_layers": count,
            "kv_heads_per_device": rules.heads_per_device(layer, tp),
            "replicated": rules.replicated(layer, tp),
            "bytes_per_token": rules.bytes_per_token(layer, dtype, tp) * count,
            "bytes_per_sequence": per_seq,
            "bytes": per_seq * sequences,
        })
    return {
        "schema_version": 1,
        "layers": layers,
        "tokens": tokens,
        "sequences": sequences,
        "dtype": dtype,
        "block_size": block_size,
        "bytes_per_token_per_layer": per_token_layer,
        "bytes_per_token": per_token_layer * layers,
        "bytes_per_sequence": per_sequence,
        "total_bytes": per_sequence * sequences,
        "fixed_bytes_per_sequence": 0,
        "kinds": [{
            "kind": layer.kind,
            "layers": layers,
            "window": layer.window,
            "dtype": dtype,
            "elements_per_token_per_layer": rules.elements_per_token(layer),
            "bytes_per_token_per_layer": per_token_layer,
            "bytes_per_token": per_token_layer * layers,
            "tokens_held": rules.tokens_held(layer, tokens, block_size),
            "bytes_per_sequence": per_sequence,
            "total_bytes": per_sequence * sequences,
            "release": rules.release,
        }],
        "per_device": max(devices, key=lambda d: d["bytes"]),
        "device_sum_bytes": sum(d["bytes"] for d in devices) * tp,
        "exact": True,
        "estimated": None,
        "trust": {"state": {"kind": "exact", "band": None, "basis": STATE_BASIS}},
    }
