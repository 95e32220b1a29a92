"""`inventory kv`'s pydantic-free path gives `size_state`'s result exactly, or leaves the
input to it: over the whole flag space, the same JSON byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from llm_inventory.engine.kinds.uniform import flag_kind, uniform_state
from llm_inventory.engine.state import StateRequest, size_state, uniform_layers
from llm_inventory.errors import InputError
from llm_inventory.units import DTYPE_BITS

KINDS = ["full", "sliding", "chunked", "mla"]
small = st.integers(min_value=0, max_value=300)
counts = st.integers(min_value=0, max_value=130)
windows = st.one_of(st.none(), st.integers(min_value=0, max_value=70_000))


def _engine(args: dict[str, Any]) -> dict[str, Any] | None:
    """The engine's JSON form for the same input, or None when it refuses it."""
    try:
        stack = uniform_layers(args["kind"], args["layers"], kv_heads=args["kv_heads"],
                               head_dim=args["k_head_dim"], v_head_dim=args["v_head_dim"],
                               window=args["window"], latent_dim=args["latent_dim"])
        result = size_state(StateRequest(
            layers=stack, tokens=args["tokens"], sequences=args["sequences"],
            dtype=args["dtype"], block_size=args["block_size"], tp=args["tp"], pp=args["pp"]))
    except (InputError, ValidationError):
        return None
    dumped: dict[str, Any] = result.model_dump(mode="json")
    return dumped


@settings(max_examples=600, deadline=None)
@given(
    kind=st.sampled_from(KINDS), layers=counts, kv_heads=st.integers(0, 80),
    k_head_dim=small, v_head_dim=small, window=windows, latent_dim=st.integers(0, 1200),
    tokens=st.integers(0, 3_000_000), sequences=st.integers(0, 70),
    dtype=st.sampled_from(sorted(DTYPE_BITS)),
    block_size=st.one_of(st.none(), st.integers(0, 300)),
    tp=st.integers(0, 130), pp=st.integers(0, 140),
)
@example(kind="full", layers=80, kv_heads=8, k_head_dim=128, v_head_dim=128, window=None,
         latent_dim=0, tokens=8000, sequences=1, dtype="bf16", block_size=None, tp=16, pp=1)
@example(kind="sliding", layers=48, kv_heads=8, k_head_dim=128, v_head_dim=128, window=4096,
         latent_dim=0, tokens=32000, sequences=7, dtype="fp8", block_size=16, tp=1, pp=3)
def test_the_fast_path_is_the_engine(kind: str, layers: int, kv_heads: int, k_head_dim: int,
                                     v_head_dim: int, window: int | None, latent_dim: int,
                                     tokens: int, sequences: int, dtype: str,
                                     block_size: int | None, tp: int, pp: int) -> None:
    args = {"kind": kind, "layers": layers, "kv_heads": kv_heads, "k_head_dim": k_head_dim,
            "v_head_dim": v_head_dim, "window": window, "latent_dim": latent_dim,
            "tokens": tokens, "sequences": sequences, "dtype": dtype,
            "block_size": block_size, "tp": tp, "pp": pp}
    fast = uniform_state(kind, layers, **{k: v for k, v in args.items()
                                           if k not in {"kind", "layers"}})
    engine = _engine(args)
    if engine is None:
        assert fast is None, "the engine refuses this input; the fast path must leave it"
    else:
        assert fast is not None, "the engine accepts this input; the fast path must too"
        assert json.dumps(fast) == json.dumps(engine)


@st.composite
def _accepted(draw: st.DrawFn) -> dict[str, Any]:
    """Inputs the engine accepts: whole KV heads per rank, stages within the layers."""
    kind = draw(st.sampled_from(KINDS))
    layers = draw(st.integers(1, 130))
    kv_heads = draw(st.integers(1, 64))
    divisors = [d for d in range(1, kv_heads + 1) if kv_heads % d == 0]
    tp = draw(st.one_of(st.sampled_from(divisors),
                        st.integers(1, 8).map(lambda m: m * kv_heads)))
    return {
        "kind": kind, "layers": layers, "kv_heads": kv_heads,
        "k_head_dim": draw(st.integers(1, 576)), "v_head_dim": draw(st.integers(0, 576)),
        "window": draw(st.integers(1, 70_000)) if kind in ("sliding", "chunked") else None,
        "latent_dim": draw(st.integers(1, 1200)) if kind == "mla" else 0,
        "tokens": draw(st.one_of(st.integers(0, 300), st.integers(0, 3_000_000))),
        "sequences": draw(st.integers(1, 70)), "dtype": draw(st.sampled_from(sorted(DTYPE_BITS))),
        "block_size": draw(st.one_of(st.none(), st.sampled_from([1, 16, 64, 256]),
                                     st.integers(1, 300))),
        "tp": tp, "pp": draw(st.integers(1, layers)),
    }


@settings(max_examples=400, deadline=None)
@given(_accepted())
def test_inputs_the_engine_accepts_take_the_fast_path(args: dict[str, Any]) -> None:
    fast = uniform_state(args["kind"], args["layers"], **{k: v for k, v in args.items()
                                                           if k not in {"kind", "layers"}})
    assert fast is not None
    assert json.dumps(fast) == json.dumps(_engine(args))


def test_every_kind_the_flags_name_is_covered() -> None:
    for name in KINDS:
        assert flag_kind(name) is not None, name


def test_the_fast_path_loads_no_pydantic() -> None:
    """The kinds' own rules answer without the model description: run in a fresh
    interpreter, sizing every flag kind imports no pydantic."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from llm_inventory.engine.kinds.uniform import uniform_state\n"
            "for kind in ('full', 'sliding', 'chunked', 'mla'):\n"
            "    assert uniform_state(kind, 8, kv_heads=8, k_head_dim=64, v_head_dim=64,\n"
            "        window=16, latent_dim=576, tokens=100, sequences=2, dtype='bf16',\n"
            "        block_size=16, tp=2, pp=2) is not None, kind\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_kind_that_keeps_more_than_the_flags_give_is_left_to_the_engine() -> None:
    for name in ("mamba", "gdn", "cross", "shared", "nonesuch"):
        assert uniform_state(name, 8, kv_heads=8, k_head_dim=64, v_head_dim=64, window=16,
                             latent_dim=576, tokens=100, sequences=2, dtype="bf16",
                             block_size=16, tp=1, pp=1) is None, name


@pytest.mark.parametrize("dtype", ["bfloat16", "float8", "nope"])
def test_a_dtype_not_yet_canonical_is_left_to_the_engine(dtype: str) -> None:
    assert uniform_state("full", 80, kv_heads=8, k_head_dim=128, v_head_dim=128, window=None,
                         latent_dim=0, tokens=8000, sequences=1, dtype=dtype,
                         block_size=None, tp=1, pp=1) is None
