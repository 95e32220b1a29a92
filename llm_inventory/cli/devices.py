"""`inventory devices`: the device catalog, one device in detail, or a user devices file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from llm_inventory.cli import complete
from llm_inventory.cli.common import FormatOption, UnitsOption, units_of
from llm_inventory.render.output import OutputFormat, Units


def devices(
    device: Annotated[
        str | None,
        typer.Argument(
            metavar="DEVICE", autocompletion=complete.devices,
            help="Show one device (id or alias, e.g. h100) with the source of every figure.",
        ),
    ] = None,
    devices_file: Annotated[
        Path | None,
        typer.Option(
            "--devices-file", metavar="FILE",
            help="Add the devices of a YAML file (catalog schema); a file device replaces the "
            "catalog's of the same id and is looked up first.",
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    units: UnitsOption = Units.IEC,
) -> None:
    """List the device catalog: memory, bandwidth, peak FLOP/s and links.

    Memory is the total the serving runtime reports (what torch.cuda.mem_get_info and vLLM
    print: 79.19 GiB for an "80 GB" H100), beside the marketed figure. FLOP/s are dense peaks;
    link bandwidths are per device and per direction. JSON and YAML carry every figure in
    bytes, bytes/s and FLOP/s with its source.

    Example: inventory devices h100
    """
    from llm_inventory.render.output import emit, warn
    from llm_inventory.spec.devices import (
        DeviceList,
        list_devices,
        load_devices_file,
        merge_devices,
        resolve_device,
    )

    extra = load_devices_file(devices_file) if devices_file is not None else []
    system = units_of(units)
    if device is not None:
        one = resolve_device(device, extra)
        result = DeviceList(devices=[one])

        def detail() -> list[Any]:
            from llm_inventory.render.devices import device_detail

            return device_detail(one, system)

        emit(result, fmt, detail)
        return

    catalog_ids = {d.id for d in list_devices()}
    result = DeviceList(devices=merge_devices(extra))
    for d in extra:
        if d.id in catalog_ids:
            warn(f"{devices_file}: device {d.id!r} replaces the catalog's")

    def table() -> list[Any]:
        from llm_inventory.render.devices import devices_table

        return devices_table(
            result.devices, system, from_file=[d.id for d in extra], file=str(devices_file)
        )

    emit(result, fmt, table)
