"""Model folders: `config.json` beside safetensors shards and/or their index, and Hub caches.

- `model.safetensors.index.json` maps each tensor to its shard (`weight_map`) and gives the
  exact tensor bytes of the whole checkpoint (`metadata.total_size`). With every shard it
  names present, each shard's header is read; with the index alone (or shards missing), the
  sizes come from the index and the tensor names from its weight map.
- Without an index: `model.safetensors`, else the `*-of-*.safetensors` shards, else every
  `*.safetensors` file (consolidated copies beside HF shards are left out, not counted twice).
- A Hugging Face cache folder `models--org--name` resolves `refs/main` to `snapshots/<rev>`
  (or its only snapshot); snapshot files are symlinks into `blobs/`, followed as usual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_inventory.bounds import (
    CHECKPOINT_FILES,
    CHECKPOINT_TENSORS,
    INDEX_BYTES,
    REF_BYTES,
    SIZE,
    TENSOR_NAME,
)
from llm_inventory.checkpoint.classify import classify
from llm_inventory.checkpoint.safetensors import TensorTable, read_safetensors
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.model import CheckpointTensor
from llm_inventory.spec.yaml_io import loads_json

INDEX_NAME = "model.safetensors.index.json"
# DeepSeek-V3's index is about 9 MB; a limit keeps a stray huge file from being parsed.
MAX_INDEX_BYTES = INDEX_BYTES
_SHARD = re.compile(r".*-\d+-of-\d+\.safetensors$")


@dataclass
class FolderCheckpoint:
    """What a folder's safetensors files and index say (None fields: not present)."""

    table: TensorTable | None = None  # every header, when read
    index_total: int | None = None  # metadata.total_size, when the index gives it
    index_names: list[tuple[str, str]] = field(default_factory=list)  # (tensor, shard)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.table is not None or self.index_total is not None

    def index_tensors(self) -> list[CheckpointTensor]:
        """The index's tensor names, classified, without dtypes or sizes."""
        tensors = []
        for name, shard in self.index_names:
            component, role, layer = classify(name)
            tensors.append(CheckpointTensor(
                name=name, dtype=None, shape=None, elements=None, bytes=None, file=shard,
                component=component, role=role, layer=layer,
            ))
        return tensors


def _read_index(path: Path) -> tuple[dict[str, str], int | None]:
    from llm_inventory.files import read_bounded

    label = str(path)
    try:  # bounded, a regular file: a FIFO index is refused, never waited on
        text = read_bounded(path, MAX_INDEX_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(label, f"is not UTF-8 text (byte {exc.start})") from exc
    data: Any = loads_json(text, label)
    if not isinstance(data, dict):
        raise InputError(label, "expected a JSON object with weight_map")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise InputError(f"{label}: weight_map", "must map tensor names to shard file names")
    CHECKPOINT_TENSORS.check(f"{label}: weight_map", len(weight_map))
    CHECKPOINT_FILES.check(f"{label}: weight_map shards", len(set(weight_map.values())))
    long = next((name for name in weight_map if len(name) > TENSOR_NAME), None)
    if long is not None:
        raise InputError(f"{label}: weight_map", f"tensor name {excerpt(long)} is longer than "
                         f"{TENSOR_NAME:,} characters")
    for shard in set(weight_map.values()):
        if Path(shard).name != shard or shard in ("", ".", ".."):
            raise InputError(f"{label}: weight_map", f"shard {excerpt(shard)} is not a file "
                             "name in the folder")
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, int | float) or total < 0
        or (isinstance(total, float) and not total.is_integer()) or total > SIZE.limit
    ):
        raise InputError(f"{label}: metadata.total_size",
                         f"must be a non-negative whole number of bytes, got {excerpt(total)}")
    return weight_map, None if total is None else int(total)


def _unindexed_files(folder: Path, notes: list[str]) -> list[Path]:
    files = sorted(p for p in folder.glob("*.safetensors") if p.is_file())
    if not files:
        return []
    CHECKPOINT_FILES.check(f"{folder}: *.safetensors", len(files))
    single = folder / "model.safetensors"
    chosen = [single] if single.is_file() else [p for p in files if _SHARD.match(p.name)]
    if not chosen:
        chosen = files
    left = [p.name for p in files if p not in chosen]
    if left:
        notes.append(f"left out {', '.join(left)}: the checkpoint is "
                     f"{', '.join(p.name for p in chosen)}")
    return chosen


