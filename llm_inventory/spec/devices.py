"""Accelerators: the packaged device catalog, user device files, and one-off custom devices.

Every figure is an exact integer in base units: bytes, bytes per second, FLOP per second.
`memory_bytes` is the total the serving runtime reports (CUDA/HIP `cudaMemGetInfo`, as
`torch.cuda.mem_get_info` and vLLM print it) unless `memory_basis` says otherwise; link
bandwidths are per device and per direction; FLOP/s are dense peaks. Each figure may carry its
source in `sources`, keyed by the field name.

The catalog is read from package data on first use and cached; importing this module does no
work.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_core import PydanticCustomError

from llm_inventory.bounds import DEVICE_FLOPS, DEVICES_PER_NODE, SIZE
from llm_inventory.errors import InputError, excerpt

CATALOG_RESOURCE = "devices.yaml"

#: The fields that hold a figure; `sources` may only name these.
FIGURE_FIELDS = (
    "memory_bytes",
    "memory_marketing_bytes",
    "memory_bandwidth_bytes_per_s",
    "bf16_flops",
    "fp8_flops",
    "fp4_flops",
    "tdp_watts",
    "compute_capability",
    "devices_per_node",
    "intra_node_bandwidth_bytes_per_s",
    "inter_node_bandwidth_bytes_per_s",
)

#: Facts only some devices have; `sources` names them where a device states them.
OPTIONAL_FACTS = ("unified_memory_bytes", "engines")

_ID_PATTERN = r"^[a-z0-9][a-z0-9._+-]*$"


class MemoryBasis(StrEnum):
    """Where `memory_bytes` comes from."""

    RUNTIME = "runtime"  # the runtime's total (cudaMemGetInfo / HIP): what engines budget
    DRIVER = "driver"  # the driver's total (nvidia-smi), above the runtime's by some MiB
    MARKETING = "marketing"  # the vendor's "N GB" as N GiB (as parts are built); no runtime figure
    ESTIMATE = "estimate"  # a documented rule applied where no runtime figure was read
    USER = "user"  # given by the user for this run


def _invalid(message: str) -> PydanticCustomError:
    """A validation error whose message reads as given (no "Value error, " prefix)."""
    return PydanticCustomError("device_value", message)


def _bytes(value: Any) -> Any:
    """Accept `80GiB`/`141GB` strings for byte fields; refuse booleans posing as numbers."""
    if isinstance(value, bool):
        raise _invalid("expected a whole number of bytes, got a boolean")
    if isinstance(value, str):
        from llm_inventory.units import parse_bytes

        try:
            return parse_bytes(value)
        except InputError as exc:
            raise _invalid(exc.message) from exc
    return value


def _number(value: Any) -> Any:
    """Accept `1e14` and `989.4e12` (YAML reads exponents without a dot as text)."""
    if isinstance(value, bool):
        raise _invalid("expected a number, got a boolean")
    if isinstance(value, str):
        from decimal import Decimal, InvalidOperation

        from llm_inventory.bounds import NUMBER_TEXT

        try:
            if len(value) > NUMBER_TEXT:
                raise InvalidOperation
            number = Decimal(value.strip().replace("_", ""))
        except InvalidOperation as exc:
            raise _invalid(f"expected a number such as 989.4e12, got {excerpt(value)}") from exc
        # The exponent is bounded before int() would build a number of that many digits.
        if not number.is_finite() or number.adjusted() > 30:
            raise _invalid(f"expected a finite number below 1e30, got {excerpt(value)}")
        if number != number.to_integral_value():
            raise _invalid(f"expected a whole number, got {excerpt(value)}")
        return int(number)
    return value


def _capability(value: Any) -> Any:
    """Accept `9.0` and `10` as YAML reads them (numbers) as well as the text "9.0"."""
    if isinstance(value, bool):
        raise _invalid("expected a compute capability such as 9.0, got a boolean")
    if isinstance(value, int | float):
        return f"{float(value):.1f}"
    return value


# Upper bounds only catch nonsense (a typo'd exponent), far above any device (bounds.py).
Bytes = Annotated[int, Field(gt=0, le=SIZE.limit), BeforeValidator(_bytes)]
Flops = Annotated[int, Field(gt=0, le=DEVICE_FLOPS.limit), BeforeValidator(_number)]
Count = Annotated[int, Field(gt=0, le=DEVICES_PER_NODE.limit), BeforeValidator(_number)]
# CUDA compute capability, major.minor ("9.0").
Capability = Annotated[str, Field(pattern=r"^[0-9]{1,2}\.[0-9]$"), BeforeValidator(_capability)]
# A board's power draw: far past any accelerator's (a GB200 superchip draws 2,700 W).
Watts = Annotated[int, Field(gt=0, le=100_000), BeforeValidator(_number)]


def _key(name: str) -> str:
    """Lookup form of a device name: case-insensitive, `_` and spaces read as `-`."""
    return "-".join(name.strip().lower().replace("_", "-").split())


class Device(BaseModel):
    """One accelerator: memory, bandwidth, peak dense FLOP/s and how devices connect.

    Only `id`, `name` and `memory_bytes` are required; any other figure may be unknown
    (None), and consumers must say so rather than guess.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID_PATTERN, max_length=64, description="Catalog id, lower case.")
    name: str = Field(min_length=1, max_length=200)  # bounds.NAME and below
    vendor: str | None = Field(default=None, max_length=64)
    aliases: tuple[str, ...] = Field(default=(), max_length=32)
    memory_bytes: Bytes = Field(description="Total device memory as the runtime reports it.")
    memory_basis: MemoryBasis = MemoryBasis.RUNTIME
    memory_marketing: str | None = Field(default=None, max_length=64)
    memory_marketing_bytes: Bytes | None = Field(
        default=None, description='The vendor\'s label read as written: "80 GB" is 80 × 10^9 bytes.'
    )
    memory_bandwidth_bytes_per_s: Bytes | None = None
    bf16_flops: Flops | None = Field(default=None, description="Peak dense BF16 FLOP/s.")
    fp8_flops: Flops | None = Field(
        default=None, description="Peak dense FP8 FLOP/s; None where there is no FP8 unit."
    )
    fp4_flops: Flops | None = Field(
        default=None, description="Peak dense FP4 FLOP/s; None where there is no FP4 unit."
    )
    tdp_watts: Watts | None = Field(
        default=None, description="Board power limit (TDP), W: what an owned device draws."
    )
    compute_capability: Capability | None = Field(
        default=None,
        description="CUDA compute capability (major.minor): the generation engines pick "
        "kernels by; None for other vendors' devices.",
    )
    devices_per_node: Count | None = None
    node: str | None = Field(default=None, max_length=300)
    intra_node_link: str | None = Field(default=None, max_length=200)
    intra_node_bandwidth_bytes_per_s: Bytes | None = Field(
        default=None, description="Per device, per direction."
    )
    inter_node_link: str | None = Field(default=None, max_length=200)
    inter_node_bandwidth_bytes_per_s: Bytes | None = Field(
        default=None, description="Per device, per direction."
    )
    unified_memory_bytes: Bytes | None = Field(
        default=None,
        description="Memory the device shares with its host CPU (unified memory); None for a "
        "discrete device. `memory_bytes` is then the GPU runtime's working-set cap, not this.",
    )
    engines: tuple[str, ...] = Field(
        default=(), max_length=16,
        description="The serving engines that run on this device; empty: every engine.",
    )
    sources: dict[str, str] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _canonical_id(cls, value: Any) -> Any:
        return _key(value) if isinstance(value, str) else value

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            keys: list[Any] = []
            for item in value:
                if isinstance(item, int) and not isinstance(item, bool):
                    item = str(item)  # an unquoted YAML alias such as 4090
                key = _key(item) if isinstance(item, str) else item
                if key == "":
                    raise _invalid("an alias must not be empty")
                if key not in keys:
                    keys.append(key)
            return tuple(keys)
        return value

    @field_validator("sources")
    @classmethod
    def _known_figures(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(FIGURE_FIELDS) - set(OPTIONAL_FACTS))
        if unknown:
            raise _invalid(
                f"sources names no figure: {', '.join(unknown)}; "
                f"figures are {', '.join(FIGURE_FIELDS + OPTIONAL_FACTS)}"
            )
        return value

    def runs(self, engine: str) -> bool:
        """Whether the serving engine named `engine` runs on this device."""
        return not self.engines or engine in self.engines

    def names(self) -> tuple[str, ...]:
        """Every name this device answers to: its id, then its aliases."""
        return (self.id, *(a for a in self.aliases if a != self.id))


