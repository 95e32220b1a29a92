"""Each catalog device's link to host memory and its reference node's host RAM (package data
`data/host_links.json`, every figure with its source). Read once, on first use."""

from __future__ import annotations

import json
from functools import cache
from typing import Any


@cache
def _table() -> dict[str, dict[str, Any]]:
    from importlib.resources import files

    text = files("llm_inventory").joinpath("data", "host_links.json").read_text("utf-8")
    devices: dict[str, dict[str, Any]] = json.loads(text)["devices"]
    return devices


def host_link(device_id: str) -> int | None:
    """Peak bytes per second, per direction, between the device and host memory (None:
    not in the table)."""
    found = _table().get(device_id, {}).get("bytes_per_s")
    return int(found) if found else None


def host_memory(device_id: str) -> int | None:
    """Host RAM of the device's reference node in bytes (None: not stated)."""
    found = _table().get(device_id, {}).get("host_memory_bytes")
    return int(found) if found else None


def link_name(device_id: str) -> str | None:
    found = _table().get(device_id, {}).get("link")
    return str(found) if found else None
