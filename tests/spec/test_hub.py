"""Hugging Face ids: a preset alias, the local Hub cache, then the Hub itself, here a
Hub-shaped tree served on 127.0.0.1 (HF_ENDPOINT points at it). Every failure is one line
and exit 2, and leaves nothing half-written in the cache."""

from __future__ import annotations

import hashlib
import json
import re
import struct
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llm_inventory.cli.app import app
from tests.checkpoint.synthetic import LLAMA_CONFIG, header_bytes, llama_tensors
from tests.conftest import Run

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_test_token"


@dataclass
class Repo:
    files: dict[str, bytes]  # config.json, the index
    shards: dict[str, tuple[bytes, int]]  # name: (8 + N header bytes, file size)
    gated: bool = False
    drop: str | None = None  # a shard whose header the server cuts off mid-way


@dataclass
class Hub:
    repos: dict[str, Repo]
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)


def _tiny_repo(**kwargs: Any) -> Repo:
    tensors = llama_tensors()
    names = list(tensors)
    shards: dict[str, tuple[bytes, int]] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for i, part_names in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        file = f"model-{i + 1:05d}-of-00002.safetensors"
        raw, data = header_bytes({n: tensors[n] for n in part_names})
        shards[file] = (struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + data)
        weight_map.update(dict.fromkeys(part_names, file))
        total += data
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files = {"config.json": json.dumps(LLAMA_CONFIG).encode(),
             "model.safetensors.index.json": json.dumps(index).encode()}
    return Repo(files=files, shards=shards, **kwargs)


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            wanted = self.headers.get("Range")
            hub.requests.append({"path": self.path, "range": wanted,
                                 "auth": self.headers.get("Authorization"),
                                 "host": self.headers.get("Host")})
            cdn = re.fullmatch(r"/cdn/(\w+)/(\w+)/([\w.-]+)", self.path)
            match = re.fullmatch(r"/(\w+)/(\w+)/resolve/([\w.%-]+)/([\w.-]+)", self.path)
            if cdn:
                repo_name, file = f"{cdn[1]}/{cdn[2]}", cdn[3]
            elif match:
                repo_name, file = f"{match[1]}/{match[2]}", match[4]
            else:
                return self._error(404, "EntryNotFound")
            repo = hub.repos.get(repo_name)
            if repo is None:
                return self._error(404, "RepoNotFound")
            if repo.gated and not cdn and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._error(401, "GatedRepo")
            if match and match[3] not in ("main", COMMIT):
                return self._error(404, "RevisionNotFound")
            if file in repo.shards and not cdn:
                # Large files live on another host, as the Hub's do.
                port = self.server.server_address[1]
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}/cdn/{repo_name}/{file}")
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if file in repo.shards:
                head, size = repo.shards[file]
                body = head + bytes(64)  # what follows the header: never asked for
            elif file in repo.files:
                body, size = repo.files[file], len(repo.files[file])
            else:
                return self._error(404, "EntryNotFound")
            start, end = 0, size - 1
            if wanted:
                first, last = re.fullmatch(r"bytes=(\d+)-(\d+)", wanted).groups()  # type: ignore[union-attr]
                start, end = int(first), min(int(last), size - 1)
            chunk = body[start:end + 1]
            self.send_response(206 if wanted else 200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
            self.send_header("Content-Length", str(end - start + 1))
            if wanted:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if repo.drop == file and start > 0:
                self.wfile.write(chunk[: len(chunk) // 2])  # then the connection drops
                self.close_connection = True
                return None
            self.wfile.write(chunk)
            return None

    return Handler


@pytest.fixture
def hub() -> Iterator[Hub]:
    liar = _tiny_repo()
    name, (head, size) = next(iter(liar.shards.items()))
    # The length prefix claims more header bytes than the whole file holds.
    liar.shards[name] = (struct.pack("<Q", size) + head[8:], size)
    state = Hub(repos={
        "org/tiny": _tiny_repo(),
        "org/gated": _tiny_repo(gated=True),
        "org/dropped": _tiny_repo(drop="model-00002-of-00002.safetensors"),
        "org/liar": liar,
    })
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _run(*args: str, cache: Path, hub: Hub | None = None, **env: str | None) -> Run:
    environment: dict[str, str | None] = {
        "NO_COLOR": "1", "COLUMNS": "120", "HF_HUB_CACHE": str(cache), "HF_HOME": None,
        "HF_TOKEN": None, "HF_HUB_OFFLINE": None,
        "HF_ENDPOINT": hub.url if hub is not None else "http://127.0.0.1:9",
    }
    environment.update(env)
    result = CliRunner(env=environment).invoke(app, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def _leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()
                  or p.is_symlink())


def _one_line_exit_2(run: Run, *needles: str) -> None:
    assert run.code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("inventory: error: ")
    for needle in needles:
        assert needle in run.stderr, run.stderr


# --- the Hub, headers only ------------------------------------------------------------------


def test_a_hub_id_is_read_by_headers_into_the_cache(hub: Hub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    run = _run("inventory", "org/tiny", "--format", "json", cache=cache, hub=hub)
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["model"] == "org/tiny"
    assert data["weight_bytes_source"] == "checkpoint headers"
    assert data["checkpoint"]["parameters_agree"] is True
    # Never a weight: every shard request stays inside its header.
    for request in hub.requests:
        if request["path"].startswith("/cdn/"):
            file = request["path"].rsplit("/", 1)[1]
            head, _ = hub.repos["org/tiny"].shards[file]
            first, last = map(int, request["range"].removeprefix("bytes=").split("-"))
            assert last < len(head), request
    # The standard layout: blobs, a snapshot linking to them, refs/main; headers beside it.
    folder = cache / "models--org--tiny"
    snapshot = folder / "snapshots" / COMMIT
    assert (folder / "refs" / "main").read_text() == COMMIT
    assert (snapshot / "config.json").is_symlink()
    assert (snapshot / "config.json").resolve().parent == (folder / "blobs").resolve()
    assert (snapshot / "model.safetensors.index.json").is_file()
    assert not list(snapshot.glob("*.safetensors"))
    assert (folder / "safetensors-headers" / COMMIT / "manifest.json").is_file()
    assert not [p for p in _leftovers(cache) if ".tmp-" in p]
    # The next call is offline: the same answer from the cache alone.
    offline = _run("inventory", "org/tiny", "--format", "json", cache=cache, hub=None,
                   HF_HUB_OFFLINE="1")
    assert offline.code == 0, offline.stderr
    assert offline.json() == data
    pinned = _run("kv", "--model", f"org/tiny@{COMMIT}", "--format", "json", cache=cache,
                  HF_HUB_OFFLINE="1")
    assert pinned.code == 0, pinned.stderr
    assert pinned.json()["bytes_per_token_per_layer"] == 128


def test_a_gated_repo_needs_a_token_which_never_leaves_the_hub(hub: Hub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    refused = _run("kv", "--model", "org/gated", cache=cache, hub=hub)
    _one_line_exit_2(refused, "org/gated", "HTTP 401", "gated", "HF_TOKEN")
    assert _leftovers(cache) == []
    allowed = _run("kv", "--model", "org/gated", "--format", "json", cache=cache, hub=hub,
                   HF_TOKEN=TOKEN)
    assert allowed.code == 0, allowed.stderr
    hub_side = [r for r in hub.requests if "/resolve/" in r["path"] and r["auth"]]
    assert hub_side and all(r["auth"] == f"Bearer {TOKEN}" for r in hub_side)
    assert all(r["auth"] is None for r in hub.requests if r["path"].startswith("/cdn/"))


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        ("org/missing", ("org/missing", "HTTP 404", "no repository")),
        ("org/tiny@v9", ("HTTP 404", "no revision 'v9'")),
        ("org/dropped", ("model-00002-of-00002.safetensors", "nothing was written")),
        ("org/liar", ("declares a", "header but the file holds only")),
    ],
)
def test_hub_failures_are_one_line_and_leave_the_cache_as_it_was(
    hub: Hub, tmp_path: Path, model: str, needles: tuple[str, ...]
) -> None:
    cache = tmp_path / "hub"
    run = _run("placement", model, "--device", "h100", cache=cache, hub=hub)
    _one_line_exit_2(run, *needles)
    assert _leftovers(cache) == []


def test_an_unreachable_hub_is_one_line(tmp_path: Path) -> None:
    run = _run("kv", "--model", "org/tiny", cache=tmp_path / "hub", hub=None)
    _one_line_exit_2(run, "org/tiny", "the connection failed")


@pytest.mark.parametrize("endpoint", ["http://[::1", "http://hub:99999999", "http://hub:port",
                                      "hub.example", "ftp://hub.example", "http://"])
def test_an_endpoint_that_is_not_a_url_is_one_line(tmp_path: Path, endpoint: str) -> None:
    """urllib (and huggingface_hub's import) raise ValueError on these: once exit 3."""
    run = _run("kv", "--model", "org/tiny", cache=tmp_path / "hub", HF_ENDPOINT=endpoint)
    _one_line_exit_2(run, "HF_ENDPOINT")


# --- offline first ---------------------------------------------------------------------------


def test_a_preset_alias_comes_first_and_needs_no_cache(tmp_path: Path) -> None:
    run = _run("placement", "meta-llama/Llama-3.1-8B", "--device", "h100", "--format", "json",
               cache=tmp_path / "empty", HF_HUB_OFFLINE="1")
    assert run.code == 0, run.stderr
    assert run.json()["model"] == "llama-3.1-8b"


def test_offline_and_not_cached_names_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    run = _run("kv", "--model", "org/tiny", cache=cache, HF_HUB_OFFLINE="1")
    _one_line_exit_2(run, "not in the Hub cache", str(cache / "models--org--tiny"),
                     "HF_HUB_OFFLINE")


def test_without_the_extra_it_says_how_to_install_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    run = _run("kv", "--model", "org/tiny", cache=tmp_path / "hub")
    _one_line_exit_2(run, "not in the Hub cache", "pip install 'llm-inventory[hub]'")


def _cached_by_another_tool(cache: Path) -> None:
    """A cache as huggingface_hub leaves it after a full download: shards and all."""
    from tests.checkpoint.synthetic import shard, write_config

    folder = cache / "models--org--tiny"
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    write_config(snapshot, LLAMA_CONFIG)
    shard(snapshot, llama_tensors(), 2)


@pytest.mark.parametrize("where", ["HF_HUB_CACHE", "HF_HOME", "HOME"])
def test_the_local_cache_is_found_where_huggingface_hub_puts_it(tmp_path: Path,
                                                                where: str) -> None:
    env: dict[str, str | None] = {"HF_HUB_CACHE": None, "HF_HOME": None}
    if where == "HF_HUB_CACHE":
        cache = tmp_path / "anywhere"
        env["HF_HUB_CACHE"] = str(cache)
    elif where == "HF_HOME":
        cache = tmp_path / "hf" / "hub"
        env["HF_HOME"] = str(tmp_path / "hf")
    else:
        cache = tmp_path / ".cache" / "huggingface" / "hub"
        env["HOME"] = str(tmp_path)
    _cached_by_another_tool(cache)
    run = _run("inventory", "org/tiny", "--format", "json", cache=cache, HF_HUB_OFFLINE="1",
               **env)
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["model"] == "org/tiny"
    assert data["weight_bytes_source"] == "checkpoint headers"


def test_a_mistyped_file_path_never_goes_to_the_hub(hub: Hub, tmp_path: Path) -> None:
    run = _run("kv", "--model", "examples/dense-7O.yaml", cache=tmp_path / "hub", hub=hub)
    _one_line_exit_2(run, "no such file")
    assert hub.requests == []


def test_a_damaged_kept_header_is_one_line(hub: Hub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    assert _run("kv", "--model", "org/tiny", cache=cache, hub=hub).code == 0
    kept = cache / "models--org--tiny" / "safetensors-headers" / COMMIT
    shard_file = kept / "model-00001-of-00002.safetensors"
    shard_file.write_bytes(shard_file.read_bytes()[:20])
    run = _run("kv", "--model", "org/tiny", cache=cache, HF_HUB_OFFLINE="1")
    _one_line_exit_2(run, "is not a whole safetensors header", "delete")
