"""`inventory kv` through Typer's runner: the seed's numbers, flags, errors."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke


def test_seed_table(invoke: Invoke) -> None:
    run = invoke("kv", "--layers", "80", "--tokens", "8000")
    assert run.code == 0, run.stderr
    assert "4,096 B" in run.stdout
    assert "320 KiB" in run.stdout
    assert "2.44 GiB" in run.stdout
    assert run.stderr == ""


def test_seed_json(invoke: Invoke) -> None:
    data = invoke("kv", "--layers", "80", "--tokens", "8000", "--format", "json").json()
    assert data["bytes_per_token_per_layer"] == 4096
    assert data["bytes_per_token"] == 327_680
    assert data["bytes_per_sequence"] == 2_621_440_000
    assert data["total_bytes"] == 2_621_440_000
    assert data["schema_version"] == 1


def test_yaml_matches_json(invoke: Invoke) -> None:
    import yaml

    as_json = invoke("kv", "--format", "json").json()
    as_yaml = yaml.safe_load(invoke("kv", "--format", "yaml").stdout)
    assert as_json == as_yaml


@pytest.mark.parametrize(
    ("args", "per_device"),
    [(["--tp", "4"], 655_360_000), (["--tp", "16"], 327_680_000), (["--tp", "8"], 327_680_000)],
)
def test_tp_per_device(invoke: Invoke, args: list[str], per_device: int) -> None:
    data = invoke("kv", "--layers", "80", "--tokens", "8000", *args, "-f", "json").json()
    assert data["per_device"]["bytes"] == per_device


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_no_model_and_no_shape_says_it_sizes_the_worked_example(invoke: Invoke,
                                                               fmt: str) -> None:
    bare = invoke("kv", "--format", fmt)
    assert bare.code == 0
    assert bare.stderr.startswith("inventory: note: no --model and no shape flags")
    assert "80 layers, 8 KV heads, head dimension 128" in bare.stderr
    assert "note" not in bare.stdout
    assert invoke("kv", "--layers", "80", "--format", fmt).stderr == ""
    assert invoke("kv", "--model", "llama-3.1-8b", "--format", fmt).stderr == ""


def test_tp_four_table_shows_625_mib(invoke: Invoke) -> None:
    assert "625 MiB" in invoke("kv", "--tp", "4").stdout


@pytest.mark.parametrize(
    ("args", "factor"),
    [
        (["--kv-heads", "32"], 4.0),
        (["--kv-dtype", "fp8"], 0.5),
        (["--sequences", "4"], 4.0),
        (["--window", "4096"], 4096 / 8000),
        (["--tokens", "8K"], 8192 / 8000),
        (["--tokens", "8k"], 1.0),
    ],
)
def test_scaling_flags(invoke: Invoke, args: list[str], factor: float) -> None:
    base = invoke("kv", "-f", "json").json()["total_bytes"]
    data = invoke("kv", *args, "-f", "json").json()
    assert data["total_bytes"] == base * factor


def test_window_caps_tokens_held(invoke: Invoke) -> None:
    data = invoke("kv", "--window", "4096", "-f", "json").json()
    assert data["kinds"][0]["tokens_held"] == 4096


def test_tokens_8K_is_8192(invoke: Invoke) -> None:
    assert invoke("kv", "--tokens", "8K", "-f", "json").json()["tokens"] == 8192


def test_max_bytes(invoke: Invoke) -> None:
    ok = invoke("kv", "--max-bytes", "3GiB")
    assert ok.code == 0
    over = invoke("kv", "--max-bytes", "2GiB", "-f", "json")
    assert over.code == 1
    assert over.json()["total_bytes"] == 2_621_440_000  # the result is still printed
    assert "--max-bytes" in over.stderr and over.stderr.count("\n") == 1
    per_device = invoke("kv", "--tp", "4", "--max-bytes", "625MiB")
    assert per_device.code == 0


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--layers", "-1"], "--layers"),
        (["--layers", "0"], "--layers"),
        (["--tokens", "abc"], "--tokens"),
        (["--tokens", "-5"], "--tokens"),
        (["--tokens", "nan"], "--tokens"),
        (["--tokens", "inf"], "--tokens"),
        (["--tokens", "8Q"], "--tokens"),
        (["--kv-dtype", "fp9"], "--kv-dtype"),
        (["--dtype", "fp8"], "--kv-dtype fp8"),
        (["--tp", "3"], "--tp"),
        (["--tp", "0"], "--tp"),
        (["--pp", "81"], "--pp"),
        (["--max-bytes", "lots"], "--max-bytes"),
        (["--max-bytes", "NaN GiB"], "--max-bytes"),
        (["--kv-heads", "x"], "--kv-heads"),
        (["--window", "10", "--latent", "576"], "--latent"),
        (["--format", "xml"], "--format"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_bad_input_is_one_line_exit_2(invoke: Invoke, args: list[str], flag: str) -> None:
    run = invoke("kv", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert flag in run.stderr
    assert "Traceback" not in run.stderr


def test_help_has_an_example(invoke: Invoke) -> None:
    run = invoke("kv", "--help")
    assert run.code == 0
    assert "Example: inventory kv" in run.stdout


def test_version(invoke: Invoke) -> None:
    from llm_inventory import __version__

    run = invoke("--version")
    assert run.code == 0
    assert run.stdout.strip() == f"inventory {__version__}"
