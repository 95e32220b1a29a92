"""The sampling processor chain: one small distribution through temperature, top-k, top-p,
min-p, repetition penalty and bans, stage by stage; and the per-request state a sampler keeps.

The chain works on logits, as engines do: `--probs` become logits by `log p`, processors
rewrite or remove (`-inf`) logits, and each stage's probabilities are the softmax over the
tokens still in play, so they always sum to 1. Logits pass from one processor to the next as
they are, never re-normalised in between: every processor here except the repetition penalty
is indifferent to a constant shift of the logits, and that one applies to raw values in the
engines it copies, so re-normalising would change what it does.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.bounds import number
from llm_inventory.engine.trust import Trust, exact
from llm_inventory.errors import InputError

ProcessorName = Literal["temperature", "top_k", "top_p", "min_p", "repetition_penalty", "ban"]
PROCESSORS: tuple[ProcessorName, ...] = (
    "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "ban",
)

# vLLM treats any temperature below this as greedy (`_SAMPLING_EPS` in vllm/sampling_params.py).
GREEDY_BELOW = 1e-5
# Input probabilities may miss 1 by this much before they are renormalised with a warning.
SUM_TOLERANCE = 1e-6
# A cumulative mass within this of p counts as reaching p: the decimal inputs 0.60 + 0.25 reach
# 0.85 as written, whatever binary rounding does to the sum.
REACH_TOLERANCE = 1e-9


class Boundary(StrEnum):
    """Top-p's rule for the token whose mass carries the running total across p."""

    INCLUSIVE = "inclusive"
    EXCLUSIVE = "exclusive"


class Processor(BaseModel):
    """One link of the chain: its name, its parameter and the tokens it names.

    `value` is the temperature, k (an integer), p, min-p or the penalty factor; `ban` has no
    value. `tokens` are the tokens a penalty or ban applies to. `boundary` is set on top-p only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ProcessorName
    value: int | float | None = None
    tokens: list[str] = Field(default_factory=list)
    boundary: Boundary | None = None
    label: str = ""


class Distribution(BaseModel):
    """A distribution over the named tokens: `logits` (null once removed) and `probs`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    logits: dict[str, float | None]
    probs: dict[str, float]


class Stage(BaseModel):
    """The distribution after one processor.

    `probs` holds every token (0 once removed) and sums to 1; `removed` lists every token out of
    the candidate set so far, `dropped` those this processor took out. On top-p, `crossing` is
    the token whose mass carries the running total across p (none when a prefix reaches p
    exactly) and `note` says what the boundary rule did with it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    processor: Processor
    logits: dict[str, float | None]
    probs: dict[str, float]
    removed: list[str]
    dropped: list[str]
    crossing: str | None = None
    note: str | None = None


class SampleRequest(BaseModel):
    """Tokens with their logits, the chain to apply in order, and top-p's boundary rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: list[str]
    logits: list[float]
    chain: list[Processor] = Field(default_factory=list)
    top_p_boundary: Boundary = Boundary.INCLUSIVE


class SampleResult(BaseModel):
    """Every stage of the chain and the final candidate set, most probable first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = 1
    tokens: list[str]
    top_p_boundary: Boundary
    input: Distribution
    stages: list[Stage]
    candidates: list[str]
    warnings: list[str] = Field(default_factory=list)
    trust: dict[str, Trust] = Field(default_factory=lambda: {
        "probabilities": exact("the processor chain applied to the given logits")})


class SamplerStateItem(BaseModel):
    """One piece of state a server keeps per request for its sampler, and when it exists."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    needed_when: str


# --- parsing ------------------------------------------------------------------------------


def _number(text: str, field: str, what: str) -> float:
    try:  # bounded before conversion: finite, few digits (bounds.number)
        return float(number(field, text, low=-sys.float_info.max, high=sys.float_info.max))
    except InputError as exc:
        raise InputError(field, f"{what}: {exc.message}") from None


def _token_name(text: str, field: str, item: str) -> str:
    name = text.strip()
    if not name:
        raise InputError(field, f"missing token name in {item!r}")
    return name


