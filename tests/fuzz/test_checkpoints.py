"""Fuzz the checkpoint readers: corrupt safetensors headers and shards, corrupt GGUF files,
Hub cache folders with hostile refs (harness invariants)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.checkpoint import synthetic
from tests.checkpoint.gguf_files import llama_gguf
from tests.fuzz import values
from tests.fuzz.harness import fuzz, run
from tests.fuzz.test_documents import folder

COMMANDS = [
    ["inventory", "{}", "--format", "json"],
    ["placement", "{}", "--device", "h100", "--format", "json"],
    ["kv", "--model", "{}"],
]


def _feed(data: st.DataObject, path: Path) -> None:
    command = data.draw(st.sampled_from(COMMANDS), label="command")
    run([str(path) if part == "{}" else part for part in command])


def _safetensors_folder(where: Path) -> list[Path]:
    synthetic.write_config(where, synthetic.LLAMA_CONFIG)
    synthetic.shard(where, synthetic.llama_tensors(), 2)
    return sorted(where.glob("*.safetensors"))


@st.composite
def header(draw: st.DrawFn) -> bytes:
    """A safetensors header JSON with hostile dtypes, shapes and offsets."""
    raw, _ = synthetic.header_bytes(dict(list(synthetic.llama_tensors().items())[:3]))
    document = json.loads(raw)
    return values.json_text(draw(values.mutated(document))).encode("utf-8", "surrogatepass")


@fuzz(30)
@given(data=st.data())
def test_corrupt_safetensors(data: st.DataObject) -> None:
    with folder() as where:
        shards = _safetensors_folder(where)
        target = data.draw(st.sampled_from(shards), label="shard")
        how = data.draw(st.sampled_from(["bytes", "header", "index", "index-bytes"]))
        if how == "bytes":
            raw = target.read_bytes()[:4096]
            rest = target.stat().st_size - len(raw)
            target.write_bytes(data.draw(values.corrupt_bytes(raw)))
            if data.draw(st.booleans(), label="keep length"):
                with target.open("ab") as handle:
                    handle.truncate(handle.tell() + max(rest, 0))
        elif how == "header":
            text = data.draw(header())
            length = data.draw(st.sampled_from([len(text), len(text) + 1, 2**63]))
            synthetic.write_raw(target, text, total=8 + len(text) + 4096, length=length)
        else:
            index = where / "model.safetensors.index.json"
            document = json.loads(index.read_text())
            if how == "index":
                index.write_text(values.json_text(data.draw(values.mutated(document))),
                                 errors="surrogatepass")
            else:
                index.write_bytes(data.draw(values.corrupt_bytes(index.read_bytes())))
        _feed(data, where)


SAFETENSORS_DTYPES = sorted(synthetic.BITS)
SUFFIXES = [".weight", ".bias", ".weight_scale_inv", ".qweight", ".qzeros", ".scales",
            ".g_idx", ".weight_scale", ".input_scale", ".e_score_correction_bias", ""]


@st.composite
def tensor_table(draw: st.DrawFn) -> dict[str, tuple[str, list[int]]]:
    """A well-formed safetensors table with hostile content: real Llama or DeepSeek names
    with their layer indices, suffixes and shapes changed, tensors dropped or added."""
    base = draw(st.sampled_from([synthetic.llama_tensors, synthetic.deepseek_tensors]))()
    names = sorted(base)
    table = dict(base)
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        name = draw(st.sampled_from(names))
        dtype, shape = table.pop(name, base[name])
        action = draw(st.sampled_from(["drop", "layer", "suffix", "shape", "dtype", "add"]))
        if action == "drop":
            continue
        if action == "layer" and ".layers." in name:
            head, _, tail = name.partition(".layers.")
            index = draw(st.sampled_from(["0", "1", "2", "3", "4", "5", "99", "4096", "4097",
                                          "99999999999999999999", "-1", "x"]))
            name = f"{head}.layers.{index}.{tail.partition('.')[2]}"
        elif action == "suffix":
            name = name.rsplit(".", 1)[0] + draw(st.sampled_from(SUFFIXES))
        elif action == "shape":
            shape = draw(st.lists(st.sampled_from([0, 1, 2, 3, 7, 16, 64, 128, 160, 256]),
                                  max_size=5))
        elif action == "dtype":
            dtype = draw(st.sampled_from(SAFETENSORS_DTYPES))
            if dtype == "F4" and shape and shape[-1] % 2:
                dtype = "U8"
        elif action == "add":
            table[name.replace("model.", "model.extra.", 1)] = (dtype, shape)
        table[name] = (dtype, shape)
    return table


@fuzz(30)
@given(data=st.data())
def test_well_formed_safetensors_with_hostile_tensors(data: st.DataObject) -> None:
    """Files the reader accepts, whose names, shapes and dtypes disagree with config.json."""
    table = data.draw(tensor_table())
    with folder() as where:
        config = data.draw(st.sampled_from([synthetic.LLAMA_CONFIG, synthetic.DEEPSEEK_CONFIG]))
        synthetic.write_config(where, config)
        if data.draw(st.booleans(), label="sharded"):
            synthetic.shard(where, table, 2)
        else:
            synthetic.write_safetensors(where / "model.safetensors", table)
        _feed(data, where)


@pytest.fixture(scope="module")
def gguf_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    llama_gguf(path)
    return path.read_bytes()


@fuzz(30)
@given(data=st.data())
def test_corrupt_gguf(gguf_bytes: bytes, data: st.DataObject) -> None:
    raw = bytearray(gguf_bytes)
    how = data.draw(st.sampled_from(["bytes", "counts", "block_count", "array"]))
    if how == "bytes":
        raw = bytearray(data.draw(values.corrupt_bytes(bytes(raw[:8192]))) + raw[8192:])
    elif how == "counts":
        at = data.draw(st.sampled_from([8, 16]))
        raw[at:at + 8] = struct.pack("<Q", data.draw(st.sampled_from(
            [0, 1, 2**20, 2**20 + 1, 2**32 - 1, 2**63, 2**64 - 1])))
    else:
        key = b"llama.block_count" if how == "block_count" else b"tokenizer.ggml.tokens"
        at = bytes(raw).find(key) + len(key)
        if how == "block_count":  # a uint32 value after its 4-byte type
            # In bounds but large (4,096) costs the placement search seconds on a quantized
            # model; tests/fuzz/test_limits.py runs that case under resource limits.
            raw[at + 4:at + 8] = struct.pack("<I", data.draw(st.sampled_from(
                [0, 64, 4097, 2**31, 2**32 - 1])))
        else:  # an array: item type, then a uint64 length
            raw[at + 8:at + 16] = struct.pack("<Q", data.draw(st.sampled_from(
                [0, 4097, 2**24 + 1, 2**40, 2**64 - 1])))
    with folder() as where:
        path = where / "model.gguf"
        path.write_bytes(bytes(raw))
        _feed(data, path)


GGUF_ARCHES = ["llama", "qwen2", "qwen3moe", "gemma2", "gemma3", "deepseek2", "phi3",
               "gpt-oss", "olmoe", "mamba", "bert", "", "x" * 300]
GGUF_NUMBERS = [0, 1, 2, 3, 4, 64, 4096, 4097, 2**31, 2**32 - 1]
GGUF_KEYS = ["block_count", "embedding_length", "feed_forward_length",
             "attention.head_count", "attention.head_count_kv", "attention.key_length",
             "attention.value_length", "context_length", "rope.dimension_count",
             "expert_count", "expert_used_count", "expert_feed_forward_length",
             "expert_shared_count", "attention.kv_lora_rank", "attention.q_lora_rank",
             "attention.sliding_window", "attention.sliding_window_pattern", "vocab_size"]


@fuzz(30)
@given(data=st.data())
def test_well_formed_gguf_with_hostile_metadata(data: st.DataObject) -> None:
    """Files llama.cpp's writer produces, with the architecture and its keys made absurd."""
    from tests.checkpoint.gguf_files import Q, write_gguf

    arch = data.draw(st.sampled_from(GGUF_ARCHES))
    meta: dict[str, object] = {"general.name": data.draw(st.sampled_from(
        ["tiny", "", "x" * 1000, "\u00e9"]))}
    for key in data.draw(st.lists(st.sampled_from(GGUF_KEYS), max_size=8, unique=True)):
        meta["{arch}." + key] = data.draw(st.one_of(
            st.sampled_from(GGUF_NUMBERS), st.sampled_from(["8", "", "x"]), st.booleans(),
            st.lists(st.sampled_from([0, 1, 4, 4096]), min_size=1, max_size=4)))
    layers = data.draw(st.integers(min_value=0, max_value=3))
    tensors: dict[str, tuple[object, list[int]]] = {"token_embd.weight": (Q.F16, [32, 64])}
    for i in range(layers):
        for part in data.draw(st.lists(st.sampled_from(
                ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down", "ffn_gate",
                 "ffn_up_exps", "ffn_gate_inp", "attn_norm", "attn_q_norm", "attn_kv_a_mqa"]),
                max_size=6, unique=True)):
            kind = data.draw(st.sampled_from([Q.F32, Q.F16, Q.Q8_0]))
            tensors[f"blk.{i}.{part}.weight"] = (kind, [64, 64])
    with folder() as where:
        path = where / "model.gguf"
        write_gguf(path, arch or "llama", meta, tensors)  # type: ignore[arg-type]
        _feed(data, path)


@fuzz(20)
@given(data=st.data())
def test_hub_cache_refs(data: st.DataObject) -> None:
    with folder() as where:
        repo = where / "models--org--tiny"
        snapshot = repo / "snapshots" / "abc123"
        snapshot.mkdir(parents=True)
        synthetic.write_config(snapshot, synthetic.LLAMA_CONFIG)
        (repo / "refs").mkdir()
        ref = data.draw(st.one_of(values.hostile, st.sampled_from(
            ["abc123", "abc123\n", "../abc123", "x" * 1_000_000, "", "main", "a/b"])))
        (repo / "refs" / "main").write_text(ref, errors="surrogatepass")
        _feed(data, repo)
