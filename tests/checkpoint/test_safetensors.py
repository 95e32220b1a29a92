"""One safetensors header: exact tables, the format's checks, and never a read past it."""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.checkpoint import safetensors as reader
from llm_inventory.checkpoint.safetensors import read_safetensors
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, TensorRole
from tests.checkpoint.synthetic import BITS, header_bytes, write_raw, write_safetensors


def test_counts_per_dtype(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    tensors = {
        "model.embed_tokens.weight": ("BF16", [1000, 64]),
        "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [64, 64]),
        "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", [1, 1]),
        "model.layers.0.input_layernorm.weight": ("F32", [64]),
        "model.layers.0.mlp.experts.gate_up_proj_blocks": ("U8", [4, 256, 2, 16]),
        "lm_head.weight": ("F16", [1000, 64]),
    }
    data = write_safetensors(path, tensors, {"format": "pt"})
    table = read_safetensors(path)
    by = {t.key: (t.tensors, t.elements, t.bytes) for t in table.by_dtype}
    assert by == {
        "BF16": (1, 64_000, 128_000),
        "F16": (1, 64_000, 128_000),
        "U8": (1, 32_768, 32_768),
        "F8_E4M3": (1, 4096, 4096),
        "F32": (2, 65, 260),
    }
    assert table.total_bytes == data == 293_124
    assert table.elements == 64_000 * 2 + 32_768 + 4096 + 65
    assert table.metadata == {"format": "pt"}
    assert table.files == ["model.safetensors"]
    scale = next(t for t in table.tensors if t.name.endswith("weight_scale_inv"))
    assert scale.role is TensorRole.SCALE and scale.component is Component.ATTENTION
    assert scale.layer == 0 and scale.shape == (1, 1) and scale.file == "model.safetensors"


def test_sub_byte_dtype(tmp_path: Path) -> None:
    # F4 packs two values per byte: 32 × 64 elements are 1,024 bytes.
    path = tmp_path / "fp4.safetensors"
    write_safetensors(path, {"w": ("F4", [32, 64])})
    (tensor,) = read_safetensors(path).tensors
    assert (tensor.elements, tensor.bytes) == (2048, 1024)


def test_empty_header(tmp_path: Path) -> None:
    path = tmp_path / "empty.safetensors"
    write_safetensors(path, {})
    table = read_safetensors(path)
    assert table.tensors == [] and table.total_bytes == 0


def _header(entries: dict[str, Any]) -> bytes:
    return json.dumps(entries).encode()


