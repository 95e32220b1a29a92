"""Why a split is illegal, and what to warn about when it is legal.

Rules follow the serving engines (vLLM), not tidier ones:
- TP: each layer kind says what it needs (attention heads and KV heads split whole or
  replicate, Mamba heads or channels divide, an MLA latent is replicated); a dense MLP's
  intermediate size (or, without EP, the experts') divides by tp; tp stays within a node
  unless cross-node TP is allowed.
- PP: at most the layer count; uneven stages are legal (laid out as the engine partitions
  them) and warned about.
- EP (MoE only): ep is a multiple of tp (experts spread over the TP × DP ranks of an
  instance), at most the expert count; uneven placement (the fullest rank sets the memory)
  is legal unless even placement is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_inventory.engine import kinds
from llm_inventory.engine.placement.candidates import Shape
from llm_inventory.engine.placement.facts import ModelFacts


@dataclass
class Verdict:
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def legal(self) -> bool:
        return not self.reasons


@dataclass
class Judge:
    """Legality of shapes, memoised per dimension (a search asks the same tp many times)."""

    facts: ModelFacts
    _tp: dict[int, Verdict] = field(default_factory=dict)
    _pp: dict[int, Verdict] = field(default_factory=dict)
    _ep: dict[tuple[int, int], Verdict] = field(default_factory=dict)

    def __call__(self, shape: Shape) -> Verdict:
        parts = (self.tp(shape.tp), self.pp(shape.pp), self.ep(shape.tp, shape.ep))
        engine = self.facts.engine.split_limits(shape.tp, shape.pp, shape.ep)
        return Verdict([r for p in parts for r in p.reasons] + engine,
                       [w for p in parts for w in p.warnings])

    def tp(self, tp: int) -> Verdict:
        if tp in self._tp:
            return self._tp[tp]
        facts, s = self.facts, self.facts.stack
        verdict = Verdict()
        if s is not None:
            for kind, shaped in kinds.variants(s):
                reasons, warnings = kind.tp_limits(shaped, tp)
                verdict.reasons += [r for r in reasons if r not in verdict.reasons]
                verdict.warnings += [w for w in warnings if w not in verdict.warnings]
            for width in facts.dense_widths:
                if width % tp:
                    verdict.reasons.append(f"tp {tp} does not divide the MLP intermediate size "
                                           f"{width}")
        if tp > facts.per_node:
            if facts.request.allow_cross_node_tp:
                verdict.warnings.append(f"tp {tp} spans nodes of {facts.per_node} devices")
            else:
                verdict.reasons.append(f"tp {tp} spans nodes of {facts.per_node} devices "
                                       "(--allow-cross-node-tp permits it)")
        self._tp[tp] = verdict
        return verdict

    def pp(self, pp: int) -> Verdict:
        if pp in self._pp:
            return self._pp[pp]
        layers = self.facts.layers
        verdict = Verdict()
        if pp > layers:
            verdict.reasons.append(f"pp {pp} exceeds the {layers} layers")
        elif layers % pp:
            sizes = self.facts.engine.pp_partition(layers, pp)
            verdict.warnings.append("uneven pipeline stages: " + "/".join(map(str, sizes))
                                    + f" layers, as {self.facts.engine.label} partitions them")
        self._pp[pp] = verdict
        return verdict

    def ep(self, tp: int, ep: int) -> Verdict:
        key = (tp, ep)
        if key in self._ep:
            return self._ep[key]
        facts = self.facts
        verdict = Verdict()
        moe, experts = facts.moe, facts.experts
        if moe is not None and ep == 1 and moe.expert_intermediate_size % tp:
            verdict.reasons.append(f"tp {tp} does not divide the expert intermediate size "
                                   f"{moe.expert_intermediate_size}")
        if ep > 1:
            if not experts:
                verdict.reasons.append("expert parallelism on a dense model: there are no "
                                       "experts")
            else:
                if ep % tp:
                    verdict.reasons.append(f"ep {ep} is not a multiple of tp {tp}: experts "
                                           "spread over the TP × DP ranks of an instance")
                if ep > experts:
                    verdict.reasons.append(f"ep {ep} exceeds the {experts} experts")
                elif experts % ep:
                    counts = facts.expert_counts(ep)
                    text = (f"{experts} experts do not divide evenly over ep {ep} ("
                            + "/".join(map(str, counts))
                            + " per rank; the fullest rank sets the memory)")
                    if facts.request.even_experts:
                        verdict.reasons.append(text + "; --even-experts asks for even "
                                               "placement")
                    else:
                        verdict.warnings.append(text)
        self._ep[key] = verdict
        return verdict


def model_refusals(facts: ModelFacts) -> list[tuple[str, str]]:
    """(split, reason) for the splits the model itself rules out, said once."""
    refused = []
    if not facts.experts:
        refused.append(("ep", "expert parallelism on a dense model: there are no experts"))
    if not facts.has_encoder:
        refused.append(("enc", "encoder disaggregation: the model has no encoder stage"))
    if not facts.state:
        refused.append(("P/D", "prefill/decode disaggregation: the model keeps no state to "
                               "hand over (no decode loop)"))
    return refused
