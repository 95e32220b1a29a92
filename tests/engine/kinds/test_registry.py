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
from llm_inventory.engine.kinds.base import Kind
from llm_inventory.engine.kinds.layer import StateLayer
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


def _kind_vocabulary() -> tuple[set[str], set[str]]:
    """Every registered kind's layer and state names, and its class names (from the
    registry, so a new kind is scanned for the moment it is registered)."""
    built = [kinds.get(name) for name in kinds.BUILT_IN]
    names = {k.name for k in built} | {k.state for k in built} | set(kinds.names())
    classes = {type(k).__name__ for k in built}
    for k in built:  # the kinds' own base classes (Attention, FixedState …), not Kind
        classes |= {c.__name__ for c in type(k).__mro__[1:]
                    if c.__module__.startswith("llm_inventory.engine.kinds.")
                    and not c.__module__.endswith(".base")}
    return names, classes


_NAMES, _CLASSES = _kind_vocabulary()
# Enumerations of kind names: lists kept beside the registry.
_KIND_ENUMS = re.compile(r"\b(LayerKind|StateKind)\.[A-Z_]+")
# Kind names too common as attribute names to read as a kind flag (`moe.shared`).
_NOT_FLAGS = {"full", "shared", "cross"}


def _names_kind(node: ast.AST) -> bool:
    """A literal kind name, a collection holding one, or an enum member of a kind list."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in _NAMES
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(_names_kind(e) for e in node.elts)
    return bool(_KIND_ENUMS.fullmatch(ast.unparse(node)))


def _flag(node: ast.AST) -> bool:
    """An attribute read as a kind switch: `layer.is_sliding`, `spec.mla`."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr.startswith("is_"):
        return node.attr.removeprefix("is_") in _NAMES
    return node.attr in _NAMES - _NOT_FLAGS


def _offences(path: Path) -> Iterator[str]:
    """Places that branch on which kind a layer is: comparisons (==, !=, in, is) with a
    kind's name or enum member, isinstance against a kind class, dicts keyed by kind names,
    `match` cases on them, and attribute flags named after a kind tested in a condition."""
    tree = ast.parse(path.read_text())

    def hit(node: ast.AST, what: str) -> str:
        return f"{path.name}:{getattr(node, 'lineno', 0)}: {what}: {ast.unparse(node)[:80]}"

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                _names_kind(side) for side in [node.left, *node.comparators]):
            yield hit(node, "comparison")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            named = {n.id if isinstance(n, ast.Name) else n.attr
                     for n in ast.walk(node.args[1]) if isinstance(n, ast.Name | ast.Attribute)}
            if named & _CLASSES:
                yield hit(node, "isinstance")
        elif isinstance(node, ast.Dict) and any(
                k is not None and _names_kind(k) for k in node.keys):
            yield hit(node, "dict keyed by kind")
        elif isinstance(node, ast.match_case) and any(
                isinstance(p, ast.MatchValue) and _names_kind(p.value)
                for p in ast.walk(node.pattern)):
            yield hit(node.pattern, "match case")
        elif isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert) and any(
                _flag(n) for n in ast.walk(node.test)):
            yield hit(node.test, "flag")


def _scanned() -> list[Path]:
    """Every consumer: engine, render and cli outside the kinds' own modules, the spec's
    model (where layer kinds are declared and validated), and `kinds/uniform.py`, which
    sizes `inventory kv`'s flag kinds by asking them (it is no kind)."""
    paths = [p for folder in ("engine", "render", "cli")
             for p in (PACKAGE / folder).rglob("*.py")
             if "kinds" not in p.relative_to(PACKAGE).parts]
    return [*paths, PACKAGE / "spec" / "model.py", PACKAGE / "engine" / "kinds" / "uniform.py"]


# Branches on kinds that remain, by file: this list may only shrink, and the test fails until
# it is shrunk when one goes. spec/model.py says which kind a stack without layer_types has
# (MLA with an `mla` block, else full) and that an all-Mamba stack needs no attention heads;
# the placement facts and the engines read the `mla` block's shapes (latent width, absorbed
# matrices) where a stack has one. Each kind's required block is the kind's `requires`.
KNOWN: dict[str, int] = {
    "engine/placement/facts.py": 1,
    "engine/serving/vllm_v0.py": 1,
    # vLLM's MLA backends refuse an nvfp4 cache: a switch on `mla` like the three below
    "engine/serving/vllm_v21.py": 1,
    "engine/serving/llamacpp_engine.py": 2,
    "spec/model.py": 2,
}


def test_no_consumer_branches_on_a_kind() -> None:
    """Outside `engine/kinds/` nothing branches on a kind (beyond the KNOWN remainder)."""
    scanned = _scanned()
    assert len(scanned) > 20
    found: dict[str, list[str]] = {}
    for path in scanned:
        for offence in _offences(path):
            found.setdefault(str(path.relative_to(PACKAGE)), []).append(offence)
    counts = {name: len(hits) for name, hits in found.items()}
    worse = {name: hits for name, hits in found.items() if len(hits) > KNOWN.get(name, 0)}
    assert not worse, "\n".join(h for hits in worse.values() for h in hits)
    assert counts == KNOWN, f"fewer branches remain; shrink KNOWN to {counts}"


PLANTED = {
    "==": "if layer.kind == 'sliding':\n    pass\n",
    "!=": "if layer.kind != 'gdn':\n    pass\n",
    "in": "if k in ('recurrent', 'cross'):\n    pass\n",
    "is enum": "if kind is StateKind.MLA:\n    pass\n",
    "isinstance": "if isinstance(kind, LatentAttention):\n    pass\n",
    "isinstance tuple": "ok = isinstance(kind, (Mamba, GatedDeltaNet))\n",
    "dict keys": "RULE = {'full': 1, 'swa_kv': 2}\n",
    "match": "match name:\n    case 'short_conv':\n        pass\n",
    "flag": "if layer.is_sliding:\n    pass\n",
    "flag attr": "x = 1 if spec.mla else 2\n",
}


@pytest.mark.parametrize("branch", PLANTED)
def test_the_scan_finds_each_kind_of_branch(tmp_path: Path, branch: str) -> None:
    planted = tmp_path / "consumer.py"
    planted.write_text(PLANTED[branch])
    assert len(list(_offences(planted))) == 1, branch


def test_the_scan_knows_every_registered_kind() -> None:
    assert set(kinds.names()) <= _NAMES and len(_NAMES) >= 18
    assert "LatentAttention" in _CLASSES and "Mamba" in _CLASSES


def test_layer_kind_names_every_built_in_kind_and_each_module_is_its_kind() -> None:
    import importlib

    from llm_inventory.spec.names import LayerKind

    assert kinds.BUILT_IN == tuple(kind.value for kind in LayerKind)
    for name in kinds.BUILT_IN:
        module = importlib.import_module(f"llm_inventory.engine.kinds.{name}")
        assert module.KIND.name == name


@pytest.mark.parametrize(("kind", "field"), [
    ("sliding", "sliding_window"), ("chunked", "chunk_size"), ("mla", "mla"),
    ("mamba", "ssm"), ("gdn", "linear_attention"), ("short_conv", "short_conv")])
def test_a_stack_naming_a_kind_needs_the_block_the_kind_requires(kind: str, field: str) -> None:
    from pydantic import ValidationError

    from llm_inventory.spec.model import Stack

    assert kinds.get(kind).requires == field
    with pytest.raises(ValidationError, match=f"{kind} layers but {field} is not set"):
        Stack(layers=2, hidden_size=64, heads=4, intermediate_size=128, vocab_size=10,
              layer_types=["full", kind])
