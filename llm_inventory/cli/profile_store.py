"""Where the local calibration profile lives, and reading and writing it (atomically).

The profile is `calibration.json` in the user's configuration directory:
`$LLM_INVENTORY_CONFIG_DIR` when set (tests, shared setups), else `$XDG_CONFIG_HOME/
llm-inventory`, `~/.config/llm-inventory` on Linux, `~/Library/Application Support/
llm-inventory` on macOS, `%APPDATA%\\llm-inventory` on Windows. `--profile FILE` names
another file (a team's, committed to its repository).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from llm_inventory.errors import InputError

if TYPE_CHECKING:
    from llm_inventory.engine.calibrate import Profile, ProfileEntry
    from llm_inventory.engine.serving import ServingEngine
    from llm_inventory.engine.trust import Trust
    from llm_inventory.spec.devices import Device

PROFILE_BYTES = 4 * 2**20  # a profile holds a few entries per log; megabytes means not one
FILE_NAME = "calibration.json"


def config_dir() -> Path:
    override = os.environ.get("LLM_INVENTORY_CONFIG_DIR")
    if override:
        return Path(override)
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "llm-inventory"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "llm-inventory"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "llm-inventory"


def profile_path(given: Path | None) -> Path:
    return given if given is not None else config_dir() / FILE_NAME


def load_profile(path: Path) -> Profile:
    """The profile at `path` (an empty one when there is none); InputError when malformed."""
    from pydantic import ValidationError

    from llm_inventory.engine.calibrate import Profile

    if not path.exists():
        return Profile()
    try:
        if path.stat().st_size > PROFILE_BYTES:
            raise InputError("profile", f"{path.name} is larger than {PROFILE_BYTES:,} bytes; "
                             "not a calibration profile")
        data = json.loads(path.read_text(encoding="utf-8"))
        return Profile.model_validate(data)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("profile", f"{path.name}: not a readable calibration profile "
                         f"({type(exc).__name__})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError("profile", f"{path.name}: {where}: {first['msg']}") from None


def save_profile(path: Path, profile: object) -> None:
    """Write `profile` (a pydantic model) to `path` atomically: a temporary file beside it,
    then a rename, so a reader never sees half a profile."""
    from pydantic import BaseModel

    assert isinstance(profile, BaseModel)
    text = json.dumps(profile.model_dump(mode="json"), indent=2) + "\n"
    from llm_inventory.files import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("profile", f"cannot write {path}: {exc.strerror or exc}") from None
    atomic_write(path, text, field="profile")


def gpu_keys(device: Device) -> tuple[str, ...]:
    """The names a profile may know a device by: its catalog id, or its memory (a log that
    printed only the memory, or `--device-memory`)."""
    return (device.id, f"{device.memory_bytes / 2**30:.2f} GiB")


def local_entries(path: Path | None, engine: ServingEngine, device: Device, model: str,
                  tp: int | None = None) -> list[ProfileEntry]:
    """The profile's entries for this engine release, device and model (and TP width, when
    given; placement takes every width's, each applied only at its own)."""
    found = profile_path(path)
    if not found.exists():  # no profile: nothing to load (nor its models to import)
        return []
    profile = load_profile(found)
    return profile.matching(engine.name, engine.version, gpu_keys(device), model, tp)


@contextmanager
def local_calibration(path: Path | None, off: bool, engine_spec: str, device: Device,
                      model: str) -> Iterator[list[ProfileEntry]]:
    """While the block runs, engine `engine_spec` answers with the profile's entries for
    this device and model applied (none when `off`); yields the entries used."""
    from llm_inventory.engine.serving import get

    entries = [] if off else local_entries(path, get(engine_spec), device, model)
    if not entries:
        yield []
        return
    from llm_inventory.engine.calibrate import applied

    with applied(get(engine_spec), entries):
        yield entries


def profile_trust(entries: list[ProfileEntry]) -> Trust:
    """The reserve's label when local entries moved it (`engine.calibrate` imported only
    then: a run with no profile never loads it)."""
    from llm_inventory.engine.calibrate import calibrated_trust

    return calibrated_trust(entries)
