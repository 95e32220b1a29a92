"""The layer-kind registry: every consumer asks the kind, so a new kind is one module.

A toy kind registered here (and only here) flows through tensors, parameters, state sizing,
paging, placement and the renderers, with no code outside `engine/kinds/` learning its name;
and no module outside `engine/kinds/` branches on a kind's name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.base import Kind, StateLayer
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.model import Component, Family, ModelSpec, Shard, Stack
from llm_inventory.units import bytes_for

PACKAGE = Path(kinds.__file__).resolve().parents[2]  # llm_inventory/


class Toy(Kind):
    """A mixer of one Linear(hidden, hidden) that keeps 1,000 elements per sequence."""

    name = "toy"
    module = "toy_mixer"
    grows = False
    release = "a toy's state: freed with the sequence"

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        hidden = stack.hidden_size or 0
        yield from linear(f"{prefix}.mix", hidden, hidden, Component.MIXER, Shard.COLUMN, False)

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        return StateLayer(kind=self.name, first=index, state_elements=1000)

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        return bytes_for(-(-layer.state_elements // tp), dtype)


@pytest.fixture
def toy() -> Iterator[Kind]:
    kind = kinds.register(Toy())
    try:
        yield kind
    finally:
        kinds.unregister(kind)


def _model() -> ModelSpec:
    return ModelSpec(name="toy-4", family=Family.DENSE, decoder=Stack(
        layers=4, hidden_size=64, heads=4, kv_heads=2, intermediate_size=128, vocab_size=100,
        layer_types=["full", "toy"]))


def test_a_toy_kind_flows_through_every_consumer(toy: Kind) -> None:
    spec = _model()
    # Tensors: two full-attention layers (q, k, v, o) and two toy mixers (64 × 64).
    params = count_parameters(spec)
    attention = 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64)
    mixer = next(c for c in params.by_component if c.component is Component.MIXER)
    assert mixer.parameters == 2 * 64 * 64
    assert next(c for c in params.by_component
                if c.component is Component.ATTENTION).parameters == attention
    # State: the toy keeps its fixed 1,000 elements per sequence in two layers.
    layers = state_layers(spec)
    assert [run.kind for run in layers] == ["full", "toy", "full", "toy"]
    state = size_state(StateRequest(layers=layers, tokens=100))
    toy_row = next(r for r in state.kinds if r.kind == "toy")
    assert toy_row.bytes_per_sequence == 2 * 2000
    assert toy_row.release == Toy.release
    assert state.fixed_bytes_per_sequence == 4000
    # Placement pages the full layers and charges the toy state to every request.
    result = plan_placement(spec, PlacementRequest(device=resolve_device("l4"), count=1))
    assert result.plans and result.plans[0].fits


def test_an_unknown_kind_is_one_clear_error() -> None:
    from llm_inventory.errors import InputError

    with pytest.raises(InputError, match="unknown layer kind 'slidng'"):
        state_layers(_model().model_copy(update={"decoder": Stack(
            layers=2, hidden_size=64, heads=4, intermediate_size=128, vocab_size=100,
            layer_types=["slidng"])}))


def test_every_built_in_kind_has_its_rules() -> None:
    for name in kinds.BUILT_IN:
        kind = kinds.get(name)
        assert kind.release, name
        assert kind.label(None)


# Names of kinds, as string literals a consumer might compare against.
_KIND_NAMES = {"full", "sliding", "chunked", "mla", "cross", "shared", "mamba", "recurrent"}
_KIND_ENUMS = re.compile(r"\b(LayerKind|StateKind)\.[A-Z]+")


def _offences(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                text = ast.unparse(side)
                literal = isinstance(side, ast.Constant) and side.value in _KIND_NAMES
                collection = isinstance(side, ast.Tuple | ast.Set | ast.List) and any(
                    isinstance(e, ast.Constant) and e.value in _KIND_NAMES for e in side.elts)
                if literal or collection or _KIND_ENUMS.search(text):
                    yield f"{path.name}:{node.lineno}: {ast.unparse(node)}"


def test_no_consumer_branches_on_a_kind() -> None:
    """Outside `engine/kinds/` nothing compares with a kind's name or enum member."""
    scanned = [p for folder in ("engine", "render", "cli")
               for p in (PACKAGE / folder).rglob("*.py")
               if "kinds" not in p.relative_to(PACKAGE).parts]
    assert len(scanned) > 20
    found = [o for path in scanned for o in _offences(path)]
    assert not found, "\n".join(found)


def test_the_scan_finds_a_branch(tmp_path: Path) -> None:
    planted = tmp_path / "consumer.py"
    planted.write_text("if layer.kind == 'sliding':\n    pass\n"
                       "if kind is StateKind.MLA or k in ('recurrent', 'cross'):\n    pass\n")
    assert len(list(_offences(planted))) == 3
