"""`inventory devices` through Typer's runner: the catalog, one device, device files, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_inventory.spec.devices import DeviceList, list_devices, resolve_device
from tests.conftest import Invoke


def test_table_lists_every_device(invoke: Invoke) -> None:
    run = invoke("devices")
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    for device in list_devices():
        assert device.id in run.stdout
    # H100 80GB: 79.19 GiB as vLLM reports it, beside the marketed 80 GB (H100 datasheet).
    assert "79.19 GiB" in run.stdout
    assert "80 GB" in run.stdout
    assert "3.35 TB/s" in run.stdout
    assert "989.4" in run.stdout


def test_si_units(invoke: Invoke) -> None:
    run = invoke("devices", "--units", "si")
    assert "85.03 GB" in run.stdout  # 85,029,158,912 B


def test_json_equals_the_python_api(invoke: Invoke) -> None:
    data = invoke("devices", "--format", "json").json()
    assert data == DeviceList(devices=list(list_devices())).model_dump(mode="json")
    assert data["schema_version"] == 1
    assert data["devices"][0]["id"] == "h100-sxm"


def test_yaml_matches_json(invoke: Invoke) -> None:
    as_json = invoke("devices", "-f", "json").json()
    as_yaml = yaml.safe_load(invoke("devices", "-f", "yaml").stdout)
    assert as_json == as_yaml


def test_one_device_in_json(invoke: Invoke) -> None:
    data = invoke("devices", "H100", "-f", "json").json()
    assert data == DeviceList(devices=[resolve_device("h100-sxm")]).model_dump(mode="json")
    [device] = data["devices"]
    assert device["memory_bytes"] == 85_029_158_912
    assert device["memory_marketing_bytes"] == 80 * 10**9
    assert device["fp8_flops"] == 1_978_900_000_000_000
    assert "vLLM" in device["sources"]["memory_bytes"]


def test_one_device_in_detail_shows_sources(invoke: Invoke) -> None:
    run = invoke("devices", "a100")
    assert run.code == 0, run.stderr
    assert "a100-80gb" in run.stdout
    assert "84,987,084,800 B" in run.stdout
    assert "source" in run.stdout
    assert "FP8 dense" in run.stdout and "none" in run.stdout
    assert "A100 datasheet" in run.stdout


def _write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_devices_file_adds_devices(tmp_path: Path, invoke: Invoke) -> None:
    path = _write(tmp_path, "- {id: box, name: Lab box, memory_bytes: 48GiB, bf16_flops: 1e14}\n")
    data = invoke("devices", "--devices-file", str(path), "-f", "json").json()
    assert len(data["devices"]) == len(list_devices()) + 1
    assert data["devices"][-1]["id"] == "box"
    assert data["devices"][-1]["memory_bytes"] == 48 * 2**30
    assert data["devices"][-1]["bf16_flops"] == 10**14
    table = invoke("devices", "--devices-file", str(path))
    assert "Lab box" in table.stdout and "from " in table.stdout
    one = invoke("devices", "BOX", "--devices-file", str(path), "-f", "json").json()
    assert one["devices"][0]["name"] == "Lab box"


def test_devices_file_replaces_a_catalog_device(tmp_path: Path, invoke: Invoke) -> None:
    path = _write(tmp_path, "id: h100-sxm\nname: our H100\nmemory_bytes: 79GiB\n")
    run = invoke("devices", "--devices-file", str(path), "-f", "json")
    assert run.code == 0
    ids = [d["id"] for d in run.json()["devices"]]
    assert ids.count("h100-sxm") == 1 and len(ids) == len(list_devices())
    assert "replaces the catalog" in run.stderr and run.stderr.count("\n") == 1
    one = invoke("devices", "h100-sxm", "--devices-file", str(path), "-f", "json").json()
    assert one["devices"][0]["memory_bytes"] == 79 * 2**30


def test_a_listing_round_trips_through_a_devices_file(tmp_path: Path, invoke: Invoke) -> None:
    dumped = invoke("devices", "-f", "yaml").stdout
    path = _write(tmp_path, dumped)
    again = invoke("devices", "--devices-file", str(path), "-f", "yaml")
    assert again.code == 0
    assert yaml.safe_load(again.stdout) == yaml.safe_load(dumped)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        # The line is where the parser noticed (libyaml: the end of the text).
        ("devices: [ {id: a, name: A, memory_bytes: 1", "malformed YAML at line "),
        ("id: a\nname: A\nmemory_bytes: 1\nspeed: 2\n", "speed"),  # unknown key
        ("devices:\n  - {id: a, name: A, memory_bytes: -80}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, bf16_flops: fast}\n",
         "devices.0.bf16_flops"),  # wrong type
        ("devices:\n  - {id: a, name: A, memory_bytes: [1]}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, devices_per_node: 0}\n",
         "devices.0.devices_per_node"),
        ("42\n", "expected a device mapping"),  # not a mapping or list
        ("", "empty"),
        ("id: a\nname: A\n", "memory_bytes"),  # missing a required figure
        ("a: &a [1, 2]\n" + "".join(f"k{i}: *a\n" for i in range(100)), "aliases"),
    ],
)
def test_malformed_devices_files(tmp_path: Path, invoke: Invoke, text: str, field: str) -> None:
    path = _write(tmp_path, text)
    run = invoke("devices", "--devices-file", str(path))
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("inventory: error: ")
    assert str(path) in run.stderr
    assert field in run.stderr
    assert "Traceback" not in run.stderr


def test_missing_devices_file(tmp_path: Path, invoke: Invoke) -> None:
    path = tmp_path / "absent.yaml"
    run = invoke("devices", "--devices-file", str(path), "-f", "json")
    assert (run.code, run.stdout) == (2, "")
    assert f"{path}: no such file" in run.stderr
    assert run.stderr.count("\n") == 1


def test_unknown_device_lists_known_ids(invoke: Invoke) -> None:
    run = invoke("devices", "h1OO")
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert "unknown device 'h1OO'; known: " in run.stderr
    for device in list_devices():
        assert device.id in run.stderr


def test_bad_format_is_refused(invoke: Invoke) -> None:
    run = invoke("devices", "--format", "xml")
    assert (run.code, run.stdout) == (2, "")
    assert "--format" in run.stderr


def test_help_has_an_example_that_runs(invoke: Invoke) -> None:
    run = invoke("devices", "--help")
    assert run.code == 0
    example = next(line for line in run.stdout.splitlines() if "Example: inventory " in line)
    args = example.split("Example: inventory ", 1)[1].split()
    assert args[0] == "devices"
    assert invoke(*args).code == 0