def read_tables(files: list[Path]) -> TensorTable:
    """Every file's header, concatenated; a tensor in two files is an error."""
    tensors: list[CheckpointTensor] = []
    metadata: dict[str, str] = {}
    seen: dict[str, str] = {}
    for path in files:
        table = read_safetensors(path)
        for tensor in table.tensors:
            other = seen.get(tensor.name)
            if other is not None:
                raise InputError(str(path), f"tensor {tensor.name!r} is also in {other}")
            seen[tensor.name] = path.name
        tensors += table.tensors
        CHECKPOINT_TENSORS.check(f"{path.parent}: tensors in the checkpoint", len(tensors))
        metadata = metadata or table.metadata
    return TensorTable(files=[p.name for p in files], tensors=tensors, metadata=metadata)


def read_folder(folder: Path) -> FolderCheckpoint:
    """The safetensors checkpoint in `folder`: headers when all present, else the index."""
    result = FolderCheckpoint()
    index_path = folder / INDEX_NAME
    if index_path.is_file():
        weight_map, total = _read_index(index_path)
        shards = sorted(set(weight_map.values()))
        missing = [s for s in shards if not (folder / s).is_file()]
        result.index_total = total
        result.index_names = list(weight_map.items())
        result.files = shards
        if missing:
            if total is None:
                result.notes.append(f"{INDEX_NAME} gives no metadata.total_size and "
                                    f"{len(missing)} of {len(shards)} shards are missing: "
                                    "no checkpoint sizes")
                result.index_total = None
                result.index_names = []
                return result
            if len(missing) < len(shards):
                result.notes.append(f"{len(missing)} of {len(shards)} shards are missing "
                                    f"(first: {missing[0]}); sizes come from {INDEX_NAME}")
            else:
                result.notes.append(f"no shard is present; sizes come from {INDEX_NAME}")
            return result
        table = read_tables([folder / s for s in shards])
        result.table = table
        _check_against_index(table, weight_map, total, result.notes)
        return result
    files = _unindexed_files(folder, result.notes)
    if files:
        result.table = read_tables(files)
        result.files = [p.name for p in files]
    return result


def _check_against_index(
    table: TensorTable, weight_map: dict[str, str], total: int | None, notes: list[str]
) -> None:
    if total is not None and total != table.total_bytes:
        notes.append(f"{INDEX_NAME} gives total_size {total:,} B but the headers hold "
                     f"{table.total_bytes:,} B of tensors; the headers are used")
    in_headers = {t.name: t.file for t in table.tensors}
    unlisted = [n for n in in_headers if n not in weight_map]
    absent = [n for n in weight_map if n not in in_headers]
    moved = [n for n, f in weight_map.items() if n in in_headers and in_headers[n] != f]
    for names, what in ((unlisted, "in the shards but not in the index"),
                        (absent, "in the index but in no shard"),
                        (moved, "in a different shard than the index says")):
        if names:
            notes.append(f"{len(names)} tensor(s) {what} (first: {names[0]})")


# --- Hugging Face cache folders -------------------------------------------------------------

_HUB_REPO = re.compile(r"^(models|datasets|spaces)--(.+)$")
# A snapshot folder's name: a commit hash, or the branch or tag name the Hub client wrote.
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


def hub_name(folder: Path) -> str | None:
    """`org/name` for a `models--org--name` folder (or a snapshot inside one)."""
    for candidate in (folder, folder.parent.parent if folder.parent.name == "snapshots"
                      else None):
        if candidate is None:
            continue
        match = _HUB_REPO.match(candidate.name)
        if match:
            return match.group(2).replace("--", "/")
    return None


def is_hub_cache(folder: Path) -> bool:
    return (folder / "snapshots").is_dir() and not (folder / "config.json").exists()


def resolve_hub_cache(folder: Path) -> Path:
    """The snapshot folder a Hub cache folder stands for: refs/main, else its only snapshot."""
    from llm_inventory.files import exists, inside, read_bounded, regular_inside

    snapshots = folder / "snapshots"
    ref = folder / "refs" / "main"
    if exists(ref):
        # A commit hash: read bounded, from a regular file inside the cache folder (a FIFO,
        # a link loop or a link out of the cache is refused, never waited on or followed).
        raw = read_bounded(ref, REF_BYTES, within=folder)
        revision = raw.decode("utf-8", errors="replace").strip()
        if not _REVISION.match(revision):
            raise InputError(str(ref), f"does not hold a revision name, got {excerpt(revision)}")
        target = snapshots / revision
        if not target.is_dir():
            raise InputError(str(folder), f"refs/main names revision {excerpt(revision)}, "
                             "which is not in snapshots/")
        inside(target, folder)
        if exists(target / "config.json"):
            regular_inside(target / "config.json", folder)
        return target
    found = sorted(p.name for p in snapshots.iterdir() if p.is_dir())
    if len(found) == 1:
        return snapshots / found[0]
    if not found:
        raise InputError(str(folder), "Hub cache folder has no snapshots (nothing downloaded)")
    raise InputError(str(folder), f"has {len(found)} snapshots and no refs/main: "
                     f"{', '.join(found)}; pass one, e.g. {snapshots / found[0]}")
