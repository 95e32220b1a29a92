"""The persistent state of a uniform stack, sized without pydantic: `inventory kv`'s fast path.

`inventory kv` from flags alone sizes one run of identical full, sliding, chunked or MLA
layers. Importing the kind modules and the pydantic models behind `size_state` costs a
script calling `kv` in a loop more than the arithmetic does, so this module applies the same
rules to plain integers and returns the JSON form of the `StateResult` that `size_state`
would return: the same keys in the same order, the same values. It answers only inputs the
engine accepts; for anything else (an impossible split, an out-of-range value) it returns
None and the caller asks the engine, which raises the error.

The rules are those of `attention.py` (full), `sliding.py`, `chunked.py` and `mla.py` beside
it, and the split rules of `engine/parallel.py`; `tests/engine/kinds/test_uniform.py`
holds this module to `size_state` over the whole flag space, so a kind's rule changed there
fails that test until it is changed here too.
"""

from __future__ import annotations

from typing import Any

from llm_inventory.engine.parallel import kv_replication, kv_tp_problem, pp_ranges
from llm_inventory.units import DTYPE_BITS, bytes_for

#: How `inventory kv`'s figures were obtained (`engine/trust.py`): counted, per kind.
STATE_BASIS = "bytes per token, as each layer kind keeps them"

# What a cache manager may free, and when: each kind's `release`.
RELEASE = {
    "full": "held until the sequence ends: every entry stays load-bearing",
    "sliding": "entries older than the window are dead and may be freed as it slides",
    "chunked": "a finished chunk's entries are dead once the next chunk starts",
    "mla": "held until the sequence ends (one compressed latent per token)",
}


def _round_up(tokens: int, block: int | None) -> int:
    return -(-tokens // block) * block if block else tokens


def _tokens_held(kind: str, tokens: int, window: int | None, block: int | None) -> int:
    """Token slots one sequence occupies in one layer at its peak (each kind's
    `tokens_held`)."""
    if kind == "sliding" and window:  # a sliding layer always has its window (validated)
        if block is None:
            return min(tokens, window)
        if tokens <= window:
            return _round_up(tokens, block)
        blocks = -(-(window - 1) // block) + 1
        return min(blocks * block, _round_up(tokens, block))
    if kind == "chunked":
        return _round_up(min(tokens, window or tokens), block)
    return _round_up(tokens, block)


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
    if kind not in RELEASE or dtype not in DTYPE_BITS:
        return None
    counts = (layers, sequences, tp, pp)
    sizes = (kv_heads, k_head_dim, v_head_dim, latent_dim, tokens)
    if min(counts) < 1 or min(sizes) < 0 or (block_size is not None and block_size < 1):
        return None
    if kind == "mla":
        if latent_dim < 1:
            return None
    elif kv_heads < 1 or k_head_dim + v_head_dim < 1 or kv_tp_problem(kv_heads, tp):
        return None
    if (window is not None and window < 1) or (kind in ("sliding", "chunked") and not window):
        return None
    if pp > layers:
        return None

    def elements(ranks: int) -> int:  # per token per layer on one of `ranks` TP ranks
        if kind == "mla":
            return latent_dim  # one latent, replicated on every rank
        return max(1, kv_heads // ranks) * (k_head_dim + v_head_dim)

    held = _tokens_held(kind, tokens, window, block_size)

    def sequence_bytes(ranks: int) -> int:  # one layer, one sequence
        return bytes_for(elements(ranks) * held, dtype) if held else 0

    per_token_layer = bytes_for(elements(1), dtype)
    per_sequence = sequence_bytes(1) * layers
    devices: list[dict[str, Any]] = []
    for index, stage in enumerate(pp_ranges(layers, pp)):
        count = len(stage)
        per_seq = count * sequence_bytes(tp)
        devices.append({
            "tp": tp,
            "pp": pp,
            "stage": index,
            "stage_layers": count,
            "kv_heads_per_device": None if kind == "mla" else max(1, kv_heads // tp),
            "replicated": tp > 1 if kind == "mla" else kv_replication(kv_heads, tp) > 1,
            "bytes_per_token": bytes_for(elements(tp), dtype) * count,
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
            "kind": kind,
            "layers": layers,
            "window": window,
            "dtype": dtype,
            "elements_per_token_per_layer": elements(1),
            "bytes_per_token_per_layer": per_token_layer,
            "bytes_per_token": per_token_layer * layers,
            "tokens_held": held,
            "bytes_per_sequence": per_sequence,
            "total_bytes": per_sequence * sequences,
            "release": RELEASE[kind],
        }],
        "per_device": max(devices, key=lambda d: d["bytes"]),
        "device_sum_bytes": sum(d["bytes"] for d in devices) * tp,
        "exact": True,
        "estimated": None,
        "trust": {"state": {"kind": "exact", "band": None, "basis": STATE_BASIS}},
    }
