"""`inventory route`: MoE routing, one step in full and the spread over many steps."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import (
    FormatOption,
    UnitsOption,
    WeightDtypeRefused,
    bytes_parser,
    refuse_weight_dtype,
    tokens_parser,
    units_of,
)
from llm_inventory.render.output import OutputFormat, Units


def route(
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", metavar="MODEL", autocompletion=complete.models,
                     help="Take experts, top-k, hidden size and expert bytes from a model."),
    ] = None,
    experts: Annotated[
        int | None, typer.Option(min=1, help="Routed experts per MoE layer (default 8).")
    ] = None,
    top_k: Annotated[
        int | None, typer.Option(min=1, help="Experts each token picks (default 2).")
    ] = None,
    tokens: Annotated[
        int | None,
        typer.Option(
            parser=tokens_parser("tokens"), metavar="TOKENS",
            help="Tokens one step routes: the decode batch (default 16; 1k = 1,000).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the routing draws.")] = 0,
    skew: Annotated[
        float,
        typer.Option(
            help="Popularity skew S: expert i weighs 1/(i+1)^S; 0 is uniform (0 to 10)."
        ),
    ] = 0.0,
    steps: Annotated[int, typer.Option(min=1, help="Steps to simulate.")] = 1000,
    ep: Annotated[
        int | None,
        typer.Option(min=1, help="Expert-parallel ranks: per-rank load and all-to-all bytes."),
    ] = None,
    hidden: Annotated[
        int | None, typer.Option(min=1, help="Hidden size: one token's vector (default 4096).")
    ] = None,
    activation_dtype: Annotated[
        str, typer.Option("--activation-dtype", autocompletion=complete.dtypes,
                          help="Dtype of the hidden states sent between ranks.")
    ] = "bf16",
    weight_dtype: WeightDtypeRefused = None,
    expert_bytes: Annotated[
        int | None,
        typer.Option(
            parser=bytes_parser("expert_bytes"), metavar="SIZE",
            help="Weight bytes of one expert in one MoE layer (336MiB): weight reads per step.",
        ),
    ] = None,
    moe_layers: Annotated[
        int | None, typer.Option(min=1, help="MoE layers a decode step passes through (1).")
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """Simulate MoE routing: per-expert loads of one step, the straggler factor, and how
    often steps swing over many steps.

    Each token picks --top-k distinct experts, uniformly or with Zipf-like popularity
    (--skew), seeded. With --ep the experts are placed on ranks as vLLM places them and each
    rank's all-to-all bytes are shown; with --expert-bytes, the expert weight bytes one decode
    step really reads, beside the active and resident figures.

    Example: inventory route --experts 8 --top-k 2 --tokens 16 --ep 4
    """
    from llm_inventory.units import normalize_dtype

    refuse_weight_dtype(weight_dtype, "route", "--activation-dtype",
                        "the hidden states sent between ranks")
    activation_dtype = normalize_dtype(activation_dtype, "activation_dtype")
    if model is not None:
        from llm_inventory.engine.moe_shape import moe_shape
        from llm_inventory.spec.loader import load_model

        shape = moe_shape(load_model(model))
        experts = experts or shape.experts
        top_k = top_k or shape.top_k
        hidden = hidden or shape.hidden
        if expert_bytes is None:
            expert_bytes = shape.expert_bytes
        moe_layers = moe_layers or shape.moe_layers
    import math

    from pydantic import ValidationError

    from llm_inventory.engine.routing import MAX_SKEW, RoutingRequest, simulate_routing
    from llm_inventory.errors import InputError
    from llm_inventory.render.output import emit, warn
    from llm_inventory.spec.errors import from_validation

    if not (math.isfinite(skew) and 0.0 <= skew <= MAX_SKEW):
        raise InputError("skew", f"must be a number from 0 (uniform) to {MAX_SKEW:g}, got {skew}")
    try:
        request = RoutingRequest(
            experts=8 if experts is None else experts,
            top_k=2 if top_k is None else top_k,
            tokens=16 if tokens is None else tokens,
            seed=seed,
            skew=skew,
            steps=steps,
            ep=ep,
            hidden=4096 if hidden is None else hidden,
            dtype=activation_dtype,
            expert_bytes=expert_bytes,
            moe_layers=1 if moe_layers is None else moe_layers,
        )
    except ValidationError as exc:
        raise from_validation(exc, "") from exc
    result = simulate_routing(request)
    if moe_layers not in (None, 1) and expert_bytes is None:
        warn("--moe-layers counts weight reads and needs --expert-bytes; it is ignored")

    def table() -> list[Any]:
        from llm_inventory.render.routing import routing_tables

        return routing_tables(result, units_of(units))

    emit(result, fmt, table)
