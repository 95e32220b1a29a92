"""Real checkpoints as MODEL, through `inventory kv --model`: folders, Hub caches, GGUF files,
and malformed files as one line on stderr with exit code 2."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checkpoint.synthetic import (
    DEEPSEEK_CONFIG,
    LLAMA_CONFIG,
    deepseek_tensors,
    llama_tensors,
    shard,
    write_config,
    write_index,
    write_raw,
    write_safetensors,
)
from tests.conftest import Invoke


def _folder(root: Path, config: dict[str, object], name: str = "model") -> Path:
    folder = root / name
    folder.mkdir()
    write_config(folder, config)
    return folder


def test_kv_from_a_sharded_folder(invoke: Invoke, tmp_path: Path) -> None:
    folder = _folder(tmp_path, LLAMA_CONFIG)
    shard(folder, llama_tensors(), 2)
    run = invoke("kv", "--model", str(folder), "--tokens", "1000", "-f", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    # 2 KV heads × head dim 16 × (K + V) × 2 bytes (bf16) = 128 B per token per layer.
    assert data["bytes_per_token_per_layer"] == 128
    assert data["bytes_per_token"] == 256
    assert data["total_bytes"] == 256_000


def test_kv_from_a_deepseek_folder_leaves_the_mtp_layer_out(invoke: Invoke,
                                                            tmp_path: Path) -> None:
    folder = _folder(tmp_path, DEEPSEEK_CONFIG)
    shard(folder, deepseek_tensors(), 3)
    data = invoke("kv", "--model", str(folder), "--tokens", "10", "-f", "json").json()
    # MLA: one latent of kv_lora_rank 16 + rope 8 = 24 elements × 2 bytes, in 3 layers.
    assert data["bytes_per_token"] == 3 * 48


def test_kv_from_an_index_only_folder(invoke: Invoke, tmp_path: Path) -> None:
    folder = _folder(tmp_path, LLAMA_CONFIG)
    write_index(folder, dict.fromkeys(llama_tensors(), "model-00001-of-00001.safetensors"),
                205_440)
    assert invoke("kv", "--model", str(folder), "-f", "json").code == 0


def test_kv_from_a_hub_cache_folder(invoke: Invoke, tmp_path: Path) -> None:
    repo = tmp_path / "models--acme--tiny"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / ("c" * 40)
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (blobs / "1").write_text(json.dumps(LLAMA_CONFIG))
    write_safetensors(blobs / "2", llama_tensors())
    (snapshot / "config.json").symlink_to("../../blobs/1")
    (snapshot / "model.safetensors").symlink_to("../../blobs/2")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c" * 40)
    data = invoke("kv", "--model", str(repo), "--tokens", "1000", "-f", "json").json()
    assert data["total_bytes"] == 256_000


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_launch_finds_a_hub_id_in_the_cache(invoke: Invoke, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            variable: str) -> None:
    """`launch` reads an ORG/NAME that is no preset from the cache, wherever the Hub keeps it."""
    cache = tmp_path / "hub" if variable == "HF_HOME" else tmp_path
    snapshot = cache / "models--acme--tiny" / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    write_config(snapshot, LLAMA_CONFIG)
    (cache / "models--acme--tiny" / "refs").mkdir()
    (cache / "models--acme--tiny" / "refs" / "main").write_text("c" * 40)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    run = invoke("launch", "--device", "h100", "-f", "json", "--", "vllm", "serve",
                 "acme/tiny", "--max-model-len", "1000")
    assert run.code == 0, run.stderr


def test_kv_from_a_gguf_file(invoke: Invoke, tmp_path: Path) -> None:
    from tests.checkpoint.gguf_files import llama_gguf

    path = tmp_path / "tiny.gguf"
    llama_gguf(path)
    data = invoke("kv", "--model", str(path), "--tokens", "1000", "-f", "json").json()
    # llama.cpp's default KV cache is fp16: the same 128 B per token per layer.
    assert data["dtype"] == "fp16" and data["total_bytes"] == 256_000


def _with_config(build: Callable[[Path], object]) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        folder = _folder(root, LLAMA_CONFIG)
        build(folder / "model.safetensors")
        return folder
    return make


def _several_snapshots(root: Path) -> Path:
    repo = root / "models--acme--two"
    for revision in ("a" * 40, "b" * 40):
        snapshot = repo / "snapshots" / revision
        snapshot.mkdir(parents=True)
        write_config(snapshot, LLAMA_CONFIG)
    return repo


def _bad_gguf(root: Path) -> Path:
    path = root / "bad.gguf"
    path.write_bytes(b"GGML" + struct.pack("<I", 3) + bytes(64))
    return path


def _no_config(root: Path) -> Path:
    folder = root / "weights-only"
    folder.mkdir()
    write_safetensors(folder / "model.safetensors", llama_tensors())
    return folder


BAD_INPUTS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("truncated header", _with_config(lambda p: p.write_bytes(b"\x08\x00")), "too short"),
    ("header length past the end",
     _with_config(lambda p: write_raw(p, b"{}", length=1 << 20)), "truncated"),
    ("non-JSON header", _with_config(lambda p: write_raw(p, b"{oops")), "not JSON"),
    ("unknown dtype",
     _with_config(lambda p: write_raw(p, json.dumps({"w": {
         "dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}}).encode())), "unknown dtype"),
    ("GGUF with a bad magic number", _bad_gguf, "not a GGUF file"),
    ("Hub cache with several snapshots", _several_snapshots, "2 snapshots"),
    ("safetensors without config.json", _no_config, "no config.json"),
]


@pytest.mark.parametrize(("case", "build", "message"), BAD_INPUTS,
                         ids=[b[0] for b in BAD_INPUTS])
def test_bad_checkpoints_are_one_line_exit_2(invoke: Invoke, tmp_path: Path, case: str,
                                             build: Callable[[Path], Path],
                                             message: str) -> None:
    target = build(tmp_path)
    run = invoke("kv", "--model", str(target))
    assert run.code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert message in run.stderr
    assert "Traceback" not in run.stderr


def test_presets_and_yaml_load_no_checkpoint_reader() -> None:
    yaml_model = Path(__file__).resolve().parents[2] / "examples" / "dense-70b.yaml"
    code = (
        "import contextlib, io, sys\n"
        "from llm_inventory.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['kv', '--model', 'llama-3.1-8b', '-f', 'json']) == 0\n"
        f"    assert main(['kv', '--model', {str(yaml_model)!r}, '-f', 'json']) == 0\n"
        "loaded = [m for m in sys.modules if m.startswith('llm_inventory.checkpoint')\n"
        "          or m.split('.')[0] in ('gguf', 'numpy')]\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
