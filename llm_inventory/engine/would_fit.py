"""When nothing fits: what would, one change at a time, each answer placement's own.

- the fewest devices of this type: placement over a wider count (up to eight nodes, at
  least 64 devices) and its smallest fit;
- the longest context at which the workload (its concurrency) fits the devices given: a
  bisection over placement's answers, which only grow as the context shrinks (none when
  the weights leave no room on every plan);
- the weight dtypes an engine quantizes to as it loads (fp8, int8, int4) and the KV cache
  dtypes (fp8, and the engine's own words) that fit the devices given, each alone;
- the catalog device with the least memory of which the same count fits.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_inventory.engine.placement import (
    PlacementRequest,
    PlacementResult,
    WouldFit,
    plan_placement,
)
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

WEIGHT_DTYPES = ("fp8", "int8", "int4")
KV_DTYPES = ("fp8", "q8_0", "q4_0")
WIDEST_SEARCH = 64


def _fits(spec: ModelSpec, request: PlacementRequest, **change: object) -> bool:
    try:
        return plan_placement(spec, request.model_copy(update={**change, "limit": 1})
                              ).fitting > 0
    except InputError:  # the engine refuses the change (a dtype it does not take)
        return False


def would_fit(spec: ModelSpec, request: PlacementRequest, result: PlacementResult,
              catalog: Sequence[Device]) -> WouldFit:
    """What would fit `spec` where `result` found nothing (see the module rules)."""
    per_node = request.per_node or request.device.devices_per_node or 8
    wide = max(WIDEST_SEARCH, 8 * per_node, request.count)
    more = plan_placement(spec, request.model_copy(update={
        "count": wide, "limit": 1, "tp": None, "pp": None, "ep": None}))
    longest = _longest(spec, request, result)
    dtypes = [d for d in WEIGHT_DTYPES if d != request.dtype
              and _fits(spec, request, dtype=d)]
    kv_dtypes = [d for d in KV_DTYPES if d != request.kv_dtype
                 and _fits(spec, request, kv_dtype=d)]
    device = None
    for candidate in sorted(catalog, key=lambda d: (d.memory_bytes, d.id)):
        if candidate.memory_bytes <= request.device.memory_bytes:
            continue
        if _fits(spec, request, device=candidate, per_node=None):
            device = candidate
            break
    return WouldFit(
        devices=more.smallest, devices_searched=wide, longest_context=longest or None,
        dtypes=dtypes, kv_dtypes=kv_dtypes, device=device.id if device else None,
        device_memory_bytes=device.memory_bytes if device else None)


def _longest(spec: ModelSpec, request: PlacementRequest, result: PlacementResult) -> int:
    """The longest context below the asked one at which the workload fits (0: none)."""
    if not any(p.legal and p.per_device is not None and p.per_device.kv_pool_bytes > 0
               for p in result.plans):
        return 0
    lo, hi = 0, result.context  # fits at lo (0: vacuously), not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(spec, request, context=mid):
            lo = mid
        else:
            hi = mid
    return lo