def parse_pairs(text: str, field: str) -> list[tuple[str, float]]:
    """`A=0.60,B=0.25` → [("A", 0.6), ("B", 0.25)]: unique names, finite numbers.

    Raises InputError naming `field` for an empty list, a missing `=`, an empty or repeated
    name, or a value that is not a finite number.
    """
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or not all(items):
        raise InputError(field, f"expected TOKEN=VALUE pairs separated by commas, got {text!r}")
    pairs: list[tuple[str, float]] = []
    seen: set[str] = set()
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError(field, f"expected TOKEN=VALUE, got {item!r}")
        token = _token_name(name, field, item)
        if token in seen:
            raise InputError(field, f"token {token!r} is given twice")
        seen.add(token)
        pairs.append((token, _number(value.strip(), field, token)))
    return pairs


def logits_from_probs(pairs: Sequence[tuple[str, float]], field: str = "probs") -> tuple[
    list[str], list[float], list[str]
]:
    """Tokens, logits (`log p`) and warnings from token probabilities.

    Each probability must be in (0, 1]: leave a token out rather than give it 0. A sum within
    1e-6 of 1 is taken as it is; a sum further off is accepted and renormalised (logits
    `log(p / sum)`), with a warning saying so.
    """
    warnings: list[str] = []
    for token, p in pairs:
        if p == 0.0:
            raise InputError(field, f"{token}: a probability must be > 0; leave the token out")
        if not 0.0 < p <= 1.0:
            raise InputError(field, f"{token}: a probability must be in (0, 1], got {p:g}")
    total = math.fsum(p for _, p in pairs)
    if abs(total - 1.0) > SUM_TOLERANCE:
        warnings.append(f"--{field} sum to {total:.6g}, not 1; renormalised")
    else:
        total = 1.0
    return [t for t, _ in pairs], [math.log(p / total) for _, p in pairs], warnings


def logits_from_pairs(pairs: Sequence[tuple[str, float]]) -> tuple[list[str], list[float]]:
    """Tokens and logits as given (already checked finite by `parse_pairs`)."""
    return [t for t, _ in pairs], [v for _, v in pairs]


def _label(name: str, value: str | None, tokens: Sequence[str]) -> str:
    text = name if value is None else f"{name}={value}"
    return text + ("@" + "+".join(tokens) if tokens else "")


def parse_chain(text: str, field: str = "chain") -> list[Processor]:
    """`temperature=0.5,top_k=2,top_p=0.9,repetition_penalty=1.3@A,ban@E` → processors in order.

    temperature ≥ 0 (below 1e-5 means greedy), top_k a whole number ≥ 1, top_p in (0, 1],
    min_p in [0, 1], repetition_penalty > 0 with `@TOKEN[+TOKEN…]`, ban with `@TOKEN[+TOKEN…]`.
    Hyphens read as underscores (`top-k=2`). Raises InputError naming `field`.
    """
    if not text.strip():
        return []
    chain: list[Processor] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise InputError(field, f"empty processor in {text!r}")
        head, at, targets = item.partition("@")
        name_text, eq, value_text = head.partition("=")
        name = name_text.strip().lower().replace("-", "_")
        if name not in PROCESSORS:
            raise InputError(
                field, f"unknown processor {name_text.strip()!r}; known: {', '.join(PROCESSORS)}"
            )
        tokens: list[str] = []
        if at:
            tokens = [_token_name(t, field, item) for t in targets.split("+")]
            if len(set(tokens)) != len(tokens):
                raise InputError(field, f"{item}: a token is named twice")
        takes_tokens = name in ("repetition_penalty", "ban")
        if takes_tokens and not tokens:
            example = "ban@A" if name == "ban" else f"{name}=1.3@A"
            raise InputError(field, f"{item}: name the tokens it applies to, e.g. {example}")
        if not takes_tokens and at:
            raise InputError(field, f"{item}: {name} applies to every token; drop the @")
        if name == "ban":
            if eq:
                raise InputError(field, f"{item}: ban takes no value; write ban@TOKEN")
            chain.append(Processor(name="ban", tokens=tokens, label=_label(name, None, tokens)))
            continue
        if not eq:
            raise InputError(field, f"{item}: expected {name}=VALUE")
        value_text = value_text.strip()
        value: int | float
        if name == "top_k":
            try:
                value = int(value_text)
            except ValueError as exc:
                raise InputError(
                    field, f"top_k must be a whole number ≥ 1, got {value_text!r}"
                ) from exc
            if value < 1:
                raise InputError(field, f"top_k must be a whole number ≥ 1, got {value_text!r}")
        else:
            value = _number(value_text, field, name)
            if name == "temperature" and value < 0:
                raise InputError(field, f"temperature must be ≥ 0 (0: greedy), got {value_text!r}")
            if name == "top_p" and not 0 < value <= 1:
                raise InputError(field, f"top_p must be in (0, 1], got {value_text!r}")
            if name == "min_p" and not 0 <= value <= 1:
                raise InputError(field, f"min_p must be in [0, 1], got {value_text!r}")
            if name == "repetition_penalty" and value <= 0:
                raise InputError(field, f"repetition_penalty must be > 0, got {value_text!r}")
        chain.append(
            Processor(name=name, value=value, tokens=tokens, label=_label(name, value_text, tokens))
        )
    return chain


