"""When nothing fits: what would, one change at a time, each answer placement's own.

- the fewest devices of this type: placement over a wider count (eight nodes, from 64 to
  128 devices) and its smallest fit;
- the longest context at which the workload (its concurrency) fits the devices given: a
  bisection over placement's answers, which only grow as the context shrinks (none when
  the weights leave no room on every plan);
- the weight dtypes an engine quantizes to as it loads (fp8, int8, int4) and the KV cache
  dtypes (fp8, and the engine's own words) that fit the devices given, each alone;
- the catalog device with the least memory of which the same count fits.
The context, dtypes and devices are tried on the splits nearest to fitting (the first two
near misses, pinned), so each try sizes a split rather than searching: what it finds fits
(placement says so); a change that fits only some other split is not found. The context
is within 1/128 of the longest; at most four catalog devices are tried, the smallest whose
memory could cover the nearest miss's shortfall first.
Each answer is a placement search again, so none is sought past 64 devices asked
(`searched` false): the time stays that of a few searches of the size asked.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_inventory.engine.placement import (
    PlacementRequest,
    PlacementResult,
    WouldFit,
    plan_placement,
)
from llm_inventory.engine.placement.ranking import shortfall
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

WEIGHT_DTYPES = ("fp8", "int8", "int4")
KV_DTYPES = ("fp8", "q8_0", "q4_0")
WIDEST_SEARCH = 64


NEAREST = 2  # the near misses each change is tried on
DEVICE_TRIES = 4  # catalog devices tried, the smallest that could hold the nearest miss up
CONTEXT_STEPS = 10  # bisection steps for the longest context (to within 1/128 of it)


def _fits(spec: ModelSpec, request: PlacementRequest, shapes: list[tuple[int, int, int]],
          **change: object) -> bool:
    """Whether one of `shapes` (tp, pp, ep; pinned, so each try is one split's sizing, not
    a search) fits with `change`."""
    for tp, pp, ep in shapes:
        try:
            if plan_placement(spec, request.model_copy(update={
                    **change, "tp": tp, "pp": pp, "ep": ep, "limit": 1})).fitting > 0:
                return True
        except InputError:  # the engine refuses the change (a dtype it does not take)
            return False
    return False


def would_fit(spec: ModelSpec, request: PlacementRequest, result: PlacementResult,
              catalog: Sequence[Device]) -> WouldFit:
    """What would fit `spec` where `result` found nothing (see the module rules)."""
    if request.count > WIDEST_SEARCH:  # each answer is a search of this size again
        return WouldFit(devices=None, devices_searched=request.count, longest_context=None,
                        dtypes=[], kv_dtypes=[], device=None, device_memory_bytes=None,
                        searched=False)
    per_node = request.per_node or request.device.devices_per_node or 8
    wide = min(max(WIDEST_SEARCH, 8 * per_node), WIDEST_SEARCH * 2)
    more = result if wide <= request.count else plan_placement(spec, request.model_copy(
        update={"count": wide, "limit": 1, "tp": None, "pp": None, "ep": None}))
    misses = [p for p in result.plans if p.legal and p.disaggregation is None]
    near = list(dict.fromkeys((p.tp, p.pp, p.ep) for p in misses))[:NEAREST]
    longest = _longest(spec, request, result)
    dtypes = [d for d in WEIGHT_DTYPES if d != request.dtype
              and _fits(spec, request, near, dtype=d)]
    roomy = any(p.per_device is not None and p.per_device.kv_pool_bytes > 0 for p in misses)
    kv_dtypes = [d for d in KV_DTYPES if roomy and d != request.kv_dtype
                 and _fits(spec, request, near, kv_dtype=d)]  # a cache needs room to shrink
    # a device smaller than the nearest miss's need holds none of these splits
    need = request.device.memory_bytes + min((shortfall(p) for p in misses), default=0.0)
    device = None
    tried = 0
    for candidate in sorted(catalog, key=lambda d: (d.memory_bytes, d.id)):
        if candidate.memory_bytes < need or tried >= DEVICE_TRIES:
            continue
        tried += 1
        if _fits(spec, request, near, device=candidate, per_node=None):
            device = candidate
            break
    return WouldFit(
        devices=more.smallest, devices_searched=wide, longest_context=longest or None,
        dtypes=dtypes, kv_dtypes=kv_dtypes, device=device.id if device else None,
        device_memory_bytes=device.memory_bytes if device else None)


def _longest(spec: ModelSpec, request: PlacementRequest, result: PlacementResult) -> int:
    """A context below the asked one at which the workload fits, within 1/128 of the longest
    on the nearest split with a pool (0: none has a pool): bisection from the context its
    KV tokens give the workload's requests."""
    roomy = [p for p in result.plans if p.legal and p.disaggregation is None
             and p.per_device is not None and p.per_device.kv_pool_bytes > 0]
    if not roomy:
        return 0
    best = roomy[0]
    shape = [(best.tp, best.pp, best.ep)]
    assert best.per_device is not None
    tokens = best.per_device.kv_capacity_tokens * max(1, best.engines)
    guess = max(1, min(result.context - 1, tokens // max(1, request.concurrency)))
    lo, hi = 0, result.context  # fits at lo (0: vacuously), not at hi
    if _fits(spec, request, shape, context=guess):
        lo = guess
    else:
        hi = guess
    for _ in range(CONTEXT_STEPS):
        if hi - lo <= max(1, hi // 128):
            break
        mid = (lo + hi) // 2
        if _fits(spec, request, shape, context=mid):
            lo = mid
        else:
            hi = mid
    return lo
