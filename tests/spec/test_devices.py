"""The device catalog and device files, through the Python API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from llm_inventory.errors import InputError
from llm_inventory.spec.devices import (
    FIGURE_FIELDS,
    OPTIONAL_FACTS,
    Device,
    DeviceList,
    MemoryBasis,
    custom_device,
    list_devices,
    load_devices_file,
    merge_devices,
    resolve_device,
)

GIB = 2**30

REQUIRED_IDS = [
    "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb",
    "l40s", "l4", "a10g", "rtx-4090", "rtx-5090", "mi300x", "mi325x", "gaudi3", "tpu-v5e",
    "tpu-v5p", "tpu-v6e",
]
CATALOG = list_devices()


def test_catalog_holds_the_required_devices() -> None:
    assert set(REQUIRED_IDS) <= {d.id for d in CATALOG}


@pytest.mark.parametrize("device", CATALOG, ids=lambda d: d.id)
def test_every_id_resolves_to_itself(device: Device) -> None:
    assert resolve_device(device.id) is device
    assert resolve_device(device.id.upper()) is device
    for alias in device.aliases:
        assert resolve_device(alias) is device


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("h100", "h100-sxm"),
        ("H100-80GB", "h100-sxm"),
        ("h100_sxm", "h100-sxm"),
        (" H100 SXM5 ", "h100-sxm"),
        ("a100", "a100-80gb"),
        ("A100-SXM4-40GB", "a100-40gb"),
        ("4090", "rtx-4090"),
        ("GeForce-RTX-5090", "rtx-5090"),
        ("Trillium", "tpu-v6e"),
        ("v5e", "tpu-v5e"),
        ("gb200-nvl72", "gb200"),
        ("Gaudi-3", "gaudi3"),
    ],
)
def test_aliases_resolve(name: str, expected: str) -> None:
    assert resolve_device(name).id == expected


@given(st.sampled_from([n for d in CATALOG for n in d.names()]), st.randoms())
def test_resolution_ignores_case(name: str, rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    mixed = "".join(c.upper() if rnd.random() < 0.5 else c for c in name)
    assert name in resolve_device(mixed).names()


def test_unknown_device_lists_known_ids_closest_first() -> None:
    with pytest.raises(InputError) as info:
        resolve_device("h10")
    assert info.value.field == "device"
    message = info.value.message
    assert message.startswith("unknown device 'h10'; known: h100-sxm")
    for device_id in REQUIRED_IDS:
        assert device_id in message


@pytest.mark.parametrize("device", CATALOG, ids=lambda d: d.id)
def test_every_figure_has_a_source(device: Device) -> None:
    # Including figures that are null: the source then says why (no FP8 unit, no reference
    # design for the network).
    # Facts only some devices state (unified memory, the engines that run) are sourced
    # exactly where they are stated.
    stated = {f for f in OPTIONAL_FACTS if getattr(device, f)}
    assert set(device.sources) == set(FIGURE_FIELDS) | stated
    assert all(len(text) > 10 for text in device.sources.values())


@pytest.mark.parametrize("device", CATALOG, ids=lambda d: d.id)
def test_marketed_bytes_are_the_label_as_written(device: Device) -> None:
    """"80 GB" is 80 × 10^9 bytes, and the label matches the source it was read from."""
    assert device.memory_marketing is not None and device.memory_marketing_bytes is not None
    number, unit = device.memory_marketing.split()
    assert unit == "GB"
    assert device.memory_marketing_bytes == int(number) * 10**9
    source = device.sources["memory_marketing_bytes"].replace(" ", "")
    assert f"{number}GB" in source, source


@pytest.mark.parametrize("device", CATALOG, ids=lambda d: d.id)
def test_memory_is_within_the_binary_size_of_the_label(device: Device) -> None:
    """The parts are built in GiB: the runtime's total sits just below N GiB, never more
    than a tenth under it (L4: 22.03 of 24)."""
    assert device.memory_marketing is not None
    built = int(device.memory_marketing.split()[0]) * GIB
    if device.unified_memory_bytes is not None:
        # Unified memory: the label is the RAM the CPU shares; the GPU gets a working set of
        # it (Metal: two thirds to three quarters and more; GB10: 121.69 of 128 GiB).
        assert device.unified_memory_bytes == built
        assert 0.6 * built <= device.memory_bytes < built
        return
    assert 0.9 * built <= device.memory_bytes <= built
    if device.memory_basis is MemoryBasis.MARKETING:
        assert device.memory_bytes == built


def test_marketed_gb_is_decimal() -> None:
    # "80 GB" is 80 × 10^9 bytes; the part holds 80 GiB, of which the runtime reports 79.19.
    h100 = resolve_device("h100-sxm")
    assert h100.memory_marketing == "80 GB"
    assert h100.memory_marketing_bytes == 80 * 10**9
    assert h100.memory_bytes > h100.memory_marketing_bytes


def test_h100_runtime_memory_matches_the_engine_logs() -> None:
    # vLLM 0.19.0 start-up logs of the llm-d planner accuracy sweep (30 runs on H100 80GB
    # HBM3) print total_gpu_memory 79.19 GiB; cudaMemGetInfo's total is 85,029,158,912 B.
    h100 = resolve_device("h100")
    assert abs(h100.memory_bytes / GIB - 79.19) < 0.01
    assert h100.memory_bytes == 85_029_158_912
    assert h100.memory_basis is MemoryBasis.RUNTIME


def test_mi300x_runtime_memory_is_rocminfos_pool() -> None:
    # rocminfo: GPU pool "Size: 201310208(0xbffc000) KB"; HIP OOM: "total capacity of 191.98 GiB".
    mi300x = resolve_device("mi300x")
    assert mi300x.memory_bytes == 201_310_208 * 1024
    assert f"{mi300x.memory_bytes / GIB:.2f}" == "191.98"


@pytest.mark.parametrize(
    ("device_id", "gib"),
    [
        # Two-decimal runtime totals from PyTorch/vLLM/OpenCL reports, as cited in the catalog.
        ("b200", "178.35"),
        ("h200", "139.80"),
        ("a100-80gb", "79.15"),
        ("l4", "22.03"),
        ("rtx-4090", "23.64"),
        ("rtx-5090", "31.36"),
        ("mi325x", "255.98"),
    ],
)
def test_runtime_memory_prints_as_reported(device_id: str, gib: str) -> None:
    assert f"{resolve_device(device_id).memory_bytes / GIB:.2f}" == gib


@pytest.mark.parametrize("device", CATALOG, ids=lambda d: d.id)
def test_rates_are_positive_and_consistent(device: Device) -> None:
    assert device.memory_bandwidth_bytes_per_s is not None
    assert device.memory_bandwidth_bytes_per_s > 0
    if device.bf16_flops is None:
        # Apple and GB10: the vendor publishes no BF16 rate, and the source says so.
        assert device.sources["bf16_flops"].startswith(("Apple publishes no", "not published"))
    else:
        assert device.bf16_flops > 0
    if device.fp8_flops is not None and device.bf16_flops is not None:
        assert device.fp8_flops >= device.bf16_flops
    assert device.devices_per_node is not None and device.devices_per_node >= 1
    if device.devices_per_node == 1:  # one GPU per system: no GPU-to-GPU link
        assert device.intra_node_bandwidth_bytes_per_s is None
        return
    assert device.intra_node_bandwidth_bytes_per_s is not None
    if device.inter_node_bandwidth_bytes_per_s is not None:
        assert device.inter_node_bandwidth_bytes_per_s <= device.intra_node_bandwidth_bytes_per_s


def test_devices_without_fp8() -> None:
    # Ampere has no FP8 tensor cores; the TPU documentation lists bf16 and Int8 only.
    no_fp8 = {d.id for d in CATALOG if d.fp8_flops is None}
    # Apple GPUs have no FP8 unit either; GB10's rate is unpublished, not absent.
    assert no_fp8 == {"a100-40gb", "a100-80gb", "a10g", "rtx-a6000", "rtx-3090",
                      "tpu-v5e", "tpu-v5p", "tpu-v6e", "m3-ultra-512gb", "m4-max-128gb",
                      "m4-pro-64gb", "dgx-spark"}


def test_published_peaks() -> None:
    # H100 whitepaper (SXM5 dense BF16 989.4 TFLOPS), HGX B200 (36 PFLOPS BF16 sparse / 8 / 2),
    # MI300X data sheet (1,307.4), Cloud TPU v6e documentation (918).
    assert resolve_device("h100").bf16_flops == 989_400_000_000_000
    assert resolve_device("b200").bf16_flops == 2_250_000_000_000_000
    assert resolve_device("mi300x").bf16_flops == 1_307_400_000_000_000
    assert resolve_device("v6e").bf16_flops == 918_000_000_000_000
    assert resolve_device("h100").memory_bandwidth_bytes_per_s == 3_350_000_000_000
    assert resolve_device("h100").intra_node_bandwidth_bytes_per_s == 450_000_000_000


def test_catalog_is_loaded_lazily() -> None:
    code = (
        "import sys, llm_inventory.spec.devices as d\n"
        "assert 'yaml' not in sys.modules\n"
        "assert d._catalog.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- device files -------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_catalog_dump_round_trips(tmp_path: Path) -> None:
    listing = DeviceList(devices=list(CATALOG[:3]))
    path = _write(tmp_path, yaml.safe_dump(listing.model_dump(mode="json"), sort_keys=False))
    assert load_devices_file(path) == list(CATALOG[:3])


def test_json_files_load(tmp_path: Path) -> None:
    path = _write(tmp_path, DeviceList(devices=[CATALOG[0]]).model_dump_json(), "d.json")
    assert load_devices_file(path) == [CATALOG[0]]


def test_single_device_and_bare_list_with_sizes(tmp_path: Path) -> None:
    one = _write(tmp_path, "id: My-Box\nname: my box\nmemory_bytes: 80GiB\naliases: [Box_1]\n")
    [device] = load_devices_file(one)
    assert (device.id, device.memory_bytes, device.aliases) == ("my-box", 80 * GIB, ("box-1",))
    assert device.bf16_flops is None and device.memory_basis is MemoryBasis.RUNTIME
    many = _write(tmp_path, "- {id: a, name: A, memory_bytes: 141GB}\n- {id: b, name: B, "
                  "memory_bytes: 1000, memory_bandwidth_bytes_per_s: 3.35TB}\n", "many.yaml")
    a, b = load_devices_file(many)
    assert a.memory_bytes == 141 * 10**9
    assert b.memory_bandwidth_bytes_per_s == 3_350_000_000_000


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("devices: [ {id: a, name: A, memory_bytes: 1", "malformed YAML"),
        ("id: a\nname: A\nmemory_bytes: 1\nmemroy: 2\n", "memroy: unknown key"),
        ("devices:\n  - {id: a, name: A, memory_bytes: -5}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: lots}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: true}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: .nan}\n", "devices.0.memory_bytes"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, bf16_flops: [1]}\n",
         "devices.0.bf16_flops"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, bf16_flops: 1.5}\n",
         "devices.0.bf16_flops"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, fp8_flops: 1e400}\n",
         "devices.0.fp8_flops"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, sources: {speed: x}}\n",
         "devices.0.sources"),
        ("devices:\n  - {id: a, name: A, memory_bytes: 1, compute_capability: sm90}\n",
         "devices.0.compute_capability"),
        ("devices:\n  - {id: 'a b!', name: A, memory_bytes: 1}\n", "devices.0.id"),
        ("id: a\nname: A\n", "memory_bytes"),
        ("just a string\n", "expected a device mapping"),
        ("", "empty"),
        ("[]\n", "empty list"),
        ("devices: []\n", "devices"),
        ("schema_version: 2\ndevices: [{id: a, name: A, memory_bytes: 1}]\n", "schema_version"),
        ("- {id: a, name: A, memory_bytes: 1}\n- {id: a, name: B, memory_bytes: 2}\n",
         "duplicate device id 'a'"),
        ("- {id: a, name: A, memory_bytes: 1}\n- {id: b, name: B, memory_bytes: 2, aliases: [a]}\n",
         "already used by 'a'"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_devices_file(path)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_too_many_yaml_aliases_are_refused(tmp_path: Path) -> None:
    lines = ["a: &a [1, 2]", *(f"k{i}: *a" for i in range(100))]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(InputError, match="aliases"):
        load_devices_file(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_devices_file(tmp_path / "absent.yaml")


def test_file_devices_shadow_and_replace(tmp_path: Path) -> None:
    path = _write(tmp_path, "- {id: h100-sxm, name: mine, memory_bytes: 80GiB}\n"
                  "- {id: box, name: Box, memory_bytes: 1GiB, aliases: [a100]}\n")
    extra = load_devices_file(path)
    assert resolve_device("h100-sxm", extra).name == "mine"
    assert resolve_device("a100", extra).id == "box"
    assert resolve_device("a100").id == "a100-80gb"
    merged = merge_devices(extra)
    assert [d.id for d in merged].count("h100-sxm") == 1
    assert merged[-2:] == extra
    assert len(merged) == len(CATALOG) + 1


# --- one-off devices ----------------------------------------------------------------------


def test_custom_device_without_base_knows_only_its_memory() -> None:
    device = custom_device(80 * GIB)
    assert device.memory_bytes == 80 * GIB
    assert device.memory_basis is MemoryBasis.USER
    for field in FIGURE_FIELDS:
        if field != "memory_bytes":
            assert getattr(device, field) is None
    assert "memory_bytes" in device.sources


@given(st.integers(min_value=1, max_value=2**50), st.sampled_from(CATALOG))
def test_custom_device_keeps_the_base_figures(memory: int, base: Device) -> None:
    device = custom_device(memory, base)
    assert device.memory_bytes == memory
    assert device.memory_basis is MemoryBasis.USER
    assert device.memory_marketing_bytes is None
    assert device.bf16_flops == base.bf16_flops
    assert device.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s
    assert device.intra_node_bandwidth_bytes_per_s == base.intra_node_bandwidth_bytes_per_s
    assert device.sources["bf16_flops"] == base.sources["bf16_flops"]
    assert device.id != base.id


@pytest.mark.parametrize("memory", [0, -1, True])
def test_custom_device_refuses_bad_memory(memory: int) -> None:
    with pytest.raises(InputError) as info:
        custom_device(memory)
    assert info.value.field == "device_memory"


def test_board_power_and_fp4() -> None:
    # NVIDIA H100 datasheet (SXM up to 700 W); HGX B200 (FP4 144 PFLOPS sparse / 8 / 2).
    assert resolve_device("h100").tdp_watts == 700
    assert resolve_device("b200").fp4_flops == 9_000_000_000_000_000
    with_fp4 = {d.id for d in CATALOG if d.fp4_flops is not None}
    # Blackwell (Ultra) and CDNA 4 have FP4 units; GB10 publishes its FP4 rate alone.
    assert with_fp4 == {"b200", "gb200", "rtx-pro-6000", "b300", "gb300", "mi355x",
                        "dgx-spark"}
    for device in CATALOG:
        if device.fp4_flops is not None and device.fp8_flops is not None:
            assert device.fp4_flops >= device.fp8_flops


def test_nvidia_devices_name_their_cuda_generation() -> None:
    """The compute capability engines pick kernels by (vLLM's MXFP4 backends): every NVIDIA
    device has one, no other vendor's does."""
    for device in CATALOG:
        assert (device.compute_capability is not None) == (device.vendor == "nvidia"), device.id
    assert [resolve_device(d).compute_capability for d in ("h100", "b200", "a100-80gb",
                                                             "l40s", "rtx-5090")] == \
        ["9.0", "10.0", "8.0", "8.9", "12.0"]
    assert custom_device(80 * 2**30, resolve_device("h200")).compute_capability == "9.0"
    assert Device(id="x", name="X", memory_bytes=1, compute_capability=12).compute_capability \
        == "12.0"
