"""Fuzz every option of every command with hostile values (harness invariants)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.main import get_command

from llm_inventory.cli.app import app
from tests.fuzz import values
from tests.fuzz.harness import fuzz, run

GROUP: Any = get_command(app)
COMMANDS = sorted(GROUP.commands)

# A valid start for each command; the fuzzer then adds or overrides options.
BASE: dict[str, list[str]] = {
    "inventory": ["llama-3.1-8b"],
    "placement": ["llama-3.1-8b", "--device", "h100"],
    "compare": ["llama-3.1-8b", "mixtral-8x7b"],
}
# Options whose values are names of things, drawn from real names as well as junk.
NAMED = {
    "model": values.MODELS,
    "models": values.MODELS,
    "device": values.DEVICES,
    "devices_file": values.PATHS,
}
# Device counts within their bounds cost the placement search time linear in the count
# (engine/placement.py enumerates every width up to it); in process the fuzzer stays at
# or below this, or far past the bound, where the value is refused at once.
DEVICE_OPTIONS = {"count", "per_node", "tp", "pp", "ep"}
DEVICE_BUDGET = 4096


def _device_value(text: str) -> bool:
    try:
        number = int(text)
    except ValueError:
        return True
    return number <= DEVICE_BUDGET or number > 2**16


def _options(command: str) -> list[Any]:
    return [p for p in GROUP.commands[command].params
            if p.param_type_name == "option" and "--help" not in p.opts]


def _value(draw: st.DrawFn, param: Any) -> str:
    name = str(param.name)
    choices = getattr(param.type, "choices", None)  # an Enum option is a Choice in Click
    pool: list[st.SearchStrategy[str]] = [values.hostile]
    if choices:
        pool.append(st.sampled_from([str(getattr(c, "value", c)) for c in choices]))
    if name in NAMED:
        pool.append(st.sampled_from(NAMED[name]))
    if name in values.STRUCTURED and draw(st.booleans()):
        return draw(values.STRUCTURED[name])
    pool.append(st.integers(min_value=0, max_value=100).map(str))
    strategy = st.one_of(*pool)
    if name in DEVICE_OPTIONS:
        strategy = strategy.filter(_device_value)
    return draw(strategy)


@st.composite
def invocation(draw: st.DrawFn, command: str) -> list[str]:
    args = [command, *BASE.get(command, [])]
    options = _options(command)
    chosen = draw(st.lists(st.sampled_from(options), min_size=1, max_size=3,
                           unique_by=lambda p: p.name))
    for param in chosen:
        if param.is_flag:
            args.append(draw(st.sampled_from([*param.opts, *param.secondary_opts])))
        else:
            args += [draw(st.sampled_from(param.opts)), _value(draw, param)]
    return args


@pytest.mark.parametrize("command", COMMANDS)
@fuzz(25)
@given(data=st.data())
def test_every_option_takes_hostile_values(command: str, data: st.DataObject) -> None:
    run(data.draw(invocation(command)))


@fuzz(30)
@given(args=st.lists(values.hostile, max_size=4), command=st.sampled_from(["", *COMMANDS]))
def test_hostile_arguments_anywhere(args: list[str], command: str) -> None:
    """Junk words where arguments and commands go (a missing command shows help)."""
    argv = [command, *args] if command else args
    if not argv:
        return  # no arguments at all: help on stderr (tests/cli/test_exit_codes.py)
    run(argv)
