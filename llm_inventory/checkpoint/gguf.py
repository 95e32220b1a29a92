"""GGUF files (llama.cpp): metadata and tensor table, read with the `gguf` package.

The magic number and version are checked here first, so a file that is not GGUF is a clean
error before the optional reader is imported. The reader maps the file and parses only the
header: key/value metadata and the tensor infos. Bytes per tensor follow the quantization
type's block layout: elements / block size × bytes per block (Q4_K: 144 bytes per 256
elements). Split sets (`name-00001-of-00003.gguf`) are read whole: the first split holds
the metadata, every split its own tensors.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_inventory.bounds import (
    CHECKPOINT_FILES,
    GGUF_ARRAY,
    GGUF_KEYS,
    GGUF_TENSORS,
    TENSOR_NAME,
)
from llm_inventory.checkpoint.classify import classify
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.model import CheckpointTensor

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
# Integer arrays up to this length are kept (per-layer head counts); longer ones, such as
# the token list, only by their length.
_MAX_KEPT_ARRAY = 4096


@dataclass(frozen=True)
class ArrayLength:
    """A metadata array kept only by its length (token lists and other long arrays)."""

    length: int


@dataclass
class GGUFCheckpoint:
    """One GGUF model: its metadata (from the first split) and every split's tensors."""

    path: Path
    files: list[str]
    metadata: dict[str, Any]
    tensors: list[CheckpointTensor] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(t.bytes or 0 for t in self.tensors)


def check_magic(path: Path) -> None:
    """Refuse files that do not start with GGUF's magic number and a supported version,
    or whose tensor and key counts are past their bounds (or the file's own size)."""
    try:
        size = os.stat(path).st_size
        with open(path, "rb", buffering=0) as handle:
            head = handle.read(24)
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}") from exc
    if len(head) < 24 or size < 24:
        raise InputError(str(path), f"is {size:,} bytes long: too short for a GGUF header")
    if head[:4] != GGUF_MAGIC:
        raise InputError(str(path), f"is not a GGUF file: it starts with {head[:4]!r}, "
                         f"not {GGUF_MAGIC!r}")
    order = "<"
    (version,) = struct.unpack("<I", head[4:8])
    if not version & 0xFFFF:  # a big-endian file: the reader swaps it, so may we
        order = ">"
        (version,) = struct.unpack(">I", head[4:8])
    if version not in SUPPORTED_VERSIONS:
        raise InputError(str(path), f"is GGUF version {version}; supported: "
                         + ", ".join(map(str, SUPPORTED_VERSIONS)))
    tensors, keys = struct.unpack(order + "QQ", head[8:24])
    GGUF_TENSORS.check(f"{path}: tensor count", tensors)
    GGUF_KEYS.check(f"{path}: metadata key count", keys)
    # Each tensor info takes at least 24 bytes and each key/value 13: a count the file
    # cannot hold is corrupt, whatever the reader would make of it.
    if 24 + 24 * tensors + 13 * keys > size:
        raise InputError(str(path), f"declares {tensors:,} tensors and {keys:,} metadata keys, "
                         f"more than its {size:,} bytes can hold; the file is truncated")


def split_files(path: Path) -> list[Path]:
    """Every file of a split set, in order, given any one of them; [path] when not split."""
    match = _SPLIT.match(path.name)
    if match is None:
        return [path]
    count = int(match.group("count"))
    if count < 1 or int(match.group("no")) > count:
        raise InputError(str(path), "split number is past the split count")
    CHECKPOINT_FILES.check(f"{path}: split count", count)
    files = [path.with_name(f"{match.group('stem')}-{i:05d}-of-{count:05d}.gguf")
             for i in range(1, count + 1)]
    missing = [p.name for p in files if not p.is_file()]
    if missing:
        raise InputError(str(path), f"is one of {count} splits and {len(missing)} are "
                         f"missing (first: {missing[0]})")
    return files


def _import_reader() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise InputError("model", "reading GGUF files needs the optional `gguf` package: "
                         "pip install 'llm-inventory[gguf]'") from exc
    return gguf


