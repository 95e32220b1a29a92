"""Speculative decoding inside the fit: the drafter's weights and KV, the lookahead slots,
and the tokens a step yields at the acceptance rate the user gives.

Methods (vLLM's names, `vllm/config/speculative.py` SpeculativeConfig.method):
- `draft_model`: a separate, smaller model. Its weights at its own dtype, sharded over its
  own TP (vLLM's `draft_tensor_parallel_size`: 1 or the target's), its own KV per token over
  its own layers.
- `eagle`, `eagle3`: an EAGLE head: one decoder layer fed by an `fc` projection of two
  (EAGLE) or three (EAGLE-3) hidden states, the target's embedding shared, EAGLE-3 with
  an lm_head of its own over a reduced draft vocabulary. KV for its one layer. Without the
  head's own config the head is estimated as the target's last layer plus its fc and head.
- `mtp`: the checkpoint's multi-token-prediction layers (`ModelSpec.decoder.mtp`, counted
  by `params.count_parameters` as `mtp_parameters` but held by no device until now): their
  weights and one KV layer per MTP layer, of the kind of the target's last layer.
- `ngram`, `suffix`: drafting from the prompt or a suffix tree on the host: no memory.

How the engine places the drafter is its own rule (`ServingEngine.draft_rule`, each engine
module cites its source): engines that budget the drafter put its weights beside the last
pipeline stage's and its KV layers in that stage's pool, so the pool's bytes per token
grow by the drafter's (vLLM V1's `get_kv_cache_spec` sees the drafter's attention layers;
SGLang's draft pool has the target's token count; TensorRT-LLM adds the draft's KV per
token; llama.cpp's draft context has the target's cells). Engines that do not budget it
size the pool as if it were absent, and the plan warns of the bytes that come on top.

Time: a step verifies k = `num_speculative_tokens` drafted tokens; at a per-token acceptance
rate a the expected tokens a step yields is (1 − a^(k+1)) / (1 − a) (k + 1 when a = 1),
Leviathan et al. 2023 (eq. 1). The acceptance rate is the user's, and every figure from it
says so. Drafting costs a round a fixed part (the proposer's preparation and the rejection
sampler) and k steps, each reading the drafter's weights (and the target's lm_head when the
drafter shares it) at the device's bandwidth plus a fixed launch cost; the two fixed costs
are fitted on published batch-1 runs (`DraftTiming`, `tools/fit_speculative.py`). Drafting
from the prompt (`ngram`, `suffix`) runs on the host and is priced as free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.engine.trust import Trust
from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec, Shard
from llm_inventory.units import DTYPE_BITS

if TYPE_CHECKING:
    from llm_inventory.engine.placement.facts import ModelFacts
    from llm_inventory.engine.roofline import Timing
    from llm_inventory.engine.serving.base import KvLayer

Method = Literal["draft_model", "eagle", "eagle3", "mtp", "ngram", "suffix"]
METHODS: tuple[str, ...] = ("draft_model", "eagle", "eagle3", "mtp", "ngram", "suffix")
# Methods whose drafter holds device memory, and the ones that need a draft model.
_NEEDS_MODEL = ("draft_model",)
_NO_MEMORY = ("ngram", "suffix")
# EAGLE-3 heads predict over a reduced vocabulary (`draft_vocab_size` in their configs;
# 32,000 in the published Llama-3.1 and Qwen3 heads) through an lm_head of their own.
EAGLE3_DRAFT_VOCAB = 32_000
MAX_SPECULATIVE_TOKENS = 64  # bounds.DRAFT_TOKENS


class DraftTiming(BaseModel):
    """The fixed costs of drafting (seconds) and the evidence behind them."""

    model_config = ConfigDict(frozen=True)

    round_overhead_s: float = Field(ge=0)  # once a round: proposer and rejection sampler
    step_overhead_s: float = Field(ge=0)  # each drafting step, beside its weight reads
    source: str
    fitted_on: list[str]
    held_out: list[str]
    held_out_rows: int
    held_out_median: float  # |predicted − measured| ÷ measured TPOT
    held_out_max: float


def drafting_seconds(k: int, step_bytes: float, bandwidth: float,
                     constants: DraftTiming) -> float:
    """Seconds a round spends drafting k tokens with a drafter reading `step_bytes` a step
    at `bandwidth` bytes/s (see the module rules)."""
    return constants.round_overhead_s + k * (step_bytes / max(1.0, bandwidth)
                                             + constants.step_overhead_s)


class Speculative(BaseModel):
    """Speculative decoding asked of a plan. `draft_spec` is the draft model or EAGLE head
    as loaded (None: MTP, n-gram, or an EAGLE head estimated from the target); `draft` the
    name it was given by; `draft_tp` the draft's TP (None: the target's);
    `acceptance` the per-token acceptance rate the time estimate rests on (None: no time
    estimate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    num_speculative_tokens: int = Field(ge=1, le=MAX_SPECULATIVE_TOKENS)
    draft: str | None = None
    draft_spec: ModelSpec | None = None
    draft_tp: int | None = Field(default=None, ge=1)
    acceptance: float | None = Field(default=None, ge=0, le=1)
    draft_vocab: int | None = Field(default=None, ge=1)  # EAGLE-3's head (None: 32,000)
    # the draft model's own K and V cache types where the engine keeps them apart from the
    # target's (llama.cpp -ctkd/-ctvd; None: the engine's default for a draft)
    draft_cache_types: tuple[str, str] | None = None


def method_of(text: str, field: str = "speculative") -> Method:
    """A method as vLLM, SGLang or the user spell it; InputError for an unknown one."""
    word = text.strip().lower().replace("-", "_")
    word = {"draft": "draft_model", "standalone": "draft_model", "nextn": "mtp",
            "eagle_3": "eagle3", "ngram_gpu": "ngram"}.get(word, word)
    if word.endswith("_mtp"):  # vLLM's per-family MTP method names (deepseek_mtp …)
        word = "mtp"
    if word not in METHODS:
        raise InputError(field, f"unknown speculative method {text!r}; use one of "
                         + ", ".join(METHODS))
    return word  # type: ignore[return-value]


def check(spec: ModelSpec, asked: Speculative) -> None:
    """InputError when `asked` cannot run on `spec`: a draft model method without one, MTP
    on a checkpoint that holds no MTP layers."""
    if asked.method in _NEEDS_MODEL and asked.draft_spec is None:
        raise InputError("draft_model", "speculative method draft_model needs "
                         "--draft-model (a preset, Hugging Face id or config)")
    stack = spec.decoder
    if asked.method == "mtp" and (stack is None or stack.mtp is None):
        raise InputError("speculative", f"{spec.name} holds no multi-token-prediction "
                         "layers; use eagle, eagle3, draft_model or ngram")
    if asked.method in ("eagle", "eagle3") and asked.draft_spec is None and (
            stack is None or not stack.hidden_size):
        raise InputError("draft_model", f"{spec.name} gives no hidden size to shape an "
                         "EAGLE head from; give --draft-model")


def accepted_length(acceptance: float, k: int) -> float:
    """Expected tokens one verification step yields with k drafted tokens, each accepted
    with probability `acceptance` until the first rejection, plus the step's own token:
    (1 − a^(k+1)) / (1 − a); k + 1 at a = 1."""
    if acceptance >= 1:
        return float(k + 1)
    return (1 - acceptance ** (k + 1)) / (1 - acceptance)


@dataclass(frozen=True)
class DraftRule:
    """How an engine places a drafter. `weights_budgeted`: the drafter's weights are in
    memory when the engine sizes its pool (the pool shrinks for them); `kv_budgeted`: its
    KV layers share the pool's bytes per token. What is not budgeted is allocated on top.
    `draft_tps`: the draft TP widths it accepts besides the target's (() any). `source`:
    where the rule is read."""

    weights_budgeted: bool
    kv_budgeted: bool
    source: str
    draft_tps: tuple[int, ...] = (1,)
    lookahead: bool = True  # the scheduler reserves k slots per running sequence
    # an MTP module's own embedding and output head (checkpoint copies of the target's
    # vocabulary tables) are replaced by the target's at load, their memory freed
    shares_vocab: bool = False


@dataclass(frozen=True)
class Drafter:
    """A drafter on one rank of the target's last pipeline stage."""

    weight_bytes: int
    layers: tuple[KvLayer, ...]  # its state layers on that rank
    kv_layers: int  # how many layers keep KV
    step_bytes: int  # bytes one drafting step reads on that rank (its weights, roughly)
    weights_basis: str  # how the weights were obtained
    tp: int


def _shared_head_bytes(facts: ModelFacts, tp: int) -> int:
    """Bytes of the target's lm_head on one rank (vocabulary-sharded over TP, at the
    activation dtype): what a drafter that shares it reads each step."""
    stack = facts.stack
    if stack is None:
        return 0
    return math.ceil(stack.vocab_size * (stack.hidden_size or 0) * facts.act_bits / 8 / tp)


def _last_layer_bytes(facts: ModelFacts, tp: int, ep: int) -> int:
    """Bytes one rank holds for the target's last decoder layer."""
    prefix = facts._device_prefix(tp, ep)
    return math.ceil(prefix[-1] - prefix[-2]) if len(prefix) > 1 else 0


def _from_model(facts: ModelFacts, draft: ModelSpec,
                tp: int) -> tuple[int, tuple[KvLayer, ...]]:
    """A draft model's weights and state layers on one rank of its own TP, as the engine
    places any model (its padding, sharding and KV rules), its cache at the target's KV
    dtype unless the engine keeps the draft's apart (`ServingEngine.draft_cache`)."""
    from llm_inventory.engine.placement.facts import model_facts

    asked = facts.request.speculative
    assert asked is not None
    request = facts.request.model_copy(update={
        "speculative": None, "tp": tp, "pp": 1, "ep": None, "dtype": None,
        "kv_dtype": facts.kv_dtype, "pp_layer_partition": None,
        **facts.engine.draft_cache(facts.request.engine_flags, asked)})
    own = model_facts(draft, request)
    weights = own.stage_weights(tp, 1, 1)[0]
    layers = own.target_kv_layers(tp, 0, own.layers)
    bits = own.engine.kv_bits(own.settings)
    if bits is not None:  # the engine's own cache type, as `sequence_bytes` scales it
        scale = bits / DTYPE_BITS[own.kv_dtype]
        layers = tuple(replace(layer, bytes_per_token=math.ceil(layer.bytes_per_token * scale))
                       for layer in layers)
    return weights, layers


def _layer_of_kind(facts: ModelFacts, tp: int, kind: str | None) -> tuple[KvLayer, ...]:
    """The state of the target's last layer of `kind` on one rank (an MTP layer of its own
    kind keeps that kind's state: Qwen3.5's full-attention MTP layer after linear-attention
    layers); () when none is of that kind."""
    if kind is None:
        return ()
    for index in range(facts.layers - 1, -1, -1):
        found = facts.target_kv_layers(tp, index, index + 1)
        if any(layer.kind == kind for layer in found):
            return tuple(layer for layer in found if layer.kind == kind)
    return ()


def place_drafter(facts: ModelFacts, tp: int, ep: int) -> Drafter | None:
    """The drafter `facts.request.speculative` asks for on one rank of the last stage of a
    (tp, ep) split (None: no drafter memory)."""
    asked = facts.request.speculative
    if asked is None or asked.method in _NO_MEMORY:
        return None
    stack = facts.stack
    hidden = (stack.hidden_size or 0) if stack is not None else 0
    act = facts.act_bits / 8
    draft_tp = asked.draft_tp or tp
    last = facts.target_kv_layers(tp, facts.layers - 1, facts.layers) if facts.layers else ()
    if asked.method == "mtp":
        from llm_inventory.engine.tensors import mtp_tensors

        assert stack is not None and stack.mtp is not None
        count = stack.mtp.layers
        extras = {f"model.layers.{{i}}.{e.name}" for e in stack.mtp.extra}
        shared = facts.engine.draft_rule().shares_vocab
        extra = sum(g.parameters * act / (1 if g.shard == Shard.REPLICATED else tp)
                    for g in mtp_tensors(facts.spec) if g.name in extras
                    and not (shared and g.shard == Shard.VOCAB))
        weights = count * _last_layer_bytes(facts, tp, ep) + math.ceil(extra)
        own = _layer_of_kind(facts, tp, stack.mtp.kind) or last
        # a drafting step runs one MTP layer and the lm_head (the target's when shared)
        step = weights // max(1, count) + (_shared_head_bytes(facts, tp) if shared else 0)
        return Drafter(weight_bytes=weights, layers=tuple(own) * count, kv_layers=count,
                       step_bytes=step, tp=tp,
                       weights_basis=("counted" if facts.quant is None else
                                      "estimate (the extras' quantization is not read)")
                       + ": the checkpoint's MTP layers, each placed like the target's last "
                       "layer, their extra tensors at the activation dtype"
                       + (", the vocabulary tables shared with the target" if shared else ""))
    if asked.draft_spec is not None:
        weights, layers = _from_model(facts, asked.draft_spec, draft_tp)
        if asked.method in ("eagle", "eagle3"):
            weights += math.ceil((3 if asked.method == "eagle3" else 2) * hidden * hidden
                                 * act)
        kv = sum(1 for layer in layers if layer.bytes_per_token)
        return Drafter(weight_bytes=weights, layers=layers, kv_layers=kv, step_bytes=weights,
                       tp=draft_tp, weights_basis=(
                           f"counted: {asked.draft or asked.draft_spec.name} placed as the "
                           f"engine places a model at tp {draft_tp}"
                           + ("" if asked.method == "draft_model" else
                              ", plus the head's fc; a head that shares the target's "
                              "embedding holds less")))
    # An EAGLE head without its config: the target's last layer, its fc, and for EAGLE-3
    # an lm_head over the draft vocabulary (the embedding and EAGLE's lm_head are shared).
    fc = (3 if asked.method == "eagle3" else 2) * hidden * hidden * act
    head = ((asked.draft_vocab or EAGLE3_DRAFT_VOCAB) * hidden * act / tp
            if asked.method == "eagle3" else 0)
    if asked.method == "eagle3" and stack is not None:
        # EAGLE-3's layer takes the embedding and the fc output side by side: its q/k/v
        # read 2 × hidden (vllm/model_executor/models/llama_eagle3.py LlamaDecoderLayer),
        # one more hidden-state norm
        qkv = (stack.heads or 0) * stack.k_dim + 2 * (stack.n_kv_heads or 0) * stack.k_dim
        head += hidden * qkv * act / tp + hidden * act
    # the head builds its own rotary cos/sin cache beside the target's, as the engine sizes
    # the target's (runtime_buffer_bytes): vLLM's "Model loading took" for Llama-3.1-8B with
    # its published EAGLE-3 head is the target, the head and one more such cache
    rotary = facts.layout.buffers
    weights = _last_layer_bytes(facts, tp, ep) + math.ceil(fc + head) + rotary
    # EAGLE's step reads the target's lm_head, which it shares (EAGLE-3 has its own)
    step = weights + (_shared_head_bytes(facts, tp) if not head else 0)
    return Drafter(weight_bytes=weights, layers=tuple(last), kv_layers=1, step_bytes=step,
                   tp=tp, weights_basis="estimate: an EAGLE head shaped like the target's "
                   "last layer, plus its fc" + (", draft-vocabulary lm_head"
                                                if head else "") + " and rotary cache")


def check_rule(facts: ModelFacts) -> None:
    """InputError for a draft TP the engine refuses (vLLM: 1 or the target's)."""
    asked = facts.request.speculative
    if asked is None or asked.draft_tp is None:
        return
    rule = facts.engine.draft_rule()
    tp = facts.request.tp
    if rule.draft_tps and asked.draft_tp not in rule.draft_tps and (
            tp is None or asked.draft_tp != tp):
        allowed = " or ".join(str(t) for t in rule.draft_tps)
        raise InputError("draft_tp", f"{facts.engine.label} runs a draft at tp {allowed} or "
                         f"the target's (--tp){'' if tp else ': pin --tp'}; got "
                         f"{asked.draft_tp}")


class SpeculativeFit(BaseModel):
    """What speculative decoding adds to a plan, on its binding device, in bytes, and what
    it does to a decode step."""

    method: str
    num_speculative_tokens: int
    draft: str | None
    draft_tp: int | None
    weights_budgeted: bool  # the engine sizes its pool with the drafter's weights loaded
    kv_budgeted: bool  # the drafter's KV layers share the pool's bytes per token
    draft_weight_bytes: int  # on one device of the last stage
    draft_kv_layers: int
    draft_kv_bytes_per_token: int  # on that device: what the drafter adds to every token
    lookahead_tokens: int  # slots the scheduler reserves per running sequence
    lookahead_bytes_per_sequence: int
    on_top_bytes: int = 0  # what an engine that does not budget the drafter allocates beyond
    rule: str  # where the engine's placement of the drafter is read
    weights_basis: str
    acceptance: float | None = None
    accepted_tokens_per_step: float | None = None
    draft_step_s: float | None = None
    effective_tpot_s: float | None = None
    speedup: float | None = None
    trust: dict[str, Trust] = Field(default_factory=dict)


def speculative_fit(facts: ModelFacts, tp: int, ep: int, bytes_per_token: int, tokens: int,
                    timing: Timing | None) -> SpeculativeFit | None:
    """The speculative block of one plan (None when the request asks for none), on its
    binding device: `bytes_per_token` and `tokens` are that device's pool's."""
    asked = facts.request.speculative
    if asked is None:
        return None
    rule = facts.engine.draft_rule()
    drafter = facts.drafter(tp, ep)
    draft_kv = sum(layer.bytes_per_token for layer in drafter.layers) if drafter else 0
    k = asked.num_speculative_tokens
    lookahead = k if rule.lookahead else 0
    block = max(1, facts.settings.block_size)
    pages = -(-(facts.context + lookahead) // block) - -(-facts.context // block)
    fit = SpeculativeFit(
        method=asked.method, num_speculative_tokens=k, draft=asked.draft,
        draft_tp=drafter.tp if drafter else None, weights_budgeted=rule.weights_budgeted,
        kv_budgeted=rule.kv_budgeted,
        draft_weight_bytes=drafter.weight_bytes if drafter else 0,
        draft_kv_layers=drafter.kv_layers if drafter else 0,
        draft_kv_bytes_per_token=draft_kv, lookahead_tokens=lookahead,
        lookahead_bytes_per_sequence=pages * block * bytes_per_token,
        rule=rule.source,
        weights_basis=drafter.weights_basis if drafter else "no drafter memory (drafts "
        "from the prompt on the host)")
    if drafter is not None:  # what an engine that does not budget it allocates beyond
        on_top = (0 if rule.weights_budgeted else drafter.weight_bytes) + (
            0 if rule.kv_budgeted else draft_kv * tokens)
        fit = fit.model_copy(update={"on_top_bytes": on_top})
    trust = speculative_trust(facts)
    if asked.acceptance is not None and timing is not None:
        from llm_inventory.spec.calibration import default_calibration
        from llm_inventory.spec.draft_timing import default_draft_timing

        accepted = accepted_length(asked.acceptance, k)
        cal = facts.request.calibration or default_calibration()
        bandwidth = timing.memory_bandwidth_bytes_per_s * cal.device_efficiency(
            facts.request.device).bandwidth
        # the verify step costs about one target step at small batch (bandwidth-bound);
        # the drafting before it as `drafting_seconds` prices it
        draft_step = drafting_seconds(k, drafter.step_bytes, bandwidth,
                                      default_draft_timing()) if drafter else 0.0
        step = timing.tpot_s + draft_step
        fit = fit.model_copy(update={
            "acceptance": asked.acceptance, "accepted_tokens_per_step": round(accepted, 4),
            "draft_step_s": draft_step, "effective_tpot_s": step / accepted,
            "speedup": round(timing.tpot_s / (step / accepted), 4)})
    return fit.model_copy(update={"trust": trust})


def speculative_trust(facts: ModelFacts) -> dict[str, Trust]:
    """The labels of the speculative figures: the drafter's placement (the engine's rule
    when its weights are counted, an estimate otherwise) and the time (an estimate resting
    on the user's acceptance rate)."""
    from llm_inventory.engine.trust import engine_rule, estimate

    asked = facts.request.speculative
    assert asked is not None
    rule = facts.engine.draft_rule()
    drafter = facts.drafter(facts.request.tp or 1, 1)
    basis = drafter.weights_basis if drafter is not None else "no drafter memory"
    draft = asked.draft_spec
    if draft is not None and not draft.exact:  # an architecture the tool estimates
        basis = f"{basis}; {draft.estimated or 'its architecture is estimated'}"
    trust: dict[str, Trust] = {"speculative": (
        engine_rule(f"{facts.engine.label} places the drafter: {rule.source}; {basis}")
        if drafter is None or (basis.startswith("counted") and (draft is None or draft.exact))
        else estimate(f"{basis}; {facts.engine.label} places it: {rule.source}"))}
    if asked.acceptance is not None:
        trust["speculative_time"] = estimate(time_basis(asked) + "; the verify step costs "
                                             "one decode step of the target")
    return trust


def time_basis(asked: Speculative) -> str:
    """What a time with speculative decoding rests on: the user's acceptance rate, and the
    drafting constants with the error they showed on runs their fit did not see."""
    from llm_inventory.spec.draft_timing import default_draft_timing

    c = default_draft_timing()
    return (f"rests on your acceptance rate ({asked.acceptance:g} per token, k = "
            f"{asked.num_speculative_tokens}): (1 − a^(k+1)) / (1 − a) tokens a step; "
            f"drafting costs {c.round_overhead_s * 1e3:.2f} ms a round and "
            f"{c.step_overhead_s * 1e3:.2f} ms a step beside the drafter's weight reads, "
            f"fitted on {len(c.fitted_on)} published batch-1 runs ({c.source}); on "
            f"{c.held_out_rows} runs the fit did not see, TPOT off by a median "
            f"{c.held_out_median:.0%}, at most {c.held_out_max:.0%}")
