"""Hugging Face ids (`org/name`, `org/name@revision`): the local Hub cache, then the Hub.

After a preset alias (the loader tries that first), an id is looked up in the local cache:
`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`, read as any Hub cache
folder is (config.json, the safetensors index, and the shards' headers when present). Only
when it is not there, and only with the optional `hub` extra installed (huggingface_hub, for
the token and request headers the Hub expects) and `HF_HUB_OFFLINE` unset, is the Hub at
`$HF_ENDPOINT` asked: config.json and model.safetensors.index.json are downloaded whole;
each shard's header is read by two HTTP range requests (its 8-byte length, then that many
bytes), never a weight.

Everything is fetched before anything is written, and then written in the cache's own
layout (blobs/, snapshots/<commit>/ linking to them, refs/<revision>), each file to a
temporary name first and renamed, the snapshot last: a failure leaves the cache as it was.
Headers are not the files they open, so they go to `safetensors-headers/<commit>/` beside
the snapshot (other tools never read it), with a manifest of the shards' sizes written last.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from llm_inventory.bounds import FILE_BYTES, REF_BYTES, SAFETENSORS_HEADER_BYTES
from llm_inventory.errors import InputError

HUB_ID = re.compile(
    r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<revision>[\w./-]+))?$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
DEFAULT_ENDPOINT = "https://huggingface.co"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
HEADERS = "safetensors-headers"
MANIFEST = "manifest.json"
MAX_CONFIG_BYTES = 4 * 2**20  # as for any model file the loader reads
TIMEOUT_S = 30.0


# A name ending so is a file the user meant (and mistyped), never a repository to look up.
FILE_SUFFIXES = (".yaml", ".yml", ".json", ".gguf", ".safetensors")


def parse_hub_id(text: str) -> tuple[str, str | None] | None:
    """(`org/name`, revision or None) when `text` reads as a Hub id, else None."""
    match = HUB_ID.match(text.strip())
    if match is None or ".." in text or match["repo"].lower().endswith(FILE_SUFFIXES):
        return None
    return match["repo"], match["revision"]


def hub_cache() -> Path:
    """The Hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def repo_folder(repo: str) -> Path:
    return hub_cache() / ("models--" + repo.replace("/", "--"))


def cached_snapshot(repo: str, revision: str | None) -> Path | None:
    """The cached snapshot of `repo` at `revision` (a branch, tag or commit) holding a
    config.json, or None when the cache does not have it."""
    from llm_inventory.files import exists, is_dir, read_bounded, regular_inside

    folder = repo_folder(repo)
    if not is_dir(folder):
        return None
    wanted = revision or "main"
    commit = wanted if COMMIT.match(wanted) else None
    if commit is None:
        ref = folder / "refs" / wanted
        if not exists(ref):
            return None
        # Bounded, inside the repo's folder, a regular file: a FIFO, a link loop or a link
        # out of the cache is refused (one line, exit 2), never followed or waited on.
        raw = read_bounded(ref, REF_BYTES, within=folder)
        commit = raw.decode("utf-8", errors="replace").strip()
    if not COMMIT.match(commit):
        return None
    snapshot = folder / "snapshots" / commit
    config = snapshot / "config.json"
    if not exists(config):
        return None
    regular_inside(config, folder)
    return snapshot


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


# --- headers kept beside a snapshot ---------------------------------------------------------


