"""The one helper for every file the tool writes or opens (llm_inventory/files.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_inventory.errors import InputError
from llm_inventory.files import atomic_target, atomic_write, inside, read_bounded


def test_atomic_write_replaces_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_failure_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "chart.svg"
    target.write_text("kept")
    with pytest.raises(InputError, match="cannot write"), atomic_target(target) as temp:
        assert temp.suffix == ".svg"  # writers choose their format by suffix
        temp.write_text("half")
        raise OSError(28, "No space left on device")
    assert target.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chart.svg"]


def test_failure_of_another_kind_also_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "a.png"
    with pytest.raises(KeyError), atomic_target(target) as temp:
        temp.write_bytes(b"x")
        raise KeyError("boom")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder_and_folder_target_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        atomic_write(tmp_path / "missing" / "f.svg", "x", field="plot")
    with pytest.raises(InputError, match="is a folder"):
        atomic_write(tmp_path, "x")


def test_read_bounded_refuses_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_bounded(fifo, 1024)


def test_read_bounded_refuses_loops_escapes_and_size(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    with pytest.raises(InputError, match="symlink loop"):
        read_bounded(root / "a", 1024, within=root)
    with pytest.raises(InputError, match="symlink loop"):
        read_bounded(root / "a", 1024)
    secret = tmp_path / "secret"
    secret.write_text("x")
    (root / "out").symlink_to(secret)
    with pytest.raises(InputError, match="points outside"):
        read_bounded(root / "out", 1024, within=root)
    big = root / "big"
    big.write_bytes(b"0" * 2048)
    with pytest.raises(InputError, match="limit"):
        read_bounded(big, 1024, within=root)
    assert read_bounded(big, 4096, within=root) == b"0" * 2048
    assert inside(big, root) == big.resolve()


def test_read_bounded_stops_at_the_limit_on_a_device() -> None:
    with pytest.raises(InputError, match="more than 1,024 bytes"):
        read_bounded(Path("/dev/zero"), 1024, regular=False)
    with pytest.raises(InputError, match="not a regular file"):
        read_bounded(Path("/dev/zero"), 1024)
