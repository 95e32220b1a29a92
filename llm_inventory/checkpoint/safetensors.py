"""One `.safetensors` header: an 8-byte little-endian length N, then N bytes of JSON.

The JSON maps each tensor name to {dtype, shape, data_offsets} (offsets relative to the end
of the header) and may hold `__metadata__` (strings). Exactly 8 + N bytes are read, never
tensor data. The checks follow the format's own loader: the header is at most 100 MB, every
dtype is known, each tensor's byte range holds exactly elements × dtype width, the ranges
tile the data from 0 without gaps or overlaps, and the data ends exactly at the end of the
file. Any failure is an InputError naming the file and what is wrong.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_inventory.bounds import (
    CHECKPOINT_TENSORS,
    SAFETENSORS_HEADER_BYTES,
    SIZE,
    TENSOR_NAME,
    TENSOR_RANK,
)
from llm_inventory.checkpoint.classify import classify, dtype_tallies
from llm_inventory.errors import InputError, excerpt
from llm_inventory.spec.model import CheckpointTally, CheckpointTensor

# The format's own cap on the header (safetensors rejects larger headers as corrupt).
MAX_HEADER_BYTES = SAFETENSORS_HEADER_BYTES

# Element width in bits of every dtype the format defines.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


class TensorTable(BaseModel):
    """Tensors read from one or more checkpoint headers, with totals per dtype.

    `bytes` and `elements` are what the files hold (packed integer formats count stored
    elements); `files` are the files read, in order.
    """

    model_config = ConfigDict(frozen=True)

    files: list[str]
    tensors: list[CheckpointTensor]
    metadata: dict[str, str] = {}

    @property
    def total_bytes(self) -> int:
        return sum(t.bytes or 0 for t in self.tensors)

    @property
    def elements(self) -> int:
        return sum(t.elements or 0 for t in self.tensors)

    @property
    def by_dtype(self) -> list[CheckpointTally]:
        return dtype_tallies(self.tensors)


def _fail(path: Path, message: str) -> InputError:
    return InputError(str(path), message)


def _read_exact(handle: Any, count: int) -> bytes:
    """Read `count` bytes (fewer only at the end of the file), with no read-ahead."""
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = handle.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_header_bytes(path: Path) -> tuple[bytes, int]:
    """The header's JSON bytes and the file's size; reads exactly 8 + N bytes."""
    try:
        size = os.stat(path).st_size
        # Unbuffered: a buffered reader would fetch past the header.
        with open(path, "rb", buffering=0) as handle:
            prefix = _read_exact(handle, 8)
            if len(prefix) < 8:
                raise _fail(path, f"is {size:,} bytes long: too short for a safetensors "
                            "header (an 8-byte length comes first); the file is truncated")
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER_BYTES:
                raise _fail(path, f"declares a {length:,}-byte header, over the format's "
                            f"{MAX_HEADER_BYTES:,}-byte limit; not a safetensors file?")
            if 8 + length > size:
                raise _fail(path, f"declares a {length:,}-byte header but the file is only "
                            f"{size:,} bytes; the file is truncated")
            raw = _read_exact(handle, length)
    except OSError as exc:
        raise _fail(path, f"cannot be read: {exc.strerror or exc}") from exc
    if len(raw) < length:
        raise _fail(path, "ended inside its header; the file is truncated")
    return raw, size


def _dims(value: Any) -> tuple[int, ...] | None:
    """A list of integers in [0, 2**64] (JSON true/false are not integers) as a tuple."""
    if type(value) is not list or not set(map(type, value)) <= {int}:
        return None
    if value and (min(value) < 0 or max(value) > SIZE.limit):  # the format's u64 fields
        return None
    return tuple(value)


def parse_header(raw: bytes, size: int, path: Path, file: str = "") -> TensorTable:
    """Validate header bytes against a file of `size` bytes and tabulate its tensors."""
    if raw.count(b'"data_offsets"') > CHECKPOINT_TENSORS.limit:  # before parsing it all
        raise _fail(path, f"tensors: holds more than {CHECKPOINT_TENSORS.limit:,} tensors, the "
                    "bound on a checkpoint")
    try:
        header = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(path, f"header is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise _fail(path, f"header is not JSON (line {exc.lineno}, column {exc.colno}: "
                    f"{exc.msg})") from exc
    except RecursionError as exc:
        raise _fail(path, "header nests too deeply to be a tensor table") from exc
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise _fail(path, "header holds an integer of more than 4,300 digits") from exc
    if not isinstance(header, dict):
        raise _fail(path, f"header must be a JSON object, got {type(header).__name__}")
    metadata: dict[str, str] = {}
    given = header.pop("__metadata__", None)
    if given is not None:
        if not isinstance(given, dict):
            raise _fail(path, "__metadata__ must be an object of strings")
        metadata = {str(k): str(v) for k, v in given.items()}

    CHECKPOINT_TENSORS.check(f"{path}: tensors", len(header))
    spans: list[tuple[int, int, str]] = []
    tensors: list[CheckpointTensor] = []
    for name, info in header.items():
        if len(name) > TENSOR_NAME:
            raise _fail(path, f"tensor name {excerpt(name)} is longer than {TENSOR_NAME:,} "
                        "characters")
        if not isinstance(info, dict):
            raise _fail(path, f"tensor {excerpt(name)}: expected an object with dtype, shape and "
                        "data_offsets")
        dtype = info.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
            raise _fail(path, f"tensor {excerpt(name)} has unknown dtype {excerpt(dtype)}; known: "
                        + ", ".join(DTYPE_BITS))
        shape = _dims(info.get("shape"))
        if shape is None or len(shape) > TENSOR_RANK.limit:
            raise _fail(path, f"tensor {excerpt(name)}: shape must be a list of at most "
                        f"{TENSOR_RANK.limit} non-negative integers, got "
                        f"{excerpt(info.get('shape'))}")
        offsets = _dims(info.get("data_offsets"))
        if offsets is None or len(offsets) != 2 or offsets[0] > offsets[1]:
            raise _fail(path, f"tensor {excerpt(name)}: data_offsets must be [begin, end] with "
                        f"begin <= end, got {excerpt(info.get('data_offsets'))}")
        elements = math.prod(shape)
        bits = elements * DTYPE_BITS[dtype]
        if bits % 8:
            raise _fail(path, f"tensor {excerpt(name)}: {elements:,} {dtype} elements do not fill "
                        "whole bytes")
        begin, end = offsets
        if end - begin != bits // 8:
            raise _fail(path, f"tensor {excerpt(name)}: data_offsets {list(offsets)} hold "
                        f"{end - begin:,} bytes but {dtype} × {list(shape)} needs "
                        f"{bits // 8:,}")
        spans.append((begin, end, name))
        component, role, layer = classify(name)
        tensors.append(CheckpointTensor(
            name=name, dtype=dtype, shape=shape, elements=elements, bytes=bits // 8,
            file=file, component=component, role=role, layer=layer,
        ))

    spans.sort()
    position = 0
    for begin, end, name in spans:
        if begin != position:
            what = "overlaps the previous tensor" if begin < position else "leaves a gap"
            raise _fail(path, f"tensor {excerpt(name)}: data_offsets start at {begin:,}, expected "
                        f"{position:,} ({what})")
        position = end
    data_end = 8 + len(raw) + position
    if data_end > size:
        last = spans[-1][2]
        raise _fail(path, f"tensor {excerpt(last)} ends at byte {data_end:,}, past the end of the "
                    f"file ({size:,} bytes); the file is truncated")
    if data_end < size:
        raise _fail(path, f"holds {size - data_end:,} bytes after its last tensor; "
                    "not a well-formed safetensors file")
    return TensorTable(files=[file] if file else [], tensors=tensors, metadata=metadata)


def read_safetensors(path: Path, file: str | None = None) -> TensorTable:
    """Read one `.safetensors` file's header (8 + N bytes, never the tensors)."""
    raw, size = read_header_bytes(path)
    return parse_header(raw, size, path, path.name if file is None else file)