def stored_headers(snapshot: Path) -> tuple[list[Any], list[str]] | None:
    """The tensors of the headers kept for `snapshot` and the shard names, when every one
    is kept and a shard is missing from the snapshot itself (else None: read the shards)."""
    from llm_inventory.checkpoint.safetensors import parse_header
    from llm_inventory.files import read_bounded

    cache = snapshot.parent.parent
    kept = cache / HEADERS / snapshot.name
    try:
        manifest = json.loads(read_bounded(kept / MANIFEST, FILE_BYTES, within=cache))
        sizes = {str(k): int(v) for k, v in manifest["sizes"].items()}
    except (InputError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if all((snapshot / name).is_file() for name in sizes):
        return None
    tensors: list[Any] = []
    seen: set[str] = set()
    for name, size in sorted(sizes.items()):
        path = kept / name
        raw = read_bounded(path, SAFETENSORS_HEADER_BYTES + 8, within=cache)
        if len(raw) < 8 or struct.unpack("<Q", raw[:8])[0] != len(raw) - 8:
            raise InputError(str(path), "is not a whole safetensors header; delete "
                             f"{kept} to read it from the Hub again")
        table = parse_header(raw[8:], size, path, name)
        for tensor in table.tensors:
            if tensor.name in seen:
                raise InputError(str(path), f"tensor {tensor.name!r} is also in another shard")
            seen.add(tensor.name)
        tensors += table.tensors
    return tensors, sorted(sizes)


# --- the Hub --------------------------------------------------------------------------------


@dataclass
class _Fetched:
    body: bytes
    commit: str | None
    etag: str | None
    total: int | None  # the whole file's size (Content-Range, else Content-Length)


class _NoAuthOnRedirect(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but never send the token to another host (the Hub's file CDN)."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Any:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


def _endpoint(text: str) -> str:
    """`text` without its trailing slash, once it is an http(s) URL with a host and a valid
    port; else InputError naming HF_ENDPOINT (urllib would raise ValueError)."""
    from llm_inventory.errors import excerpt

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise InputError("HF_ENDPOINT", f"is not a URL ({exc}): {excerpt(text)}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("HF_ENDPOINT", f"must be an http:// or https:// URL with a host, "
                         f"got {excerpt(text)}")
    return text.rstrip("/")


class Hub:
    """Reads one repository at one revision from `$HF_ENDPOINT`."""

    def __init__(self, repo: str, revision: str | None, reference: str) -> None:
        # Checked before huggingface_hub is imported: its import parses HF_ENDPOINT too.
        endpoint = _endpoint(os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
        # Lazily exported, hence not visible to the type checker.
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

        from llm_inventory import __version__

        self.repo = repo
        self.revision = revision or "main"
        self.reference = reference
        self.endpoint = endpoint
        self.headers = build_hf_headers(library_name="llm-inventory",
                                        library_version=__version__)
        self.opener = urllib.request.build_opener(_NoAuthOnRedirect())

    def url(self, file: str) -> str:
        return (f"{self.endpoint}/{quote(self.repo)}/resolve/{quote(self.revision, safe='')}/"
                f"{quote(file)}")

    def _fail(self, file: str, message: str) -> InputError:
        return InputError(self.reference, f"{file} from {self.endpoint}: {message}")

    def get(self, file: str, *, limit: int, start: int = 0, length: int | None = None,
            missing_ok: bool = False) -> _Fetched | None:
        """GET `file` (bytes start .. start+length-1 when `length` is given), reading at
        most `limit` bytes; None for a missing file when `missing_ok`."""
        headers = dict(self.headers)
        if length is not None:
            headers["Range"] = f"bytes={start}-{start + length - 1}"
        request = urllib.request.Request(self.url(file), headers=headers)
        try:
            with self.opener.open(request, timeout=TIMEOUT_S) as response:
                ranged = response.status == 206
                if length is not None and not ranged and start:
                    raise self._fail(file, "the server ignores range requests; refusing to "
                                     "download the whole file")
                wanted = length if length is not None else limit + 1
                body = _read(response, wanted)
                if length is None and len(body) > limit:
                    raise self._fail(file, f"is larger than the {limit:,}-byte limit")
                return _Fetched(body, response.headers.get("X-Repo-Commit"),
                                _etag(response.headers), _total(response.headers))
        except urllib.error.HTTPError as exc:
            exc.close()
            code = exc.headers.get("X-Error-Code", "") if exc.headers else ""
            if exc.code == 404 and missing_ok and code not in ("RepoNotFound",
                                                                "RevisionNotFound"):
                return None
            raise self._fail(file, _http_message(exc.code, code, self.repo,
                                                 self.revision)) from exc
        except (urllib.error.URLError, HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise self._fail(file, f"the connection failed ({reason}); nothing was "
                             "written to the cache") from exc


def _read(response: Any, count: int) -> bytes:
    """Up to `count` bytes of the body; a body cut short raises an OSError-like error."""
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = response.read(min(left, 2**20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _etag(headers: Any) -> str | None:
    value = headers.get("X-Linked-Etag") or headers.get("ETag")
    if not value:
        return None
    value = value.strip().removeprefix("W/").strip('"')
    return value if re.fullmatch(r"[\w.-]+", value) else None


def _total(headers: Any) -> int | None:
    match = re.fullmatch(r"bytes \d+-\d+/(\d+)", headers.get("Content-Range", "").strip())
    if match:
        return int(match[1])
    length = headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _http_message(status: int, code: str, repo: str, revision: str) -> str:
    if status == 401 or code == "GatedRepo" or status == 403:
        token = "HF_TOKEN is set but has no access" if os.environ.get("HF_TOKEN") else \
            "set HF_TOKEN to a token with access"
        return (f"HTTP {status}: {repo} is gated or private; {token} (accept its terms on "
                "the Hub first)")
    if status == 404 and code == "RevisionNotFound":
        return f"HTTP 404: {repo} has no revision {revision!r}"
    if status == 404 and code == "EntryNotFound":
        return f"HTTP 404: no such file in {repo}"
    if status == 404:
        return f"HTTP 404: no repository {repo}"
    return f"HTTP {status}"


def _header(hub: Hub, shard: str, *, missing_ok: bool = False) -> tuple[bytes, int] | None:
    """One shard's 8 + N header bytes and the shard's size, by two range requests (None:
    no such file, when `missing_ok`)."""
    from llm_inventory.checkpoint.safetensors import MAX_HEADER_BYTES, parse_header

    first = hub.get(shard, limit=8, start=0, length=8, missing_ok=missing_ok)
    if first is None:
        return None
    if len(first.body) < 8 or first.total is None:
        raise hub._fail(shard, "too short for a safetensors header (an 8-byte length comes "
                        "first), or its size is not given")
    (length,) = struct.unpack("<Q", first.body)
    if length > MAX_HEADER_BYTES:
        raise hub._fail(shard, f"declares a {length:,}-byte header, over the format's "
                        f"{MAX_HEADER_BYTES:,}-byte limit")
    if 8 + length > first.total:
        raise hub._fail(shard, f"declares a {length:,}-byte header but the file holds only "
                        f"{first.total - 8:,} bytes after its 8-byte length")
    rest = hub.get(shard, limit=length, start=8, length=length)
    assert rest is not None
    if len(rest.body) != length:
        raise hub._fail(shard, f"ended after {len(rest.body):,} of its {length:,} header "
                        "bytes; nothing was written to the cache")
    parse_header(rest.body, first.total, Path(f"{hub.repo}/{shard}"), shard)
    return first.body + rest.body, first.total


def _shards(hub: Hub, index: bytes) -> list[str]:
    try:
        weight_map = json.loads(index.decode("utf-8"))["weight_map"]
        names = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise hub._fail(INDEX, "is not an index (a JSON object with a weight_map)") from exc
    for name in names:
        if not isinstance(name, str) or Path(name).name != name or \
                not name.endswith(".safetensors"):
            raise hub._fail(INDEX, f"names shard {name!r}, not a .safetensors file name")
    return names


def download(repo: str, revision: str | None, reference: str) -> Path:
    """Fetch config.json, the index and every shard's header into the cache; the snapshot.

    Raises InputError (one line: what failed and why) when the Hub cannot be read.
    """
    from llm_inventory.checkpoint.folder import MAX_INDEX_BYTES

    hub = Hub(repo, revision, reference)
    config = hub.get("config.json", limit=MAX_CONFIG_BYTES)
    assert config is not None
    commit = config.commit
    if commit is None or not COMMIT.match(commit):
        raise hub._fail("config.json", "the response names no commit (X-Repo-Commit); is "
                        "HF_ENDPOINT a Hub?")
    hub.revision = commit  # every later file from the same commit
    files: dict[str, _Fetched] = {"config.json": config}
    index = hub.get(INDEX, limit=MAX_INDEX_BYTES, missing_ok=True)
    if index is not None:
        files[INDEX] = index
        shards = _shards(hub, index.body)
    else:
        shards = [SINGLE]
    headers: dict[str, tuple[bytes, int]] = {}
    for shard in shards:
        # Without an index, model.safetensors may be absent too: the config alone then.
        found = _header(hub, shard, missing_ok=index is None)
        if found is not None:
            headers[shard] = found
    _store(repo, revision, commit, files, headers)
    snapshot = repo_folder(repo) / "snapshots" / commit
    return snapshot


def _atomic_write(path: Path, data: bytes) -> None:
    from llm_inventory.files import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


def _link(target: Path, link: Path) -> None:
    """A snapshot entry pointing into blobs/ (a copy where symlinks are not allowed)."""
    try:
        link.symlink_to(os.path.relpath(target, link.parent))
    except OSError:
        shutil.copyfile(target, link)


def _store(repo: str, revision: str | None, commit: str, files: dict[str, _Fetched],
           headers: dict[str, tuple[bytes, int]]) -> None:
    """Write what was fetched into the cache: blobs, headers, then the snapshot, then refs."""
    import hashlib

    folder = repo_folder(repo)
    try:
        blobs: dict[str, Path] = {}
        for name, fetched in files.items():
            tag = fetched.etag or hashlib.sha256(fetched.body).hexdigest()
            blob = folder / "blobs" / tag
            if not blob.is_file():
                _atomic_write(blob, fetched.body)
            blobs[name] = blob
        if headers:
            _store_headers(folder / HEADERS / commit, headers)
        snapshot = folder / "snapshots" / commit
        if snapshot.is_dir():  # a snapshot another tool began: add what it lacks
            for name, blob in blobs.items():
                if not (snapshot / name).exists():
                    _link(blob, snapshot / name)
        else:
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=snapshot.parent, prefix=".tmp-"))
            try:
                for name, blob in blobs.items():
                    _link(blob, staging / name)
                os.rename(staging, snapshot)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        if revision is None or revision != commit:
            _atomic_write(folder / "refs" / (revision or "main"), commit.encode())
    except OSError as exc:
        raise InputError(str(folder), f"cannot write the Hub cache: {exc.strerror or exc}") \
            from exc


def _store_headers(target: Path, headers: dict[str, tuple[bytes, int]]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        for name, (raw, _) in headers.items():
            (staging / name).write_bytes(raw)
        sizes = {name: size for name, (_, size) in headers.items()}
        (staging / MANIFEST).write_text(json.dumps({"sizes": sizes}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def resolve(reference: str, repo: str, revision: str | None,
            load_folder: Callable[[Path, str], Any]) -> Any:
    """Load a Hub id from the cache, else (extra installed, not offline) from the Hub."""
    snapshot = cached_snapshot(repo, revision)
    if snapshot is not None:
        return load_folder(snapshot, repo)
    where = (f"no such file or folder, and as a Hugging Face id not in the Hub cache "
             f"({repo_folder(repo)})")
    if offline():
        raise InputError(reference, f"{where}, and HF_HUB_OFFLINE is set")
    _endpoint(os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)  # before the import reads it
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise InputError(reference, f"{where}; to read it from the Hub (headers only), "
                         "install the hub extra: pip install 'llm-inventory[hub]'") from None
    return load_folder(download(repo, revision, reference), repo)
