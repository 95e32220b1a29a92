"""`inventory sample`: one distribution through the sampling processor chain, stage by stage."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from llm_inventory.cli.common import FormatOption
from llm_inventory.render.output import OutputFormat

# The worked example's five tokens, used when neither --probs nor --logits is given.
SEED_PROBS = "A=0.60,B=0.25,C=0.10,D=0.04,E=0.01"


class TopPBoundary(StrEnum):
    INCLUSIVE = "inclusive"
    EXCLUSIVE = "exclusive"


def sample(
    probs: Annotated[
        str | None,
        typer.Option(
            metavar="TOKEN=P,…",
            help=f"Token probabilities, each in (0, 1] (default {SEED_PROBS}). "
            "A sum off 1 by more than 1e-6 is renormalised with a warning.",
        ),
    ] = None,
    logits: Annotated[
        str | None,
        typer.Option(
            metavar="TOKEN=LOGIT,…",
            help="Raw logits instead of --probs, e.g. A=1.2,B=0.3,C=-0.5.",
        ),
    ] = None,
    chain: Annotated[
        str,
        typer.Option(
            metavar="PROCESSOR,…",
            help="Processors applied in this order: temperature=T (0: greedy), top_k=K, "
            "top_p=P, min_p=P, repetition_penalty=X@TOKEN[+TOKEN…], ban@TOKEN[+TOKEN…].",
        ),
    ] = "",
    top_p_boundary: Annotated[
        TopPBoundary,
        typer.Option(
            case_sensitive=False,
            help="inclusive keeps the token that carries the total across p (the smallest set "
            "reaching p); exclusive drops it.",
        ),
    ] = TopPBoundary.INCLUSIVE,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Show a token distribution after each sampling processor, in the order given.

    The chain works on logits (log of --probs); each stage's probabilities are renormalised
    over the tokens still in play, removed tokens stay removed, and the final candidate set
    is never empty. The order matters: a
    repetition penalty before a top-p cut can let a token in that the same penalty after
    the cut cannot.

    Example: inventory sample --chain top_k=2,top_p=0.9,repetition_penalty=1.3@A
    """
    from llm_inventory.engine.sampling import (
        Boundary,
        parse_chain,
        parse_pairs,
    )
    from llm_inventory.engine.sampling import sample as run
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit, warn

    if probs is not None and logits is not None:
        raise InputError("logits", "give --probs or --logits, not both")
    processors = parse_chain(chain, "chain")
    if logits is not None:
        result = run(processors, logits=parse_pairs(logits, "logits"),
                     top_p_boundary=Boundary(top_p_boundary.value))
    else:
        pairs = parse_pairs(SEED_PROBS if probs is None else probs, "probs")
        result = run(processors, probs=pairs, top_p_boundary=Boundary(top_p_boundary.value))

    def table() -> list[Any]:
        from llm_inventory.render.sampling import sampling_tables

        return sampling_tables(result)

    for message in result.warnings:
        warn(message)
    emit(result, fmt, table)