BAD: list[tuple[str, Any, str]] = [
    ("truncated", lambda p: p.write_bytes(b"\x10\x00\x00"), "too short"),
    ("length past the end",
     lambda p: write_raw(p, b"{}", length=4096), "only 10 bytes; the file is truncated"),
    ("length over the cap",
     lambda p: write_raw(p, b"{}", length=2**40), "over the format's"),
    ("not JSON", lambda p: write_raw(p, b"{not json"), "header is not JSON"),
    ("not UTF-8", lambda p: write_raw(p, b"\xff\xfe{}"), "not UTF-8"),
    ("not an object", lambda p: write_raw(p, b"[1, 2]"), "must be a JSON object"),
    ("unknown dtype",
     lambda p: write_raw(p, _header({"w": {"dtype": "F7", "shape": [2],
                                           "data_offsets": [0, 2]}})),
     "unknown dtype 'F7'"),
    ("bad shape",
     lambda p: write_raw(p, _header({"w": {"dtype": "F16", "shape": [2, -1],
                                           "data_offsets": [0, 4]}})),
     "shape must be a list"),
    ("boolean shape",
     lambda p: write_raw(p, _header({"w": {"dtype": "F16", "shape": [True],
                                           "data_offsets": [0, 2]}})),
     "shape must be a list"),
    ("offsets disagree with dtype × shape",
     lambda p: write_raw(p, _header({"w": {"dtype": "F32", "shape": [2, 2],
                                           "data_offsets": [0, 8]}})),
     "hold 8 bytes but F32 × [2, 2] needs 16"),
    ("reversed offsets",
     lambda p: write_raw(p, _header({"w": {"dtype": "F32", "shape": [0],
                                           "data_offsets": [8, 0]}})),
     "begin <= end"),
    ("overlap",
     lambda p: write_raw(p, _header({
         "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})),
     "overlaps the previous tensor"),
    ("gap",
     lambda p: write_raw(p, _header({
         "a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})),
     "leaves a gap"),
    ("offsets past the end of the file",
     lambda p: write_raw(p, _header({"w": {"dtype": "F32", "shape": [4],
                                           "data_offsets": [0, 16]}})),
     "past the end of the file"),
    ("bytes after the last tensor",
     lambda p: write_raw(p, _header({"w": {"dtype": "F32", "shape": [1],
                                           "data_offsets": [0, 4]}}), total=200),
     "after its last tensor"),
    ("metadata not an object",
     lambda p: write_raw(p, _header({"__metadata__": [1]})), "__metadata__"),
]


@pytest.mark.parametrize(("case", "build", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_headers(tmp_path: Path, case: str, build: Any, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    build(path)
    with pytest.raises(InputError) as caught:
        read_safetensors(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value), str(caught.value)


class _Counting:
    """A raw file that counts the bytes its reads return."""

    def __init__(self, handle: Any, counter: list[int]) -> None:
        self.handle = handle
        self.counter = counter

    def read(self, size: int = -1) -> bytes:
        assert size >= 0, "an unbounded read would pull in tensor data"
        data: bytes = self.handle.read(size)
        self.counter.append(len(data))
        return data

    def __enter__(self) -> _Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


def test_ten_gigabyte_file_reads_only_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 10 GiB BF16 tensor: the header, then a sparse hole to the file's full length.
    path = tmp_path / "model.safetensors"
    elements = 5 * 2**30
    data = write_safetensors(path, {"lm_head.weight": ("BF16", [elements])})
    raw, _ = header_bytes({"lm_head.weight": ("BF16", [elements])})
    assert os.stat(path).st_size == 8 + len(raw) + data == 8 + len(raw) + 10 * 2**30

    reads: list[int] = []
    real_open = open

    def counting_open(file: Any, mode: str = "r", buffering: int = -1) -> _Counting:
        assert buffering == 0, "a buffered reader reads ahead of the header"
        return _Counting(real_open(file, mode, buffering=0), reads)

    monkeypatch.setattr(reader, "open", counting_open, raising=False)
    start = time.perf_counter()
    table = read_safetensors(path)
    elapsed = time.perf_counter() - start
    assert sum(reads) == 8 + len(raw)
    assert table.total_bytes == 10 * 2**30
    assert elapsed < 0.5, f"reading one header took {elapsed:.3f} s"


dtype_names = st.sampled_from(sorted(k for k in BITS if BITS[k] >= 8))
tensor_lists = st.dictionaries(
    st.text("abcdefghij._0123456789", min_size=1, max_size=20),
    st.tuples(dtype_names, st.lists(st.integers(0, 40), min_size=0, max_size=3)),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(tensors=tensor_lists)
def test_totals_are_sums_of_tensors(tmp_path_factory: pytest.TempPathFactory,
                                    tensors: dict[str, tuple[str, list[int]]]) -> None:
    path = tmp_path_factory.mktemp("prop") / "m.safetensors"
    data = write_safetensors(path, tensors)
    table = read_safetensors(path)
    assert table.total_bytes == data
    assert sum(t.bytes for t in table.by_dtype) == data
    assert sum(t.tensors for t in table.by_dtype) == len(tensors)
    for tensor in table.tensors:
        dtype, shape = tensors[tensor.name]
        assert tensor.dtype == dtype and tensor.shape == tuple(shape)


def test_header_length_is_little_endian(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"x": ("I64", [3])})
    (length,) = struct.unpack("<Q", path.read_bytes()[:8])
    assert (length + 8) % 8 == 0
    assert read_safetensors(path).tensors[0].bytes == 24
