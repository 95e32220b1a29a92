"""KV capacity against context length: what one plan's pools hold at each max_model_len.

The pools are sized once, at the plan's split (placement's `size`); each context re-cuts
them with the engine's own pool layout, so blocks, sliding windows and fixed state count as
the engine counts them. The binding stage (the fewest requests) answers. An engine that
allocates what its context asks (llama.cpp) holds its room over one sequence's caches at
that context: the slots a launch with `-c context × slots` could ask for.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from llm_inventory.engine.placement import PlacementRequest, PlacementResult, Plan
    from llm_inventory.engine.placement.facts import ModelFacts
    from llm_inventory.spec.model import ModelSpec


class CapacityPoint(BaseModel):
    """A plan's KV pool at one context length: tokens and requests it holds."""

    context: int
    kv_tokens: int
    max_concurrency: float


def contexts_to(limit: int, also: int | None = None) -> list[int]:
    """Powers of two from 1,024 tokens up to `limit`, and `also`."""
    found = {c for c in (2 ** k for k in range(10, 21)) if c <= limit}
    if also is not None:
        found.add(also)
    return sorted(found)


def capacity_against_context(facts: ModelFacts, tp: int, pp: int, ep: int,
                             contexts: list[int]) -> list[CapacityPoint]:
    """The pools of split (tp, pp, ep) at each context (empty when a stage has no pool)."""
    from llm_inventory.engine.placement.candidates import Shape
    from llm_inventory.engine.placement.fit import size

    sized = size(facts, Shape(tp=tp, pp=pp, ep=ep), [], [])
    if not sized.pools or not all(pool > 0 for pool in sized.pools):
        return []
    out = []
    for context in contexts:
        settings = facts.settings.model_copy(update={"max_model_len": context})
        if facts.engine.kv_from_context:  # one slot of `context` cells
            settings = settings.model_copy(update={"flags": {
                **settings.flags, "ctx_size": context, "parallel": 1, "kv_unified": True}})
        held, tokens = math.inf, 0
        for stage, pool in zip(sized.ranges, sized.pools, strict=True):
            layout = facts.engine.pool_layout(facts.kv_layers(tp, stage.start, stage.stop),
                                              settings)
            _, stage_tokens, conc = layout.measure(pool)
            one = layout.capacity(pool).kv_bytes if facts.engine.kv_from_context else None
            if one:
                conc = pool / one
                stage_tokens = int(conc) * context
            if layout.keeps_state and conc < held:
                held, tokens = conc, stage_tokens
        out.append(CapacityPoint(context=context, kv_tokens=tokens,
                                 max_concurrency=0.0 if held == math.inf else held))
    return out


def plan_capacity(spec: ModelSpec, request: PlacementRequest, result: PlacementResult,
                  plan: Plan) -> list[CapacityPoint]:
    """`plan`'s pools (placed by `request`, as `result` answered it) from 1,024 tokens to the
    model's positions (or 128K when it states none), and at the context asked."""
    from llm_inventory.engine.placement.facts import model_facts

    facts = model_facts(spec, request.model_copy(update={"engine": f"{result.engine}@"
                                                         f"{result.engine_version}"}))
    limit = spec.max_context or max(result.context, 131072)
    return capacity_against_context(facts, plan.tp, plan.pp, plan.ep,
                                    contexts_to(limit, result.context))
