"""One word per dtype across every command: --dtype for weights (as vLLM spells it),
--kv-dtype for the cache, --activation-dtype for hidden states between ranks."""

from __future__ import annotations

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from llm_inventory.cli.app import app
from tests.conftest import Invoke

MEANING = {
    "--dtype": "weight",
    "--kv-dtype": "KV cache",
    "--activation-dtype": "hidden states",
    "--lora-dtype": "adapter buffer",  # vLLM's own flag, where LoRA is fitted
}


def _visible_dtype_flags() -> dict[str, dict[str, str]]:
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    found: dict[str, dict[str, str]] = {}
    for name, command in group.commands.items():
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for opt in param.opts:
                if opt.endswith("dtype"):
                    found.setdefault(name, {})[opt] = getattr(param, "help", "") or ""
    return found


def test_each_dtype_flag_means_one_thing_everywhere() -> None:
    found = _visible_dtype_flags()
    assert found == {
        "kv": {"--kv-dtype": found["kv"]["--kv-dtype"]},
        "inventory": {"--dtype": found["inventory"]["--dtype"],
                      "--kv-dtype": found["inventory"]["--kv-dtype"]},
        "placement": {"--dtype": found["placement"]["--dtype"],
                      "--kv-dtype": found["placement"]["--kv-dtype"],
                      "--lora-dtype": found["placement"]["--lora-dtype"]},
        "compare": {"--dtype": found["compare"]["--dtype"],
                    "--kv-dtype": found["compare"]["--kv-dtype"]},
        "recommend": {"--dtype": found["recommend"]["--dtype"],
                      "--kv-dtype": found["recommend"]["--kv-dtype"],
                      "--lora-dtype": found["recommend"]["--lora-dtype"]},
        "route": {"--activation-dtype": found["route"]["--activation-dtype"]},
        "engines": {"--kv-dtype": found["engines"]["--kv-dtype"]},
        "sweep": {"--dtype": found["sweep"]["--dtype"],
                  "--kv-dtype": found["sweep"]["--kv-dtype"]},
    }
    for flags in found.values():
        for flag, help_text in flags.items():
            assert MEANING[flag].lower() in help_text.lower(), (flag, help_text)


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (["kv", "--dtype", "fp8"], "--kv-dtype fp8"),
        (["route", "--dtype", "fp8"], "--activation-dtype fp8"),
    ],
)
def test_dtype_where_there_are_no_weights_is_refused_with_the_flag_to_use(
    invoke: Invoke, args: list[str], instead: str
) -> None:
    """Kept as an alias, `kv --dtype` would mean the cache here and the weights elsewhere."""
    run = invoke(*args)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert "weight dtype" in run.stderr and instead in run.stderr


def test_kv_dtype_and_activation_dtype_take_effect(invoke: Invoke) -> None:
    kv = invoke("kv", "--kv-dtype", "fp8", "--format", "json").json()
    assert kv["dtype"] == "fp8" and kv["bytes_per_token_per_layer"] == 2048
    route = invoke("route", "--activation-dtype", "fp32", "--ep", "2", "--format", "json")
    assert route.code == 0, route.stderr
    data = route.json()
    assert data["dtype"] == "fp32"
    assert data["step"]["hidden_state_bytes"] == 4096 * 4  # fp32: 4 bytes an element
