"""Where MoE experts sit and how many a batch touches: plain arithmetic, no models.

The placement search and the timing model call these per plan; they live apart from
`routing.py` (which imports and re-exports them) so that a search does not build the routing
simulator's result models.
"""

from __future__ import annotations

import math

from llm_inventory.errors import InputError


def even_split(items: int, parts: int) -> list[int]:
    """`items` in `parts` contiguous blocks: items // parts each, one more for the first
    items % parts blocks."""
    base, remainder = divmod(items, parts)
    return [base + 1 if i < remainder else base for i in range(parts)]


def expert_rank_counts(experts: int, ep: int) -> list[int]:
    """Experts per EP rank, as vLLM places them.

    vLLM's `determine_expert_map` (vllm/model_executor/layers/fused_moe/layer.py, "linear"
    placement, its default) gives each rank experts // ep contiguous experts and one more to
    each of the first experts % ep ranks; rank r starts at r × (experts // ep) + min(r,
    experts % ep). (Its docstring says the remainder goes to the last rank; the code gives it
    to the first ranks, and the code is followed here.) Raises InputError when ep < 1 or when
    ep exceeds the experts, which would leave a rank with none.
    """
    if ep < 1:
        raise InputError("ep", f"must be at least 1, got {ep}")
    if ep > experts:
        raise InputError(
            "ep", f"ep {ep} exceeds the {experts} experts: every EP rank needs an expert"
        )
    return even_split(experts, ep)


def expected_distinct_experts(experts: int, top_k: int, batch: int) -> float:
    """Expected distinct experts a batch of `batch` tokens touches under uniform routing.

    Each token picks `top_k` distinct experts uniformly, so an expert escapes one token with
    probability 1 − k/E and all B tokens with (1 − k/E)^B:  E × (1 − (1 − k/E)^B), exact for
    independent tokens, and never above min(E, B × k). Raises InputError for experts or top_k
    below 1, a negative batch, or top_k above experts.
    """
    if experts < 1:
        raise InputError("experts", f"must be at least 1, got {experts}")
    if top_k < 1:
        raise InputError("top_k", f"must be at least 1, got {top_k}")
    if top_k > experts:
        raise InputError("top_k", f"top_k {top_k} exceeds the {experts} experts")
    if batch < 0:
        raise InputError("tokens", f"must not be negative, got {batch}")
    bound = float(min(experts, batch * top_k))
    if top_k == experts:
        return bound
    # expm1/log1p keep the small-probability end accurate (k/E tiny, B small).
    value = experts * -math.expm1(batch * math.log1p(-top_k / experts))
    return min(value, bound)
