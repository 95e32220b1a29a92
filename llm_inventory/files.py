"""Every file the tool writes, and every file it opens, goes through this module.

Writing: a temporary file in the target's folder, flushed and synced, then renamed over the
target (`atomic_write`, or `atomic_target` for a writer that wants a path, such as a plotting
library's `savefig`). A failure part-way leaves the target as it was: never half-written,
never clobbered. Any failure is bad input naming the file (exit 2).

Reading: `read_bounded` opens without following a FIFO into a hang, refuses what is not a
regular file where one is required, reads at most `limit` bytes, and, given `within`,
refuses a path whose resolved form leaves that folder (a symlink out of a cache) or loops.

This module imports nothing of the tool but its errors.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from llm_inventory.errors import InputError

_TEMP_PREFIX = ".inventory-tmp-"


@contextlib.contextmanager
def atomic_target(path: Path | str, *, field: str = "") -> Iterator[Path]:
    """A temporary path beside `path`; when the block ends without error the file written
    there is synced and renamed to `path`, else removed. The temporary keeps the target's
    suffix, so a writer that chooses its format by suffix (SVG, PNG) still can."""
    target = Path(path)
    label = field or str(target)
    folder = target.parent if str(target.parent) else Path(".")
    if is_dir(target):
        raise InputError(label, f"{target} is a folder, expected a file name")
    try:
        handle, temp_name = tempfile.mkstemp(dir=folder, prefix=_TEMP_PREFIX,
                                             suffix=target.suffix)
    except OSError as exc:
        raise InputError(label, f"cannot write {target}: {exc.strerror or exc}") from exc
    os.close(handle)
    temp = Path(temp_name)
    try:
        if too_long(target):  # checked once the folder is known to be writable
            raise OSError(36, "File name too long")
        yield temp
        _sync(temp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise InputError(label, f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def atomic_write(path: Path | str, data: bytes | str, *, field: str = "") -> None:
    """Write `data` (text as UTF-8) to `path` whole, or leave `path` as it was."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_target(path, field=field) as temp, open(temp, "wb") as out:
        out.write(raw)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # a file system without fsync (some network mounts): rename still atomic
        pass
    finally:
        os.close(fd)


def inside(path: Path, root: Path) -> Path:
    """`path` resolved, when it stays inside `root` (resolved) and resolves at all; else
    InputError. A symlink loop, or a link out of `root`, is refused, never followed."""
    try:
        real_root = root.resolve(strict=True)
        real = path.resolve(strict=True)
    except RuntimeError as exc:  # Python < 3.13 raises RuntimeError on a symlink loop
        raise InputError(str(path), "is a symlink loop") from exc
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise InputError(str(path), "is a symlink loop") from exc
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}") from exc
    if real != real_root and real_root not in real.parents:
        raise InputError(str(path), f"points outside {root} (to {real}); refused")
    return real


def read_bounded(path: Path, limit: int, *, regular: bool = True,
                 within: Path | None = None) -> bytes:
    """At most `limit` bytes of `path`, or InputError: missing, a folder, larger than
    `limit`, not a regular file when `regular` (a FIFO, a device), or outside `within`."""
    label = str(path)
    if within is not None:
        path = inside(path, within)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError as exc:
        raise InputError(label, "no such file") from exc
    except OSError as exc:
        if exc.errno == 40:
            raise InputError(label, "is a symlink loop") from exc
        raise InputError(label, f"cannot be read: {exc.strerror or exc}") from exc
    except ValueError as exc:  # a NUL in the path
        raise InputError(label, f"is not a usable path: {exc}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(label, "is a folder, expected a file")
        if regular and not stat.S_ISREG(info.st_mode):
            raise InputError(label, "is not a regular file (a FIFO, socket or device); "
                             "refused")
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise InputError(label, f"is {info.st_size:,} bytes; the limit is {limit:,}")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(label, f"cannot be read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise InputError(label, f"holds more than {limit:,} bytes; the limit is that")
    return data


# --- questions about a path that never raise ---------------------------------------------
# Path.exists() and friends raise on a name the system refuses (ENAMETOOLONG for a
# 300-character model name, EACCES): a name no file can have is simply not there.


def exists(path: Path) -> bool:
    """Whether `path` names something (a broken or looping link counts: it is there)."""
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    """Whether `path` is a regular file (links followed); False for any name that cannot be."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """Whether `path` is a folder (links followed); False for any name that cannot be."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def regular_inside(path: Path, root: Path) -> Path:
    """`path` when it resolves inside `root` to a regular file; else InputError saying why
    (a symlink loop, a link out of `root`, a FIFO, socket or device, a folder)."""
    real = inside(path, root)
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket " \
            "or device)"
        raise InputError(str(path), f"is {kind}; refused")
    return real


def too_long(path: Path | str) -> bool:
    """Whether no file system here can hold `path` (a component or the whole name too long):
    such a name is not looked up at all."""
    text = os.fspath(path)
    try:
        name_max = os.pathconf("/", "PC_NAME_MAX")
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    parts = text.split(os.sep)
    return len(os.fsencode(text)) >= path_max or \
        any(len(os.fsencode(part)) > name_max for part in parts)
