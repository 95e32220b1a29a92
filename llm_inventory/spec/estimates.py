"""What loading does with a model whose figures are estimated (`ModelSpec.exact` false): it
passes the model to `handler`. The command line sets it, to warn once on stderr or, under
`--strict`, to refuse; library callers read `exact` and `estimated` on the results instead.
A module of its own so that setting the handler imports nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_inventory.spec.model import ModelSpec

handler: Callable[[ModelSpec], None] | None = None


def report(spec: ModelSpec) -> None:
    """Hand an estimated model to the handler, if one is set."""
    if handler is not None:
        handler(spec)