# --- the processors -----------------------------------------------------------------------

Logits = list[float]  # -inf marks a token out of the candidate set


def _live(logits: Logits) -> list[int]:
    return [i for i, v in enumerate(logits) if v != -math.inf]


def _ranked(logits: Logits) -> list[int]:
    """Surviving indices, highest logit first; ties keep the input order."""
    return sorted(_live(logits), key=lambda i: -logits[i])


def softmax(logits: Logits) -> list[float]:
    """Probabilities over the surviving tokens (0 for removed ones); they sum to 1."""
    live = _live(logits)
    top = max(logits[i] for i in live)
    weights = [math.exp(v - top) if v != -math.inf else 0.0 for v in logits]
    total = math.fsum(weights)
    return [w / total for w in weights]


def _temperature(logits: Logits, t: float) -> Logits:
    """Divide the logits by t: t < 1 sharpens, t > 1 flattens, the order never changes.

    Below 1e-5 it is greedy, as in vLLM: only the highest logit stays (the first one on a tie).
    """
    if t < GREEDY_BELOW:
        best = _ranked(logits)[0]
        return [v if i == best else -math.inf for i, v in enumerate(logits)]
    return [v / t if v != -math.inf else v for v in logits]


def _top_k(logits: Logits, k: int) -> Logits:
    """Keep the k highest logits.

    Exactly min(k, survivors) stay: a tie at the k-th place goes to the token given first.
    transformers and vLLM keep every token tied with the k-th value instead, which differs
    only when logits are exactly equal.
    """
    keep = set(_ranked(logits)[:k])
    return [v if i in keep else -math.inf for i, v in enumerate(logits)]


def _top_p(logits: Logits, p: float, boundary: Boundary) -> tuple[Logits, int | None, float]:
    """Keep the most probable tokens up to cumulative mass p.

    Inclusive (transformers' TopPLogitsWarper: drop the ascending tail whose mass is ≤ 1 − p)
    keeps the smallest set whose mass reaches p, so the token that crosses p stays. Exclusive
    keeps only tokens whose running total stays within p, so the crossing token goes. When a
    prefix reaches p exactly there is no crossing token and both agree. The most probable
    token always stays, so the set is never empty. Returns the new logits, the crossing token
    (or None) and the running total through it.
    """
    if p >= 1.0:
        return list(logits), None, 1.0
    probs = softmax(logits)
    keep: set[int] = set()
    before = 0.0
    for rank, i in enumerate(_ranked(logits)):
        if keep and before >= p - REACH_TOLERANCE:  # a p within the tolerance keeps the top
            break
        after = before + probs[i]
        if after > p + REACH_TOLERANCE:
            if boundary is Boundary.INCLUSIVE or rank == 0:
                keep.add(i)
            kept = [v if j in keep else -math.inf for j, v in enumerate(logits)]
            return kept, i, after
        keep.add(i)
        before = after
    return [v if j in keep else -math.inf for j, v in enumerate(logits)], None, before


def _min_p(logits: Logits, min_p: float) -> Logits:
    """Drop tokens whose probability is below min_p × the top probability (transformers'
    MinPLogitsWarper); the top token always stays."""
    probs = softmax(logits)
    floor = min_p * max(probs)
    return [v if probs[i] >= floor else -math.inf for i, v in enumerate(logits)]


