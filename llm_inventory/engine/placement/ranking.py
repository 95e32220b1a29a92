"""The order plans are listed in: what "best first" means for each `--sort`.

Every order puts plans that fit first, then legal near misses ranked by the share of the
workload they hold (a plan whose weights leave no room holds none and comes last), then by
the bytes per device they lack (the nearest miss first); illegal
splits are not plans (they are listed once, with their reasons, as refused). Within the
plans that fit, the sort key decides (see `ORDERS` for the words tables print):
- throughput (default): the highest estimated decode throughput of the whole deployment
  (replicas × tokens/s of one replica at the batch its KV pool holds; a roofline estimate);
- concurrency: most requests at the context held across the deployment;
- devices: fewest devices per replica;
- kv: most KV tokens across the deployment;
- cost: fewest devices needed to serve the workload.
Ties go to fewer devices used, no disaggregation, then smaller tp, pp and ep.
"""

from __future__ import annotations

from collections.abc import Callable

from llm_inventory.engine.placement.models import Plan, SortKey


def held_share(plan: Plan, wanted: int) -> float:
    """The share of the workload's concurrency a plan holds (0 when it holds none)."""
    if plan.per_device is not None and plan.per_device.kv_pool_bytes <= 0:
        return -1.0
    if plan.total_concurrency is None:
        return 1.0 if plan.fits else 0.0
    return min(1.0, plan.total_concurrency / wanted)


def shortfall(plan: Plan) -> float:
    """Bytes per device a plan lacks to hold the workload (0 when it holds it): its binding
    device's weights, reserve and workload over what the engine may use."""
    d = plan.per_device
    if d is None:
        return float("inf")
    return float(max(0, d.weight_bytes + d.reserve_bytes + d.workload_bytes - d.usable_bytes))


def _throughput(plan: Plan) -> float:
    if plan.timing is None:
        return 0.0
    return plan.timing.tokens_per_s_per_replica * max(1, plan.dp)


def _kv_tokens(plan: Plan) -> float:
    return float(plan.per_device.kv_capacity_tokens * plan.engines) if plan.per_device else 0.0


_PRIMARY: dict[str, Callable[[Plan], float]] = {
    "concurrency": lambda p: -(p.total_concurrency or 0.0),
    "devices": lambda p: float(p.devices_per_replica),
    "kv": lambda p: -_kv_tokens(p),
    "throughput": lambda p: -_throughput(p),
    "cost": lambda p: float(p.devices_needed) if p.devices_needed else float("inf"),
}


def sort_plans(plans: list[Plan], key: SortKey, wanted: int) -> list[Plan]:
    """`plans` in the order `key` defines (see the module rules)."""
    primary = _PRIMARY[key]

    def order(p: Plan) -> tuple[float, ...]:
        status = 0.0 if p.fits else 1.0
        closeness = 0.0 if p.fits else -held_share(p, wanted)
        short = 0.0 if p.fits else shortfall(p)
        return (status, closeness, short, primary(p), float(p.devices_used),
                0.0 if p.disaggregation is None else 1.0, -(p.total_concurrency or 0.0),
                float(p.tp), float(p.pp), float(p.ep))

    return sorted(plans, key=order)