class DeviceList(BaseModel):
    """A list of devices as `inventory devices` prints it (and as device files may hold it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    devices: list[Device] = Field(min_length=1)


# --- the packaged catalog -----------------------------------------------------------------


@functools.cache
def _catalog() -> tuple[Device, ...]:
    from importlib.resources import files

    from llm_inventory.spec.yaml_io import parse_yaml

    text = files("llm_inventory").joinpath("data", CATALOG_RESOURCE).read_text("utf-8")
    label = f"llm_inventory/data/{CATALOG_RESOURCE}"
    devices = _validate(parse_yaml(text, label), label)
    _check_names(devices, label)
    return devices


@functools.cache
def _catalog_index() -> dict[str, Device]:
    return _index(_catalog())


def list_devices() -> tuple[Device, ...]:
    """Every catalog device, in catalog order."""
    return _catalog()


def resolve_device(name: str, extra: Sequence[Device] = ()) -> Device:
    """The device called `name` (id or alias, any case; `_` and spaces read as `-`).

    Devices in `extra` (from a user file) are looked up before the catalog, so a file may
    shadow a catalog name. Raises InputError("device", …) listing the known ids, the closest
    matches first.
    """
    key = _key(name)
    if extra:
        found = _index(extra).get(key)
        if found is not None:
            return found
    found = _catalog_index().get(key)
    if found is not None:
        return found
    raise InputError("device", _unknown_message(name, [*extra, *_catalog()]))


def _unknown_message(name: str, devices: Sequence[Device]) -> str:
    ids = list(dict.fromkeys(d.id for d in devices))
    owner = {n: d.id for d in reversed(devices) for n in d.names()}
    close = difflib.get_close_matches(_key(name), list(owner), n=4, cutoff=0.5)
    first = list(dict.fromkeys(owner[n] for n in close))
    known = first + [i for i in ids if i not in first]
    return f"unknown device {excerpt(name)}; known: {', '.join(known)}"


def merge_devices(extra: Sequence[Device]) -> list[Device]:
    """The catalog with `extra` added: an extra device replaces the catalog's of the same id."""
    replaced = {d.id for d in extra}
    return [d for d in _catalog() if d.id not in replaced] + list(extra)