def _repetition_penalty(logits: Logits, x: float, targets: set[int]) -> Logits:
    """Penalise the named tokens by x on their raw logits: positive logits are divided by x,
    negative ones multiplied by x (zero stays), so x > 1 always lowers them.

    This is the rule of transformers' RepetitionPenaltyLogitsProcessor
    (`torch.where(score < 0, score * penalty, score / penalty)`,
    src/transformers/generation/logits_process.py) and of vLLM's
    `apply_repetition_penalties_torch` (vllm/_custom_ops.py: divide where logits > 0, else
    multiply). It is not shift-invariant: the same factor moves a token differently
    depending on where its raw logit sits relative to zero. From `--probs` every logit is
    log p ≤ 0, so the penalty multiplies.
    """
    out = list(logits)
    for i in targets:
        v = out[i]
        if v == -math.inf:
            continue
        out[i] = v / x if v > 0 else v * x
    return out


def _ban(logits: Logits, targets: set[int]) -> Logits:
    return [-math.inf if i in targets else v for i, v in enumerate(logits)]


# --- the chain ----------------------------------------------------------------------------


def _distribution(tokens: Sequence[str], logits: Logits) -> Distribution:
    probs = softmax(logits)
    return Distribution(
        logits={t: (None if v == -math.inf else v) for t, v in zip(tokens, logits, strict=True)},
        probs=dict(zip(tokens, probs, strict=True)),
    )


def _indices(tokens: Sequence[str], processor: Processor) -> set[int]:
    index = {t: i for i, t in enumerate(tokens)}
    unknown = [t for t in processor.tokens if t not in index]
    if unknown:
        raise InputError(
            "chain",
            f"{processor.label}: unknown token {unknown[0]!r}; the tokens are "
            + ", ".join(tokens),
        )
    return {index[t] for t in processor.tokens}


def _crossing_note(
    p: float, token: str | None, cumulative: float, boundary: Boundary, kept: bool
) -> str:
    if token is None:
        return f"a prefix reaches {p:g} exactly; no token crosses it, both rules agree"
    if kept and boundary is Boundary.EXCLUSIVE:
        verdict = "kept: the most probable token always stays"
    else:
        verdict = "kept" if kept else "dropped"
    return f"{token} crosses {p:g} (cumulative {cumulative:.4f}): {verdict} ({boundary.value})"


def run_chain(request: SampleRequest) -> SampleResult:
    """Apply the chain in order and record the distribution after every processor.

    Every stage's probabilities sum to 1 and a removed token stays removed. The candidate
    set is never empty: top-k, top-p and min-p always keep the most probable token, and a ban
    that would remove every remaining token is refused. Raises InputError (field "chain")
    for a token the chain names that is not among the inputs, for such a ban, and when a
    processor drives a logit out of the finite range.
    """
    tokens = list(request.tokens)
    if not tokens:
        raise InputError("probs", "no tokens given")
    if len(set(tokens)) != len(tokens):
        raise InputError("probs", "token names must be unique")
    if len(request.logits) != len(tokens):
        raise InputError("logits", "one logit per token")
    if not all(math.isfinite(v) for v in request.logits):
        raise InputError("logits", "logits must be finite")
    logits: Logits = list(request.logits)
    start = _distribution(tokens, logits)
    stages: list[Stage] = []
    for processor in request.chain:
        before = set(_live(logits))
        crossing: int | None = None
        note: str | None = None
        if processor.name == "temperature":
            logits = _temperature(logits, float(processor.value or 0.0))
        elif processor.name == "top_k":
            logits = _top_k(logits, int(processor.value or 1))
        elif processor.name == "top_p":
            p = float(processor.value or 1.0)
            boundary = request.top_p_boundary
            processor = processor.model_copy(update={"boundary": boundary})
            logits, crossing, mass = _top_p(logits, p, boundary)
            if p < 1.0:
                name = None if crossing is None else tokens[crossing]
                kept = crossing is not None and logits[crossing] != -math.inf
                note = _crossing_note(p, name, mass, boundary, kept)
        elif processor.name == "min_p":
            logits = _min_p(logits, float(processor.value or 0.0))
        elif processor.name == "repetition_penalty":
            logits = _repetition_penalty(
                logits, float(processor.value or 1.0), _indices(tokens, processor)
            )
        else:
            targets = _indices(tokens, processor)
            if before <= targets:
                raise InputError(
                    "chain",
                    f"{processor.label} removes every remaining candidate; an engine would "
                    "have nothing to sample",
                )
            logits = _ban(logits, targets)
        live = _live(logits)
        # Every candidate at -inf is an overflow too (-1e308 / 1e-4): a chain never
        # removes the last candidate on purpose.
        if not live or not all(math.isfinite(logits[i]) for i in live):
            raise InputError("chain", f"{processor.label}: the logits overflow; use smaller values")
        after = set(live)
        dist = _distribution(tokens, logits)
        stages.append(
            Stage(
                processor=processor,
                logits=dist.logits,
                probs=dist.probs,
                removed=[t for i, t in enumerate(tokens) if i not in after],
                dropped=[t for i, t in enumerate(tokens) if i in before and i not in after],
                crossing=None if crossing is None else tokens[crossing],
                note=note,
            )
        )
    return SampleResult(
        tokens=tokens,
        top_p_boundary=request.top_p_boundary,
        input=start,
        stages=stages,
        candidates=[tokens[i] for i in _ranked(logits)],
    )


