"""Speculative decoding as the tables show it: one paragraph per plan."""

from __future__ import annotations

from rich.text import Text

from llm_inventory.engine.placement.models import Plan
from llm_inventory.units import UnitSystem, format_bytes


def drafter_bytes(plan: Plan) -> int:
    """The drafter's weights inside a plan's binding-device weights (0: none there)."""
    s = plan.speculative
    if s is None or not s.weights_budgeted or plan.per_device is None:
        return 0
    if plan.stages and plan.per_device.weight_bytes != plan.stages[-1].weight_bytes:
        return 0  # the binding device is not on the last stage, where the drafter is
    return s.draft_weight_bytes


def speculative_text(plan: Plan, units: UnitSystem, which: str = "") -> Text:
    """What the drafter adds to `plan` and, at the user's acceptance rate, to a step."""
    s = plan.speculative
    assert s is not None
    name = f"{s.method}" + (f" {s.draft}" if s.draft else "")
    head = f"speculative decoding ({which + ', ' if which else ''}{name}, k = " \
           f"{s.num_speculative_tokens}): "
    if s.draft_weight_bytes or s.draft_kv_bytes_per_token:
        tp = f" at tp {s.draft_tp}" if s.draft_tp else ""
        head += (f"drafter {format_bytes(s.draft_weight_bytes, units)} of weights{tp} and "
                 f"{format_bytes(s.draft_kv_bytes_per_token, units)} of KV per token over "
                 f"{s.draft_kv_layers} layer{'' if s.draft_kv_layers == 1 else 's'}, on the "
                 "last stage's devices")
    else:
        head += "no drafter memory"
    head += (f"; {s.lookahead_tokens} lookahead slot"
             f"{'' if s.lookahead_tokens == 1 else 's'} per running request "
             f"({format_bytes(s.lookahead_bytes_per_sequence, units)})")
    if s.on_top_bytes:
        head += (f"; {format_bytes(s.on_top_bytes, units)} allocated beyond the engine's "
                 "budget")
    if s.accepted_tokens_per_step is not None and s.effective_tpot_s is not None:
        head += (f". At your acceptance rate {s.acceptance:g}: "
                 f"{s.accepted_tokens_per_step:.2f} tokens a step, "
                 f"{s.effective_tpot_s * 1000:,.1f} ms per output token "
                 f"(×{s.speedup or 0:.2f}; an estimate resting on that rate)")
    return Text(head + ".")
