"""Tables for the device catalog: one row per device, or one device with every source."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from llm_inventory.render.fit import Table
from llm_inventory.spec.devices import Device, MemoryBasis
from llm_inventory.units import UnitSystem

_NOT_RUNTIME = "*"


def memory(n: int, units: UnitSystem) -> str:
    """Device memory to two decimals, as runtimes print it: `79.19 GiB` (or `85.03 GB`)."""
    return f"{n / 2**30:,.2f} GiB" if units == "iec" else f"{n / 10**9:,.2f} GB"


def rate(n: int | None) -> str:
    """Bytes per second in SI units, three significant figures: `3.35 TB/s`, `450 GB/s`."""
    if n is None:
        return "—"
    for scale, unit in ((10**12, "TB/s"), (10**9, "GB/s"), (10**6, "MB/s")):
        if n >= scale:
            return f"{_three(n / scale)} {unit}"
    return f"{n:,} B/s"


def tflops(n: int | None) -> str:
    """FLOP/s as TFLOP/s with the datasheet's precision: `989.4`, `2,250`, `362.05`."""
    if n is None:
        return "—"
    return f"{n / 10**12:,.2f}".rstrip("0").rstrip(".")


def _three(value: float) -> str:
    text = f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _memory_cell(device: Device, units: UnitSystem) -> str:
    mark = "" if device.memory_basis in (MemoryBasis.RUNTIME, MemoryBasis.USER) else _NOT_RUNTIME
    return memory(device.memory_bytes, units) + mark


def devices_table(
    devices: Sequence[Device], units: UnitSystem, *, from_file: Sequence[str] = (), file: str = ""
) -> list[Table | Text]:
    """The catalog as one table; memory as the runtime reports it, marketing beside it."""
    title = f"Devices · {len(devices)}"
    if from_file:
        title += f" · {len(from_file)} from {file}"
    # Too narrow for every column: the node and link figures go first (`inventory devices ID`
    # has them all).
    table = Table(show_header=True, optional=("inter-\nnode", "intra-\nnode", "per\nnode",
                                              "FP8\nTFLOP/s"))
    table.add_column("id", no_wrap=True)
    table.add_column("name", overflow="fold")
    table.add_column("memory", justify="right", no_wrap=True)
    table.add_column("marketed", justify="right", no_wrap=True)
    table.add_column("bandwidth", justify="right", no_wrap=True)
    table.add_column("BF16\nTFLOP/s", justify="right", no_wrap=True)
    table.add_column("FP8\nTFLOP/s", justify="right", no_wrap=True)
    table.add_column("per\nnode", justify="right", no_wrap=True)
    table.add_column("intra-\nnode", justify="right", no_wrap=True)
    table.add_column("inter-\nnode", justify="right", no_wrap=True)
    for d in devices:
        table.add_row(
            d.id,
            d.name,
            _memory_cell(d, units),
            d.memory_marketing or "—",
            rate(d.memory_bandwidth_bytes_per_s),
            tflops(d.bf16_flops),
            tflops(d.fp8_flops),
            "—" if d.devices_per_node is None else str(d.devices_per_node),
            rate(d.intra_node_bandwidth_bytes_per_s),
            rate(d.inter_node_bandwidth_bytes_per_s),
        )
    notes = [
        "memory: the total the runtime reports (torch.cuda.mem_get_info, vLLM's total); "
        f"{_NOT_RUNTIME} not a runtime figure (driver total, marketing or estimate); on "
        "unified-memory devices, the GPU working-set cap. "
        "FLOP/s are dense peaks; link bandwidths per device, per direction.",
        "Sources of every figure: inventory devices ID",
    ]
    if from_file:
        notes.append(f"from {file}: {', '.join(from_file)}")
    return [Text(title, style="bold"), table, *(Text(n, style="dim") for n in notes)]


def device_detail(device: Device, units: UnitSystem) -> list[Table | Text]:
    """One device, each figure with its exact value and the source it was read from."""
    title = f"{device.name} · {device.id}"
    if device.vendor:
        title += f" · {device.vendor}"
    parts: list[Table | Text] = [Text(title, style="bold")]
    if device.aliases:
        parts.append(Text(f"aliases: {', '.join(device.aliases)}", style="dim"))
    table = Table(show_header=True)
    table.add_column("figure", overflow="fold")  # labels wrap; 81 columns on one line
    table.add_column("value", overflow="fold")
    table.add_column("source", overflow="fold")

    def row(label: str, field: str, value: str) -> None:
        table.add_row(label, value, device.sources.get(field, "—"))

    row(
        f"memory ({device.memory_basis.value})",
        "memory_bytes",
        f"{memory(device.memory_bytes, units)} ({device.memory_bytes:,} B)",
    )
    marketed = device.memory_marketing or "—"
    if device.memory_marketing_bytes is not None:
        marketed += f" ({device.memory_marketing_bytes:,} B)"
    row("memory (marketed)", "memory_marketing_bytes", marketed)
    if device.unified_memory_bytes is not None:
        row("unified memory (shared with the CPU)", "unified_memory_bytes",
            f"{memory(device.unified_memory_bytes, units)} "
            f"({device.unified_memory_bytes:,} B)")
    bandwidth = device.memory_bandwidth_bytes_per_s
    row(
        "memory bandwidth",
        "memory_bandwidth_bytes_per_s",
        rate(bandwidth) + ("" if bandwidth is None else f" ({bandwidth:,} B/s)"),
    )
    row("BF16 dense", "bf16_flops", _flops(device.bf16_flops))
    # A sourced null is a known absence (no FP8 unit); an unsourced one is simply unknown.
    fp8_source = device.sources.get("fp8_flops", "not published")
    no_fp8 = "—" if fp8_source.startswith("not published") else "none"
    row("FP8 dense", "fp8_flops", _flops(device.fp8_flops, missing=no_fp8))
    if device.fp4_flops is not None:
        row("FP4 dense", "fp4_flops", _flops(device.fp4_flops))
    row("compute capability", "compute_capability",
        "—" if device.compute_capability is None else str(device.compute_capability))
    row("board power (TDP)", "tdp_watts",
        "—" if device.tdp_watts is None else f"{device.tdp_watts:,} W")
    per_node = "—" if device.devices_per_node is None else str(device.devices_per_node)
    if device.node:
        per_node += f" ({device.node})"
    row("devices per node", "devices_per_node", per_node)
    row(
        "intra-node link",
        "intra_node_bandwidth_bytes_per_s",
        _link(device.intra_node_link, device.intra_node_bandwidth_bytes_per_s),
    )
    row(
        "inter-node link",
        "inter_node_bandwidth_bytes_per_s",
        _link(device.inter_node_link, device.inter_node_bandwidth_bytes_per_s),
    )
    if device.engines:
        row("engines that run on it", "engines", ", ".join(device.engines))
    parts.append(table)
    return parts


def _flops(n: int | None, missing: str = "—") -> str:
    return missing if n is None else f"{tflops(n)} TFLOP/s ({n:,} FLOP/s)"


def _link(name: str | None, n: int | None) -> str:
    value = "—" if n is None else f"{rate(n)} per direction"
    return f"{name}: {value}" if name else value
