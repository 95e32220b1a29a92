"""The software platform a device runs an engine through, read from its vendor.

Engines branch on the platform, not on device names: vLLM's `current_platform` is CUDA on
NVIDIA GPUs and ROCm (HIP) on AMD Instinct GPUs (vllm/platforms/__init__.py
`resolve_current_platform_cls_qualname`), and some of its memory accounting differs between
the two (`vllm_v21.py`, `vllm_v26.py`). A device that names no vendor is taken as CUDA, the
platform every vLLM figure in this tool was first calibrated on; another vendor's device
(Intel Gaudi, Google TPU) answers with the vendor's name, a platform no CUDA or ROCm rule
applies to.
"""

from __future__ import annotations

from llm_inventory.spec.devices import Device

#: vendor (as the catalog spells it) → the platform vLLM runs its GPUs through
PLATFORMS = {"nvidia": "cuda", "amd": "rocm"}


def platform(device: Device) -> str:
    """`cuda` or `rocm` for NVIDIA and AMD GPUs (and `cuda` for a device without a
    vendor); another vendor's name for its devices."""
    vendor = (device.vendor or "nvidia").strip().lower()
    return PLATFORMS.get(vendor, vendor)
