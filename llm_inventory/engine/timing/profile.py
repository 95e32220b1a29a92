"""What one engine step costs a replica: the work per token and the bytes per device.

A profile holds, for one split of a model on one device type, everything the step model
reads (all per device of the busiest pipeline stage unless said):
- matmul FLOPs per token of the whole model (dense part and routed experts apart, the
  lm_head per sampled sequence), from the model's GEMMs (`engine/shapes.py`);
- attention score FLOPs for a span of positions, as each layer kind counts them
  (`engine/kinds/`), memoised;
- weight bytes: the non-expert part and the routed experts one rank holds (`placement/facts`);
- KV bytes one sequence holds at a context (windows capped, paged), memoised;
- the payload of the collectives: TP all-reduce (2 per layer, hidden × activation bytes per
  token) and EP dispatch/combine (per MoE layer);
- with speculative decoding, the drafted tokens a decoding sequence verifies per round and
  the drafting time a round adds.
Devices: a replica is tp × pp devices, or ep × pp with expert parallelism, where the
attention runs data-parallel over ep ÷ tp groups of tp ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llm_inventory.engine.experts import expected_distinct_experts
from llm_inventory.engine.roofline import peak_flops
from llm_inventory.spec.devices import Device
from llm_inventory.units import DTYPE_BITS

if TYPE_CHECKING:  # placement imports this module: no cycle at run time
    from llm_inventory.engine.placement.facts import ModelFacts


@dataclass
class WorkProfile:
    """The cost figures of one split (see the module rules)."""

    device: Device
    tp: int
    pp: int
    ep: int
    layers: int
    moe_layers: int
    hidden: int
    activation_bytes: int
    dense_flops_per_token: float  # matmul FLOPs per token outside routed experts and lm_head
    expert_flops_per_token: float  # routed-expert matmul FLOPs per token (top_k experts)
    lm_head_flops: float  # per sampled sequence
    dense_weight_bytes: float  # per device
    expert_weight_bytes: float  # per device, every expert it holds
    experts: int
    top_k: int
    peak: int
    bandwidth: int
    intra_link: int | None
    inter_link: int | None
    per_node: int
    facts: ModelFacts = field(repr=False)
    _attention: dict[tuple[int, int], float] = field(default_factory=dict, repr=False)  # shared
    _kv: dict[int, float] = field(default_factory=dict, repr=False)
    # speculative decoding (`engine/speculative.py`): the drafted tokens every decoding
    # sequence verifies in a round beside its own, and the seconds a round spends drafting
    # them; 0 without it
    verify: int = 0
    draft_s: float = 0.0

    @property
    def group(self) -> int:
        """Devices across one pipeline stage."""
        return max(self.tp, self.ep)

    @property
    def devices(self) -> int:
        return self.group * self.pp

    @property
    def attention_groups(self) -> int:
        """Data-parallel attention groups inside one stage (ep ÷ tp with EP, else 1)."""
        return self.ep // self.tp if self.ep > self.tp and self.ep % self.tp == 0 else 1

    def attention_flops(self, start: int, stop: int) -> float:
        """Score FLOPs of positions start+1 … stop of one sequence, the whole model."""
        key = (start, stop)
        if key not in self._attention:
            from llm_inventory.engine.shapes import attention_flops

            stack = self.facts.stack
            self._attention[key] = float(attention_flops(
                stack, start=start, stop=stop, sequences=1, encoder_tokens=0)
            ) if stack is not None and stack.shaped else 0.0
        return self._attention[key]

    def kv_bytes(self, context: int) -> float:
        """One sequence's state on one device of the stage holding the most at `context`
        positions: the busiest stage paces a pipeline's round, as the heaviest stage's
        weights do (`dense_weight_bytes`)."""
        block = self.facts.settings.block_size
        key = max(1, -(-context // block))
        if key not in self._kv:
            facts = self.facts
            self._kv[key] = float(max(
                facts.sequence_bytes(self.tp, stage.start, stage.stop, key * block)
                for stage in facts.ranges(self.pp)))
        return self._kv[key]

    def touched(self, tokens: float) -> float:
        """Share of a rank's routed experts a step over `tokens` tokens reads (uniform
        routing: E × (1 − (1 − k/E)^B) distinct experts)."""
        if not self.experts:
            return 1.0
        rows = max(1, round(tokens))
        return expected_distinct_experts(self.experts, self.top_k, rows) / self.experts

    def link(self, width: int | None = None) -> int | None:
        """The link a collective over `width` ranks (default: the stage's whole group)
        crosses: intra-node unless it spans nodes. A device with no inter-node figure is
        taken at its intra-node link, never as a free one."""
        if (width or self.group) > self.per_node:
            return self.inter_link or self.intra_link
        return self.intra_link


@dataclass
class ModelWork:
    """What a step costs the whole model, whatever the split (shared by a search's splits)."""

    dense_flops_per_token: float
    expert_flops_per_token: float
    lm_head_flops: float
    moe_layers: int
    experts: int
    top_k: int
    attention: dict[tuple[int, int], float] = field(default_factory=dict)


def model_work(facts: ModelFacts) -> ModelWork:
    """Matmul FLOPs per token (dense, routed experts, lm_head) from the model's GEMMs."""
    from llm_inventory.engine.params import count_parameters
    from llm_inventory.engine.shapes import phase_work
    from llm_inventory.engine.tensors import work_tensors
    from llm_inventory.spec.model import Component

    spec = facts.spec
    groups = work_tensors(spec) if spec.coarse is None else []
    coarse = count_parameters(spec, facts.request.dtype) if spec.coarse else None
    one = phase_work(spec, groups, phase="prefill", tokens=1, sequences=1, context=1,
                     state_bytes=0, dtype=facts.weight_dtype, quant=facts.quant, coarse=coarse)
    lm = sum(g.flops for g in one.gemms if g.name.startswith("lm_head"))
    params = coarse or count_parameters(spec, facts.request.dtype)
    expert = 0.0
    moe_layers = params.moe_layers
    if params.experts and params.top_k:
        routed = sum(c.parameters for c in params.by_component
                     if c.component is Component.EXPERTS)
        expert = 2.0 * routed * params.top_k / params.experts
    stack = spec.decoder
    if stack is not None and stack.loop is not None and stack.moe is not None:
        # a looped layer's experts run once per pass (layers are counted as visited)
        visits = [stack.visits(i) for i in range(stack.layers) if stack.moe.is_moe_layer(i)]
        if visits and moe_layers:
            expert *= sum(visits) / len(visits)
            moe_layers = sum(visits)
    return ModelWork(dense_flops_per_token=max(0.0, one.matmul_flops - lm - expert),
                     expert_flops_per_token=expert, lm_head_flops=float(lm),
                     moe_layers=moe_layers, experts=params.experts or 0,
                     top_k=params.top_k or 0)


def work_profile(facts: ModelFacts, tp: int, pp: int, ep: int,
                 work: ModelWork | None = None) -> WorkProfile | None:
    """The profile of split (tp, pp, ep) of `facts`' model on its device (`work`: the
    model's, when already computed); None when the model's layers are not shaped or the
    device lacks a peak or a bandwidth."""
    s, device = facts.stack, facts.request.device
    if s is None or not s.shaped or not device.memory_bandwidth_bytes_per_s:
        return None
    bits = facts.quant.bits if facts.quant is not None else DTYPE_BITS[facts.weight_dtype]
    peak = peak_flops(device, int(bits))
    if peak is None:
        return None
    w = work or model_work(facts)
    # what a step reads (a looped layer once per pass); a drafter reads its own
    weights = max(facts.target_stage_reads(tp, pp, ep))
    experts_held = facts.expert_reads(tp, ep) / pp
    return WorkProfile(
        device=device, tp=tp, pp=pp, ep=ep, layers=facts.layers + s.visited_layers - s.layers,
        moe_layers=w.moe_layers, hidden=s.hidden_size or 0,
        activation_bytes=facts.act_bits // 8,
        dense_flops_per_token=w.dense_flops_per_token,
        expert_flops_per_token=w.expert_flops_per_token, lm_head_flops=w.lm_head_flops,
        dense_weight_bytes=max(0.0, weights - experts_held),
        expert_weight_bytes=experts_held, experts=w.experts, top_k=w.top_k, peak=peak,
        bandwidth=device.memory_bandwidth_bytes_per_s,
        intra_link=device.intra_node_bandwidth_bytes_per_s,
        inter_link=device.inter_node_bandwidth_bytes_per_s,
        per_node=facts.per_node, facts=facts, _attention=w.attention,
    )

