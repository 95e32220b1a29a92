"""Speculative decoding options shared by `placement`, `recommend` and `launch`: the
drafter named on the command line, loaded as every command loads MODEL."""

from typing import TYPE_CHECKING, Annotated

import typer

from llm_inventory.cli import complete

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import Speculative

SpeculativeOption = Annotated[str | None, typer.Option(
    "--speculative", metavar="METHOD", rich_help_panel="Speculative decoding",
    help="Speculative decoding: draft_model, eagle, eagle3, mtp (the checkpoint's own "
         "layers), ngram or suffix (no memory). Its drafter's weights and KV are placed as "
         "the engine places them.")]
DraftModelOption = Annotated[str | None, typer.Option(
    "--draft-model", metavar="MODEL", autocompletion=complete.models,
    rich_help_panel="Speculative decoding",
    help="The draft model or EAGLE head: a preset, Hugging Face id, config.json or GGUF "
         "file (an EAGLE head without one is estimated from the target's last layer).")]
NumSpeculativeTokensOption = Annotated[int | None, typer.Option(
    "--num-speculative-tokens", min=1, rich_help_panel="Speculative decoding",
    help="Tokens drafted per step (default 3); each running request also holds as many "
         "lookahead slots.")]
DraftTpOption = Annotated[int | None, typer.Option(
    "--draft-tp", min=1, rich_help_panel="Speculative decoding",
    help="The draft model's tensor-parallel width (vLLM's draft_tensor_parallel_size: 1 or "
         "the target's; default the target's).")]
AcceptanceOption = Annotated[float | None, typer.Option(
    "--acceptance", min=0.0, max=1.0, metavar="RATE", rich_help_panel="Speculative decoding",
    help="Per-token acceptance rate of the drafts (0–1): the decode time estimate's "
         "tokens per step rest on it, and say so.")]

DEFAULT_TOKENS = 3


def with_draft(asked: "Speculative") -> "Speculative":
    """`asked` with its draft loaded: required for a draft model; an EAGLE head that cannot
    be loaded (its architecture is a head's, or it is not on this machine) is estimated
    from the target's last layer instead, with a warning."""
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import warn
    from llm_inventory.spec.loader import load_model

    if asked.draft is None or asked.method in ("mtp", "ngram", "suffix"):
        return asked
    try:
        return asked.model_copy(update={"draft_spec": load_model(asked.draft)})
    except InputError as exc:
        if asked.method == "draft_model":
            raise InputError("draft_model", exc.message) from None
        warn(f"EAGLE head {asked.draft} not read ({exc.message.split(';')[0][:120]}); "
             "estimated from the target's last layer")
        return asked


def speculative_request(method: str | None, draft: str | None, tokens: int | None,
                        draft_tp: int | None, acceptance: float | None) -> "Speculative | None":
    """The options as a Speculative with its draft loaded (None: off); InputError for an
    option given without --speculative, or an unknown method."""
    from llm_inventory.engine.speculative import Speculative, method_of
    from llm_inventory.errors import InputError

    if method is None:
        given = [name for name, value in (("draft_model", draft), ("num_speculative_tokens",
                 tokens), ("draft_tp", draft_tp), ("acceptance", acceptance))
                 if value is not None]
        if given:
            raise InputError(given[0], "needs --speculative METHOD (draft_model, eagle, "
                             "eagle3, mtp, ngram, suffix)")
        return None
    chosen = method_of(method, "speculative")
    if draft is not None and chosen in ("mtp", "ngram", "suffix"):
        raise InputError("draft_model", f"speculative method {chosen} takes no draft model")
    return with_draft(Speculative(method=chosen, num_speculative_tokens=tokens or
                                  DEFAULT_TOKENS, draft=draft, draft_tp=draft_tp,
                                  acceptance=acceptance))
