"""Several models on one node: which devices each gets, or the memory fraction each needs
when they share devices, checked against each engine's own accounting.

A model whose smallest fit needs more than one device gets devices of its own (the largest
first), and so does every model of an engine whose budget does not bound all it holds
(SGLang's fraction covers weights and KV, its activations and graphs taking the rest). The
others share what is left, the largest first, each on the first device where it fits: for
each, the smallest memory fraction (in hundredths, as the engines' flags take it) with which
the engine, started after those already there, holds the model's requests at its context.
"Started after" is placement's `used_bytes`: what earlier instances hold (their budget, plus
a CUDA context each outside any budget) is memory other processes hold, which the engine
meets its own way (vLLM refuses to start when less than its budget is free). Every instance
is therefore sized and checked by the engine's own rules, in start order.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.engine.trust import Trust, engine_rule
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec
from llm_inventory.units import MIB

#: Shared devices a model is tried on before an empty one: each try is two bisections of
#: placements, and first fit finds room among the fullest few.
SHARED_TRIES = 8

#: What one more process holds on a device outside any engine's budget: its CUDA context
#: and library workspaces (an estimate; llama.cpp's accounting takes the same 300 MiB).
PROCESS_CONTEXT = 300 * MIB


class Tenant(BaseModel):
    """One model to place: its name, the positions per request and the requests at once."""

    name: str
    context: int = Field(ge=1)
    concurrency: int = Field(default=1, ge=1)


class Instance(BaseModel):
    """Where one model runs and with what it starts."""

    model: str
    context: int
    concurrency: int
    devices: list[int]  # device indices on the node (CUDA_VISIBLE_DEVICES)
    shared: bool  # shares its device with other instances
    tp: int
    pp: int
    memory_fraction: float  # the engine's own flag (vLLM: of the total; SGLang: of the free)
    start_order: int  # on a shared device: 0 starts first
    others_bytes: int  # what instances started earlier hold on its busiest device
    footprint_bytes: int  # what it holds per device once started (context included)
    max_concurrency: float | None
    plan: Plan


class PackResult(BaseModel):
    schema_version: int = 1
    device: str
    device_memory_bytes: int
    count: int
    engine: str
    fits: bool  # every model placed
    instances: list[Instance]
    unplaced: list[str]  # models no device could take, with why
    free_bytes: list[int]  # per device, after every instance started
    trust: dict[str, Trust] = Field(default_factory=dict)


def _request(device: Device, engine: str, tenant: Tenant, count: int, tp: int | None = None,
             pp: int | None = None, fraction: float | None = None,
             others: int = 0) -> PlacementRequest:
    return PlacementRequest(device=device, count=count, tp=tp, pp=pp, engine=engine,
                            context=tenant.context, concurrency=tenant.concurrency,
                            gpu_memory_utilization=fraction,
                            used_bytes=[others] if others else [], limit=0)


def _single(spec: ModelSpec, device: Device, engine: str, tenant: Tenant, percent: int,
            others: int) -> Plan:
    """The one-device plan at `percent` hundredths after `others` bytes are held."""
    result = plan_placement(spec, _request(device, engine, tenant, 1, 1, 1, percent / 100,
                                           others))
    return next(p for p in result.plans if p.disaggregation is None and p.dp <= 1)


def _bisect(low: int, high: int, good: Callable[[int], bool]) -> int:
    """The smallest value in [low, high] where `good` holds, `good` false then true as the
    value grows (high + 1 when it never holds)."""
    while low <= high:
        middle = (low + high) // 2
        if good(middle):
            high = middle - 1
        else:
            low = middle + 1
    return low


def smallest_fraction(spec: ModelSpec, device: Device, engine: str, tenant: Tenant,
                      others: int) -> tuple[float, Plan] | None:
    """The smallest fraction (hundredths, 0.01–0.99) at which the model fits one device
    already holding `others` bytes, and its plan; None when none does. Two bisections: the
    largest fraction the engine starts with beside the others (it refuses larger budgets
    than the free memory, as vLLM does), then the smallest that holds the requests (the
    pool only grows with the fraction)."""

    def starts(percent: int) -> bool:
        fit = _single(spec, device, engine, tenant, percent, others).per_device
        return fit is not None and fit.others_error is None

    top = _bisect(1, 99, lambda p: not starts(p)) - 1  # the largest that starts
    if top < 1:
        return None
    least = _bisect(1, top, lambda p: _single(spec, device, engine, tenant, p, others).fits)
    if least > top:
        return None
    return least / 100, _single(spec, device, engine, tenant, least, others)


def _footprint(plan: Plan) -> int:
    d = plan.per_device
    assert d is not None
    return d.weight_bytes + d.reserve_bytes + max(0, d.kv_pool_bytes) + PROCESS_CONTEXT


def pack(tenants: list[tuple[ModelSpec, Tenant]], device: Device, count: int,
         engine: str) -> PackResult:
    """Place every tenant on `count` devices of one kind, as described above."""
    held = [0] * count
    starts = [0] * count
    instances: list[Instance] = []
    unplaced: list[str] = []
    sharing: list[tuple[float, ModelSpec, Tenant, Plan]] = []
    whole: list[tuple[int, float, Tenant, Plan]] = []
    label = engine
    shares = get(engine).budget_bounds_use
    for spec, tenant in tenants:
        result = plan_placement(spec, _request(device, engine, tenant, count))
        label = f"{result.engine}@{result.engine_version}"
        smallest = result.smallest
        if smallest is None:
            why = result.plans[0].why if result.plans and result.plans[0].why else \
                "no legal plan fits"
            unplaced.append(f"{tenant.name}: {why}")
            continue
        plan = next(p for p in result.plans if p.fits and (p.tp, p.pp, p.ep) ==
                    (smallest.tp, smallest.pp, smallest.ep) and p.disaggregation is None)
        need = smallest.devices // max(1, smallest.replicas)
        if need == 1 and shares:
            sharing.append((result.gpu_memory_utilization, spec, tenant, plan))
        else:
            whole.append((need, result.gpu_memory_utilization, tenant, plan))
    next_free = 0
    for need, default, tenant, plan in sorted(whole, key=lambda e: -e[0]):
        if next_free + need > count:
            unplaced.append(f"{tenant.name}: needs {need} devices of its own; "
                            f"{count - next_free} left")
            continue
        devices = list(range(next_free, next_free + need))
        next_free += need
        for index in devices:
            held[index] = device.memory_bytes
        instances.append(Instance(
            model=tenant.name, context=tenant.context, concurrency=tenant.concurrency,
            devices=devices, shared=False, tp=plan.tp, pp=plan.pp,
            memory_fraction=default, start_order=0, others_bytes=0,
            footprint_bytes=_footprint(plan), max_concurrency=plan.total_concurrency,
            plan=plan))
    for _, spec, tenant, plan in sorted(sharing, key=lambda e: -_footprint(e[3])):
        placed = False
        # devices already holding instances, the SHARED_TRIES fullest first (first fit packs
        # them tightest; the bound keeps a large node's search short), then the first empty
        # one (empty ones are alike)
        shared = sorted((i for i in range(next_free, count) if held[i]),
                        key=lambda i: -held[i])[:SHARED_TRIES]
        empty = next((i for i in range(next_free, count) if not held[i]), None)
        for index in shared + ([empty] if empty is not None else []):
            found = smallest_fraction(spec, device, engine, tenant, held[index])
            if found is None:
                continue
            fraction, fitted = found
            instances.append(Instance(
                model=tenant.name, context=tenant.context, concurrency=tenant.concurrency,
                devices=[index], shared=True, tp=1, pp=1, memory_fraction=fraction,
                start_order=starts[index], others_bytes=held[index],
                footprint_bytes=_footprint(fitted),
                max_concurrency=fitted.total_concurrency, plan=fitted))
            held[index] += _footprint(fitted)
            starts[index] += 1
            placed = True
            break
        if not placed:
            unplaced.append(f"{tenant.name}: no device has room left for it (it needs "
                            f"{_footprint(plan) / 2**30:.1f} GiB on a device of its own)")
    for instance in instances:  # a device alone with one instance is not shared after all
        if instance.shared and starts[instance.devices[0]] == 1:
            instance.shared = False
    instances.sort(key=lambda i: (i.devices[0], i.start_order))
    return PackResult(
        device=device.id, device_memory_bytes=device.memory_bytes, count=count,
        engine=label, fits=not unplaced, instances=instances, unplaced=unplaced,
        free_bytes=[max(0, device.memory_bytes - h) for h in held],
        trust={"pool": engine_rule("each instance sized by its engine's own accounting, "
                                   "started after those before it on its device"),
               "context": Trust(kind="estimate", basis="a CUDA context and workspaces of "
                                "300 MiB per process, outside any engine's budget")})

