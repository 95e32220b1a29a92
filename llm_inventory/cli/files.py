"""Files the commands write (reports, JUnit XML): checked before the work, written whole.

A file is written to a temporary name beside it and renamed over the target, so a failure
mid-write (a full disk, a size limit) leaves neither a half-written file nor a clobbered
old one; the temporary file is removed. Failures are InputError naming the option.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from llm_inventory.errors import InputError


def check_writable(path: Path, field: str) -> None:
    """Refuse, before any work, a target whose folder is missing or that is a folder."""
    if path.is_dir():
        raise InputError(field, f"{path} is a folder; name a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(field, f"the folder {folder} does not exist")


def write_atomically(path: Path, text: str, field: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file and a rename."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temp = tempfile.mkstemp(dir=folder, prefix=f".{path.name[:40]}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(field, f"cannot write in {folder}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise InputError(field, f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def check_report(path: Path | None) -> None:
    """`--report FILE.html`: an .html file in a folder that exists, checked before the work."""
    if path is None:
        return
    if path.suffix.lower() not in (".html", ".htm"):
        raise InputError("report", f"write an .html file, got {path.name[:60]!r}")
    check_writable(path, "report")