def sample(
    chain: Iterable[Processor],
    *,
    probs: Sequence[tuple[str, float]] | None = None,
    logits: Sequence[tuple[str, float]] | None = None,
    top_p_boundary: Boundary = Boundary.INCLUSIVE,
) -> SampleResult:
    """Run the chain on `probs` (token, probability) or `logits` (token, logit), not both.

    Probabilities are validated by `logits_from_probs`; a sum off 1 comes back in `warnings`.
    """
    warnings: list[str] = []
    if probs is not None and logits is not None:
        raise InputError("logits", "give --probs or --logits, not both")
    if probs is not None:
        tokens, values, warnings = logits_from_probs(probs)
    elif logits is not None:
        tokens, values = logits_from_pairs(logits)
    else:
        raise InputError("probs", "give --probs or --logits")
    request = SampleRequest(
        tokens=tokens, logits=values, chain=list(chain), top_p_boundary=top_p_boundary
    )
    return run_chain(request).model_copy(update={"warnings": warnings})


# --- persistent sampler state -------------------------------------------------------------


def sampler_state() -> list[SamplerStateItem]:
    """The per-request state a server keeps for sampling, which must survive from one decode
    step to the next (and across preemption or migration) for the output to be the same."""
    return [
        SamplerStateItem(
            name="generator seed and stream position",
            description=(
                "The request's random generator: its seed and how far along its stream it is. "
                "Restarting it, or sharing one generator across a batch, changes every later "
                "draw."
            ),
            needed_when="random sampling with a per-request seed",
        ),
        SamplerStateItem(
            name="penalty history (output token counts)",
            description=(
                "Which tokens the request has produced and how often, plus a mask of the "
                "prompt's tokens: repetition penalties read the set, frequency penalties the "
                "counts, presence penalties whether a token appeared."
            ),
            needed_when="repetition, frequency or presence penalties are set",
        ),
        SamplerStateItem(
            name="grammar / finite-state machine state",
            description=(
                "Where structured generation stands in its grammar or JSON schema: the parser "
                "or FSM state that decides which tokens are allowed next, advanced on every "
                "emitted token and rolled back when speculative tokens are rejected."
            ),
            needed_when="structured output (JSON schema, regex, grammar) is requested",
        ),
        SamplerStateItem(
            name="stop-string buffer",
            description=(
                "Detokenised text held back until it can no longer begin a stop string: up to "
                "the longest stop string's length minus one character."
            ),
            needed_when="stop strings are set",
        ),
        SamplerStateItem(
            name="length counters",
            description=(
                "Tokens generated so far, against max_tokens and min_tokens (end-of-sequence "
                "and stop tokens are masked until min_tokens is reached)."
            ),
            needed_when="always (max_tokens); min_tokens when set",
        ),
        SamplerStateItem(
            name="bad-words prefix matches",
            description=(
                "The tail of the output compared against multi-token banned sequences: the last "
                "token of a banned sequence is masked only when the tokens before it were just "
                "emitted."
            ),
            needed_when="banned word sequences longer than one token are set",
        ),
    ]
