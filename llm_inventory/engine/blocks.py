"""Tensor building blocks shared by layer kinds and stack assembly.

An `Entry` is one tensor of one layer: (name, shape, component, shard rule, is a matmul
weight, leading expert count). Names follow the Llama-style layout of Hugging Face
checkpoints (`model.layers.{i}.self_attn.q_proj.weight`), whatever the architecture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from llm_inventory.spec.names import Component, Shard

if TYPE_CHECKING:
    from llm_inventory.spec.model import Stack

Entry = tuple[str, tuple[int, ...], Component, Shard, bool, int]


def norm(name: str, width: int, stack: Stack) -> Iterator[Entry]:
    """A norm's weight (and bias for layer norm), replicated on every rank."""
    yield f"{name}.weight", (width,), Component.NORMS, Shard.REPLICATED, False, 0
    if stack.norm == "layer":
        yield f"{name}.bias", (width,), Component.NORMS, Shard.REPLICATED, False, 0


def linear(
    name: str, out: int, inp: int, component: Component, shard: Shard, bias: bool
) -> Iterator[Entry]:
    """A Linear(inp, out) weight and its bias (a row-parallel bias is replicated)."""
    yield f"{name}.weight", (out, inp), component, shard, True, 0
    if bias:
        bias_shard = Shard.REPLICATED if shard is Shard.ROW else shard
        yield f"{name}.bias", (out,), component, bias_shard, False, 0


def dense_mlp(
    prefix: str, hidden: int, width: int, gated: bool, bias: bool, component: Component
) -> Iterator[Entry]:
    """gate (when gated), up and down projections of a dense MLP of `width`."""
    if gated:
        yield from linear(f"{prefix}.gate_proj", width, hidden, component, Shard.COLUMN, bias)
    yield from linear(f"{prefix}.up_proj", width, hidden, component, Shard.COLUMN, bias)
    yield from linear(f"{prefix}.down_proj", hidden, width, component, Shard.ROW, bias)
