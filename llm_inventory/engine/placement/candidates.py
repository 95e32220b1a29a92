"""The split shapes a search judges, bounded by construction.

Shapes are (tp, pp, ep) plus disaggregated variants. Sets, never ranges over devices:
- TP: every width up to 8 within a node, every divisor of the attention heads (the widths
  that can be legal), and, across nodes, the node multiples among those divisors; at most
  the device count.
- PP: every depth up to 8 and every divisor of the devices left, at most one past the layer
  count (so "deeper than the model" is answered once).
- EP (MoE only): tp × k for every k up to 8 and every divisor of the devices left, at most
  the expert count.
A pinned dimension takes only its value. A shape needing more devices than given is not a
candidate. The number of shapes is at most |TP| × |PP| × |EP|, each a divisor set: a few
thousand for any count the inputs allow.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from llm_inventory.engine.placement.facts import ModelFacts


@dataclass(frozen=True, slots=True)
class Shape:
    """One way to lay out an engine instance: devices across a stage (`group`) × stages."""

    tp: int
    pp: int
    ep: int
    disaggregation: str | None = None  # "encoder" or "prefill/decode"

    @property
    def group(self) -> int:
        """Devices across one pipeline stage of an instance (tp, or ep with EP)."""
        return self.ep if self.ep > 1 else self.tp

    @property
    def devices(self) -> int:
        return self.group * self.pp

    def label(self) -> str:
        text = f"tp{self.tp} pp{self.pp}" + (f" ep{self.ep}" if self.ep > 1 else "")
        mode = {"encoder": " enc", "prefill/decode": " P/D"}.get(self.disaggregation or "", "")
        return text + mode


def divisors(n: int) -> list[int]:
    """Every divisor of n ≥ 1, ascending (trial division up to √n)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def _tp_widths(facts: ModelFacts) -> list[int]:
    count, per_node = facts.request.count, facts.per_node
    s = facts.stack
    heads = s.heads if s is not None and s.heads else 0
    widths = set(range(1, min(count, per_node, 8) + 1))
    if heads:
        widths |= {d for d in divisors(heads) if d <= count}
    else:
        widths |= {2**k for k in range(64) if 2**k <= min(count, per_node)}
    if per_node < count:
        widths |= {w for w in (per_node * k for k in divisors(count // per_node))
                   if not heads or heads % w == 0}
    return sorted(w for w in widths if w <= count)


def shapes(facts: ModelFacts) -> Iterator[Shape]:
    """Every (tp, pp, ep) worth judging on the devices given (see the module rules)."""
    request, count = facts.request, facts.request.count
    tps = [request.tp] if request.tp else _tp_widths(facts)
    for tp in tps:
        if tp > count:
            continue
        room = count // tp
        pps = [request.pp] if request.pp else sorted(
            p for p in set(range(1, min(room, 8) + 1)) | set(divisors(room))
            if p <= facts.layers + 1)
        for pp in pps:
            if tp * pp > count:
                continue
            left = count // (tp * pp)
            if request.ep:
                eps = [request.ep]
            elif facts.experts:
                ks = set(range(1, min(left, 8) + 1)) | set(divisors(left))
                eps = [1] + sorted(tp * k for k in ks if 1 < tp * k <= facts.experts)
            else:
                eps = [1]
            for ep in eps:
                shape = Shape(tp=tp, pp=pp, ep=ep)
                if shape.devices <= count:
                    yield shape
