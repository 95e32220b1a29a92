"""One deployment of a fleet checked: does it fit, does it hold its requests, does it meet
its latency targets, and does the command line it runs start.

A deployment passes when a legal plan of its placement search fits `concurrency` requests at
`context` (with its pins), and, when targets are given, that plan's time estimates meet them
(the first fitting plan, best first, that does). Memory figures keep their placement labels
(`exact`, `engine rule`, `calibrated`); a target is judged on the calibrated time estimate
and says so. A given `launch` command line is predicted as `inventory launch` predicts it:
it fails when the engine would stop at start-up or cannot hold the requests.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from llm_inventory.engine.launch import LaunchResult
from llm_inventory.engine.placement import PlacementRequest, PlacementResult, Plan, plan_placement
from llm_inventory.engine.trust import Trust
from llm_inventory.spec.model import ModelSpec

Status = Literal["pass", "fail"]


class Targets(BaseModel):
    """Latency targets in seconds; None: not checked."""

    ttft_s: float | None = None
    tpot_s: float | None = None

    def misses(self, plan: Plan) -> list[str]:
        """Why `plan`'s time estimate misses the targets ([] when it meets them)."""
        timing = plan.timing
        if timing is None:
            return ["no time estimate for this device (its peak rates are unknown)"] \
                if self.ttft_s or self.tpot_s else []
        found = []
        for what, target, value in (("TTFT", self.ttft_s, timing.ttft_s),
                                    ("TPOT", self.tpot_s, timing.tpot_s)):
            if target is not None and value > target:
                found.append(f"{what} {value * 1000:,.1f} ms > target {target * 1000:,.1f} ms")
        return found


class DeploymentCheck(BaseModel):
    """The verdict on one deployment, with the figures it rests on."""

    name: str
    line: int | None  # where the entry starts in the manifest
    model: str
    engine: str
    device: str
    count: int
    context: int
    concurrency: int
    status: Status
    reasons: list[str]  # why it fails ([] when it passes)
    warnings: list[str] = Field(default_factory=list)
    plan: str | None  # the plan judged: "tp 4 × pp 1 × dp 2" …
    fits: bool
    max_concurrency: float | None  # per engine, as the engine prints it
    total_concurrency: float | None  # every engine of the plan together
    kv_capacity_tokens: int | None  # per engine instance, binding device
    ttft_s: float | None
    tpot_s: float | None
    targets: Targets
    launch_starts: bool | None = None  # the `launch` line starts (None: no line given)
    trust: dict[str, Trust] = Field(default_factory=dict)


class FleetResult(BaseModel):
    """Every deployment of a manifest, checked; `failed` 0 means the fleet passes."""

    schema_version: int = 1
    manifest: str
    deployments: list[DeploymentCheck]
    passed: int
    failed: int


def plan_label(plan: Plan) -> str:
    """A plan as people say it: `tp 4 × pp 2 × dp 1`, with its disaggregation."""
    label = f"tp {plan.tp} × pp {plan.pp}" + (f" × ep {plan.ep}" if plan.ep > 1 else "") \
        + f" × dp {plan.dp}"
    return f"{label} ({plan.disaggregation})" if plan.disaggregation else label


def judge(result: PlacementResult, targets: Targets) -> tuple[Plan | None, list[str]]:
    """The plan a deployment is judged on and why it fails ([] when it passes): the first
    fitting plan that meets the targets, else the first fitting plan, else the first plan."""
    fitting = [p for p in result.plans if p.fits]
    for plan in fitting:
        if not targets.misses(plan):
            return plan, []
    if fitting:
        return fitting[0], targets.misses(fitting[0])
    if not result.plans:
        reason = result.refused[0].reason if result.refused else "no legal split"
        return None, [f"no legal plan: {reason}"]
    closest = result.plans[0]
    why = closest.why or "it does not fit"
    return closest, [f"no legal plan fits {result.concurrency:,} × {result.context:,} "
                     f"tokens; best ({plan_label(closest)}): {why}"]


def check_deployment(name: str, line: int | None, spec: ModelSpec, request: PlacementRequest,
                     targets: Targets, launch: LaunchResult | None = None) -> DeploymentCheck:
    """One deployment's placement searched and judged against its targets and launch line."""
    result = plan_placement(spec, request)
    plan, reasons = judge(result, targets)
    if launch is not None:
        if launch.startup_error:
            reasons.append(f"launch line: the engine stops at start-up: {launch.startup_error}")
        elif not launch.starts:
            reasons.append("launch line: the engine does not start with this context")
        elif not launch.fits:
            held = launch.plan.total_concurrency or 0
            reasons.append(f"launch line: holds {held:,.1f} requests at {launch.context:,} "
                           f"tokens, {request.concurrency:,} asked")
    fit = plan.per_device if plan is not None else None
    timing = plan.timing if plan is not None else None
    trust = dict(result.trust)
    if launch is not None:
        trust["launch"] = launch.trust.get("startup", trust.get("pool", Trust(kind="exact")))
    return DeploymentCheck(
        name=name, line=line, model=spec.name, engine=f"{result.engine}@"
        f"{result.engine_version}", device=result.device, count=result.count,
        context=result.context, concurrency=result.concurrency,
        status="fail" if reasons else "pass", reasons=reasons,
        warnings=list(plan.warnings) if plan is not None else [],
        plan=plan_label(plan) if plan is not None else None,
        fits=plan is not None and plan.fits,
        max_concurrency=plan.max_concurrency if plan is not None else None,
        total_concurrency=plan.total_concurrency if plan is not None else None,
        kv_capacity_tokens=fit.kv_capacity_tokens if fit is not None else None,
        ttft_s=timing.ttft_s if timing is not None else None,
        tpot_s=timing.tpot_s if timing is not None else None,
        targets=targets, launch_starts=launch.starts if launch is not None else None,
        trust=trust)


def fleet_result(manifest: str, checks: list[DeploymentCheck]) -> FleetResult:
    failed = sum(1 for c in checks if c.status == "fail")
    return FleetResult(manifest=manifest, deployments=checks, passed=len(checks) - failed,
                       failed=failed)
