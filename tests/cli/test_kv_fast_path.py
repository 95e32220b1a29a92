"""`inventory kv` from flags prints JSON and YAML without the engine's models: the same
document the engine's `StateResult` dumps, byte for byte."""

from __future__ import annotations

import json

import pytest
import yaml

from llm_inventory.engine.state import StateRequest, size_state, uniform_layers
from tests.conftest import Invoke

CASES = [
    (["--layers", "80", "--tokens", "8000"], ("full", 80, 8, 128, None, None, 0), {}),
    (["--layers", "80", "--tokens", "8000", "--tp", "16"], ("full", 80, 8, 128, None, None, 0),
     {"tp": 16}),
    (["--layers", "61", "--tokens", "128K", "--latent", "576", "--tp", "8", "--pp", "4"],
     ("mla", 61, 8, 128, None, None, 576), {"tokens": 131072, "tp": 8, "pp": 4}),
    (["--layers", "48", "--tokens", "32k", "--window", "4096", "--sequences", "7", "--pp", "3",
      "--block-size", "16", "--kv-dtype", "float8_e4m3fn"],
     ("sliding", 48, 8, 128, None, 4096, 0),
     {"tokens": 32000, "sequences": 7, "pp": 3, "block_size": 16, "dtype": "fp8_e4m3"}),
    (["--layers", "32", "--kv-heads", "4", "--head-dim", "192", "--v-head-dim", "128",
      "--chunk", "8192", "--tokens", "100000"], ("chunked", 32, 4, 192, 128, 8192, 0),
     {"tokens": 100000}),
]


@pytest.mark.parametrize(("flags", "shape", "request_args"), CASES)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_kv_prints_the_engines_document(invoke: Invoke, flags: list[str],
                                        shape: tuple[str, int, int, int, int | None,
                                                     int | None, int],
                                        request_args: dict[str, object], fmt: str) -> None:
    kind, layers, kv_heads, head_dim, v_head_dim, window, latent = shape
    stack = uniform_layers(kind, layers, kv_heads=kv_heads, head_dim=head_dim,
                           v_head_dim=v_head_dim, window=window, latent_dim=latent)
    request = StateRequest(layers=stack, **{"tokens": 8000, "dtype": "bf16", **request_args})
    expected = size_state(request).model_dump(mode="json")
    run = invoke("kv", *flags, "--format", fmt)
    assert run.code == 0, run.stderr
    if fmt == "json":
        assert run.stdout == json.dumps(expected, indent=2) + "\n"
    else:
        assert run.stdout == yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)


def test_a_refused_split_is_the_engines_error(invoke: Invoke) -> None:
    run = invoke("kv", "--layers", "80", "--tp", "3", "--format", "json")
    assert run.code == 2
    assert run.stdout == ""
    assert "tp 3 does not divide the 8 KV heads; use a divisor or a multiple of 8" in run.stderr