# --- user device files ------------------------------------------------------------------


def load_devices_file(path: Path | str) -> list[Device]:
    """Devices from a YAML (or `.json`) file of the catalog's schema.

    The file holds a mapping with `devices: [...]`, a bare list of devices, or one device
    mapping. Reading is bounded in size and YAML aliases; every problem is one InputError
    naming the file and the field path (`devices.0.memory_bytes`).
    """
    from llm_inventory.spec.yaml_io import reading

    return reading(_load_devices_file)(path)


def _load_devices_file(path: Path | str) -> list[Device]:
    from llm_inventory.spec.yaml_io import parse_json, parse_yaml, read_text

    path = Path(path)
    label = str(path)
    text = read_text(path)
    data = parse_json(text, label) if path.suffix.lower() == ".json" else parse_yaml(text, label)
    devices = _validate(data, label)
    _check_names(devices, label)
    return list(devices)


def _validate(data: Any, label: str) -> tuple[Device, ...]:
    try:
        if isinstance(data, dict) and "devices" in data:
            return tuple(DeviceList.model_validate(data).devices)
        if isinstance(data, list):
            if not data:
                raise InputError(label, "holds an empty list; expected at least one device")
            return tuple(DeviceList.model_validate({"devices": data}).devices)
        if isinstance(data, dict):
            return (Device.model_validate(data),)
    except ValidationError as exc:
        raise _from_validation(exc, label) from exc
    kind = "nothing (the file is empty)" if data is None else type(data).__name__
    raise InputError(
        label,
        f"expected a device mapping, a list of devices or a mapping with `devices:`, got {kind}",
    )


def _from_validation(exc: ValidationError, label: str) -> InputError:
    from llm_inventory.spec.errors import from_validation

    error = from_validation(exc, label)
    errors = exc.errors(include_url=False)
    if errors[0]["type"] == "extra_forbidden":
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        keys = ", ".join(Device.model_fields)
        return InputError(error.field, f"unknown key; a device has: {keys}{more}")
    return error


def _check_names(devices: Iterable[Device], label: str) -> None:
    """Refuse two devices answering to the same name: resolution would be ambiguous."""
    owner: dict[str, tuple[int, str]] = {}
    for i, device in enumerate(devices):
        for name in device.names():
            seen = owner.get(name)
            if seen is not None and seen[1] != device.id:
                raise InputError(
                    f"{label}: devices.{i}",
                    f"name {name!r} of device {device.id!r} is already used by {seen[1]!r}",
                )
            if seen is not None:
                raise InputError(f"{label}: devices.{i}.id", f"duplicate device id {device.id!r}")
            owner[name] = (i, device.id)


def _index(devices: Iterable[Device]) -> dict[str, Device]:
    index: dict[str, Device] = {}
    for device in devices:
        for name in device.names():
            index.setdefault(name, device)
    return index


# --- one-off devices ----------------------------------------------------------------------


def custom_device(memory_bytes: int, base: Device | None = None) -> Device:
    """A device with `memory_bytes` of memory (as from `--device-memory 80GiB`).

    Other figures come from `base` when given, else stay unknown (None). The memory basis is
    `user`; marketing figures are dropped, since they describe the base's memory.
    """
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int) or memory_bytes <= 0:
        raise InputError("device_memory", f"must be a positive number of bytes, got {memory_bytes}")
    from llm_inventory.units import format_bytes

    size = format_bytes(memory_bytes)
    source = f"given for this run: {memory_bytes:,} B ({size})"
    if base is None:
        return Device(
            id="custom",
            name=f"custom device ({size})",
            memory_bytes=memory_bytes,
            memory_basis=MemoryBasis.USER,
            sources={"memory_bytes": source},
        )
    sources = {
        k: v for k, v in base.sources.items() if k not in ("memory_bytes", "memory_marketing_bytes")
    }
    return base.model_copy(
        update={
            "id": f"{base.id}-custom",
            "name": f"{base.name}, memory set to {size}",
            "aliases": (),
            "memory_bytes": memory_bytes,
            "memory_basis": MemoryBasis.USER,
            "memory_marketing": None,
            "memory_marketing_bytes": None,
            "sources": {"memory_bytes": source, **sources},
        }
    )