def _reader_class(gguf: Any) -> Any:
    """The package's reader, stepping over long metadata arrays in one go.

    The stock reader builds one numpy view per array element: seconds for a 150k-token
    vocabulary with its scores, types and merges. Arrays longer than _MAX_KEPT_ARRAY are
    only measured here, so they are skipped whole (strings by walking their lengths) and
    everything else — shorter arrays, scalars, tensor infos, alignment, byte order — is
    left to the package. Should its private helper change shape, the stock reader is used.
    """
    import inspect

    import numpy as np

    base = gguf.GGUFReader
    helper = getattr(base, "_get_field_parts", None)
    if helper is None or list(inspect.signature(helper).parameters) != [
        "self", "orig_offs", "raw_type"
    ]:
        return base
    array, string = gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING

    class Reader(base):  # type: ignore[misc, valid-type]
        def _get_field_parts(self, orig_offs: int, raw_type: int) -> Any:
            if raw_type != array:
                return super()._get_field_parts(orig_offs, raw_type)
            item = self._get(orig_offs, np.uint32)
            length = self._get(orig_offs + 4, np.uint64)
            count = int(length[0])
            kind = int(item[0])
            scalar = self.gguf_scalar_to_np.get(kind)
            if count > GGUF_ARRAY.limit:
                raise ValueError(f"a metadata array declares {count:,} entries, over the "
                                 f"bound of {GGUF_ARRAY.limit:,}")
            if count <= _MAX_KEPT_ARRAY or (scalar is None and kind != string):
                return super()._get_field_parts(orig_offs, raw_type)
            start = orig_offs + 12
            if scalar is not None:
                end = start + np.dtype(scalar).itemsize * count
            else:
                native = (sys.byteorder == "little") == (self.byte_order == "I")
                fmt = "<Q" if native else ">Q"
                buffer = memoryview(self.data)
                end = start
                for _ in range(count):
                    end += 8 + struct.unpack_from(fmt, buffer, end)[0]
            if end > len(self.data):
                raise ValueError("a metadata array runs past the end of the file")
            values = self.data[start:end]
            return end - orig_offs, [item, length, values], [2] * count, [array, kind]

    return Reader


def _value(entry: Any, gguf: Any) -> Any:
    kinds = entry.types
    if not kinds:
        return None
    if kinds[0] == gguf.GGUFValueType.ARRAY:
        if len(kinds) > 1 and kinds[-1] != gguf.GGUFValueType.STRING and (
            len(entry.data) <= _MAX_KEPT_ARRAY
        ):
            return list(entry.contents())
        return ArrayLength(len(entry.data))
    return entry.contents()


def _read_one(path: Path, gguf: Any) -> tuple[dict[str, Any], list[CheckpointTensor]]:
    check_magic(path)
    size = os.stat(path).st_size
    try:
        reader = _reader_class(gguf)(path, "r")
        metadata = {name: _value(f, gguf) for name, f in reader.fields.items()
                    if not name.startswith("GGUF.")}
        infos = [(t.name, t.tensor_type, [int(d) for d in t.shape], int(t.n_elements),
                  int(t.data_offset)) for t in reader.tensors]
    # The reader reports malformed files with assorted exceptions (ValueError, KeyError,
    # IndexError from numpy views past the end of the map …): all mean "not readable".
    except Exception as exc:
        raise InputError(str(path), f"is not a readable GGUF file (truncated or corrupt: "
                         f"{exc})") from exc
    tensors: list[CheckpointTensor] = []
    for name, kind, dims, elements, offset in infos:
        if len(name) > TENSOR_NAME:
            raise InputError(str(path), f"tensor name {excerpt(name)} is longer than "
                             f"{TENSOR_NAME:,} characters")
        if kind not in gguf.GGML_QUANT_SIZES:
            raise InputError(str(path), f"tensor {excerpt(name)} has type {kind.name}, whose "
                             "block size the gguf package does not know")
        block, type_size = gguf.GGML_QUANT_SIZES[kind]
        if dims and dims[0] % block:
            raise InputError(str(path), f"tensor {excerpt(name)}: rows of {dims[0]} elements "
                             f"are not whole {kind.name} blocks of {block}")
        nbytes = elements // block * type_size
        if offset + nbytes > size:
            raise InputError(str(path), f"tensor {excerpt(name)} ends at byte {offset + nbytes:,}, "
                             f"past the end of the file ({size:,} bytes)")
        component, role, layer = classify(name)
        tensors.append(CheckpointTensor(
            name=name, dtype=kind.name, shape=tuple(dims[::-1]), elements=elements, bytes=nbytes,
            file=path.name, component=component, role=role, layer=layer,
        ))
    return metadata, tensors


def read_gguf(path: Path) -> GGUFCheckpoint:
    """Read a GGUF file (or every file of its split set): metadata and tensor table."""
    check_magic(path)
    files = split_files(path)
    gguf = _import_reader()
    metadata: dict[str, Any] = {}
    tensors: list[CheckpointTensor] = []
    seen: set[str] = set()
    for index, file in enumerate(files):
        values, found = _read_one(file, gguf)
        if index == 0:
            metadata = values
        for tensor in found:
            if tensor.name in seen:
                raise InputError(str(file), f"tensor {excerpt(tensor.name)} is in two splits")
            seen.add(tensor.name)
        tensors += found
        GGUF_TENSORS.check(f"{files[0]}: tensors in the split set", len(tensors))
    expected = metadata.get("split.tensors.count")
    if len(files) > 1 and isinstance(expected, int) and expected != len(tensors):
        raise InputError(str(files[0]), f"split set declares {expected:,} tensors but its "
                         f"{len(files)} files hold {len(tensors):,}")
    return GGUFCheckpoint(path=files[0], files=[f.name for f in files], metadata=metadata,
                          tensors=tensors)
