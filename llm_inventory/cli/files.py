"""Files the commands write (reports, JUnit XML): checked before the work, then written
whole through `llm_inventory.files` (a temporary beside the target, renamed over it), so a
failure mid-write leaves neither a half-written nor a clobbered file. Failures are
InputError naming the option."""

from __future__ import annotations

from pathlib import Path

from llm_inventory.errors import InputError


def check_writable(path: Path, field: str) -> None:
    """Refuse, before any work, a target whose folder is missing or that is a folder."""
    from llm_inventory.files import is_dir

    if is_dir(path):
        raise InputError(field, f"{path} is a folder; name a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not is_dir(folder):
        raise InputError(field, f"the folder {folder} does not exist")


def write_atomically(path: Path, text: str, field: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file and a rename
    (`llm_inventory.files.atomic_write`)."""
    from llm_inventory.files import atomic_write

    atomic_write(path, text, field=field)


def check_report(path: Path | None) -> None:
    """`--report FILE.html`: an .html file in a folder that exists, checked before the work."""
    if path is None:
        return
    if path.suffix.lower() not in (".html", ".htm"):
        raise InputError("report", f"write an .html file, got {path.name[:60]!r}")
    check_writable(path, "report")
