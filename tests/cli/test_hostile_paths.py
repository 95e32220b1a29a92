"""A Hub cache (and any path) laid out to hang, loop or leak: every read is bounded, stays
inside the cache, never waits on a FIFO, and fails as one line and exit 2."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Invoke

CONFIG = Path(__file__).parent.parent / "data" / "configs" / "codellama--CodeLlama-7b-hf.json"
COMMIT = "a" * 40


def _repo(cache: Path, name: str) -> Path:
    folder = cache / f"models--org--{name}"
    (folder / "refs").mkdir(parents=True)
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    return folder


def _ok_ref(folder: Path) -> None:
    (folder / "refs" / "main").write_text(COMMIT)


def _ok_config(folder: Path) -> None:
    shutil.copy(CONFIG, folder / "snapshots" / COMMIT / "config.json")


def fifo_ref(folder: Path, outside: Path) -> None:
    os.mkfifo(folder / "refs" / "main")
    _ok_config(folder)


def fifo_config(folder: Path, outside: Path) -> None:
    _ok_ref(folder)
    os.mkfifo(folder / "snapshots" / COMMIT / "config.json")


def looping_config(folder: Path, outside: Path) -> None:
    _ok_ref(folder)
    snap = folder / "snapshots" / COMMIT
    (snap / "config.json").symlink_to("b")
    (snap / "b").symlink_to("config.json")


def config_outside(folder: Path, outside: Path) -> None:
    _ok_ref(folder)
    shutil.copy(CONFIG, outside / "config.json")
    (folder / "snapshots" / COMMIT / "config.json").symlink_to(outside / "config.json")


def config_is_a_device(folder: Path, outside: Path) -> None:
    _ok_ref(folder)
    (folder / "snapshots" / COMMIT / "config.json").symlink_to("/dev/zero")


def ref_outside(folder: Path, outside: Path) -> None:
    (outside / "ref").write_text(COMMIT)
    (folder / "refs" / "main").symlink_to(outside / "ref")
    _ok_config(folder)


def ref_unbounded(folder: Path, outside: Path) -> None:
    (folder / "refs" / "main").write_text(COMMIT + " " * 100_000)
    _ok_config(folder)


def looping_ref(folder: Path, outside: Path) -> None:
    (folder / "refs" / "main").symlink_to("main")
    _ok_config(folder)


def snapshot_outside(folder: Path, outside: Path) -> None:
    _ok_ref(folder)
    snap = folder / "snapshots" / COMMIT
    snap.rmdir()
    (outside / "snap").mkdir()
    shutil.copy(CONFIG, outside / "snap" / "config.json")
    snap.symlink_to(outside / "snap")


LAYOUTS: list[Callable[[Path, Path], None]] = [
    fifo_ref, fifo_config, looping_config, config_outside, config_is_a_device, ref_outside,
    ref_unbounded, looping_ref, snapshot_outside]

COMMANDS = {
    "kv": ["kv", "--model", "org/{name}", "--tokens", "1000"],
    "inventory": ["inventory", "org/{name}"],
    "placement": ["placement", "org/{name}", "--device", "h100"],
    "launch": ["launch", "--device", "h100", "--", "vllm", "serve", "org/{name}"],
    "folder": ["inventory", "{folder}"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
def test_hostile_hub_cache_is_one_line(invoke: Invoke, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       layout: Callable[[Path, Path], None],
                                       command: str) -> None:
    cache, outside = tmp_path / "hub", tmp_path / "elsewhere"
    outside.mkdir()
    folder = _repo(cache, "m")
    layout(folder, outside)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = [a.format(name="m", folder=folder) for a in COMMANDS[command]]
    run = invoke(*argv)
    assert run.code == 2, (run.code, run.stderr)
    assert run.stderr.startswith("inventory: error: ") and run.stderr.count("\n") == 1
    assert run.stdout == ""


def test_a_sound_cache_still_reads(invoke: Invoke, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout the Hub client writes: snapshot entries link into blobs/ of the repo."""
    cache = tmp_path / "hub"
    folder = _repo(cache, "m")
    _ok_ref(folder)
    (folder / "blobs").mkdir()
    shutil.copy(CONFIG, folder / "blobs" / "0123abcd")
    (folder / "snapshots" / COMMIT / "config.json").symlink_to("../../blobs/0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for argv in (["kv", "--model", "org/m", "--tokens", "1000"],
                 ["launch", "--device", "h100", "--", "vllm", "serve", "org/m"]):
        run = invoke(*argv)
        assert run.code == 0, run.stderr


@pytest.mark.parametrize("argv", [
    ["launch", "--device", "h100", "--", "vllm", "serve", "a" * 300],
    ["inventory", "a" * 300],
    ["kv", "--model", "a" * 300 + ".json", "--tokens", "10"],
])
def test_a_name_too_long_for_any_file_is_bad_input(invoke: Invoke,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   argv: list[str]) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run = invoke(*argv)
    assert run.code == 2, run.stderr
    assert run.stderr.count("\n") == 1


def test_a_fifo_index_in_a_model_folder_never_waits(invoke: Invoke, tmp_path: Path) -> None:
    """A FIFO where model.safetensors.index.json goes: not a regular file, so not an index;
    the index reader itself is bounded and refuses one (files.read_bounded)."""
    from llm_inventory.checkpoint.folder import _read_index
    from llm_inventory.errors import InputError

    shutil.copy(CONFIG, tmp_path / "config.json")
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    run = invoke("inventory", str(tmp_path), "--format", "json")
    assert run.code == 0, run.stderr
    with pytest.raises(InputError, match="not a regular file"):
        _read_index(tmp_path / "model.safetensors.index.json")
