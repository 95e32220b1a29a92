"""Split rules shared by state sizing and placement: how TP and PP divide a model."""

from __future__ import annotations

from llm_inventory.errors import InputError


def pp_partition(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as vLLM assigns them.

    Each stage gets `layers // pp`; the remainder goes one each to the stages just before the
    last (the last stage also holds the final norm and lm_head, so it is never given extra).
    """
    if pp < 1:
        raise InputError("pp", f"must be at least 1, got {pp}")
    if pp > layers:
        raise InputError("pp", f"must not exceed the layer count ({layers}), got {pp}")
    base, remainder = divmod(layers, pp)
    stages = [base] * pp
    for i in range(2, remainder + 2):
        stages[-i] += 1
    return stages


def pp_ranges(layers: int, pp: int) -> list[range]:
    """Layer index ranges of each pipeline stage (see `pp_partition`)."""
    ranges: list[range] = []
    start = 0
    for size in pp_partition(layers, pp):
        ranges.append(range(start, start + size))
        start += size
    return ranges


def kv_tp_problem(kv_heads: int, tp: int) -> str | None:
    """Why `tp` cannot split `kv_heads` KV heads, or None when it can.

    KV heads shard while tp ≤ kv_heads (tp must divide them) and are replicated beyond that
    (kv_heads must divide tp), so every device holds whole heads.
    """
    if tp <= kv_heads:
        if kv_heads % tp:
            return f"tp {tp} does not divide the {kv_heads} KV heads"
    elif tp % kv_heads:
        return f"tp {tp} exceeds the {kv_heads} KV heads and is not a multiple of them"
    return None


def kv_heads_per_device(kv_heads: int, tp: int) -> int:
    """KV heads one TP rank holds: kv_heads ÷ tp, never less than one whole head."""
    problem = kv_tp_problem(kv_heads, tp)
    if problem is not None:
        raise InputError("tp", f"{problem}; use a divisor or a multiple of {kv_heads}")
    return max(1, kv_heads // tp)


def kv_replication(kv_heads: int, tp: int) -> int:
    """How many TP ranks hold a copy of each KV head (1 when heads are only sharded)."""
    return max(1, tp // kv_heads) if kv_heads else 1
