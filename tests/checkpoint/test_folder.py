"""Model folders: shards and their index, the index alone, Hub cache layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_inventory.checkpoint.folder import hub_name, read_folder, resolve_hub_cache
from llm_inventory.errors import InputError
from llm_inventory.spec.loader import load_model
from tests.checkpoint.synthetic import (
    LLAMA_CONFIG,
    llama_tensors,
    shard,
    write_config,
    write_index,
    write_safetensors,
)

# LLAMA_CONFIG in BF16: 102,720 parameters (transformers 5.23.0, meta device:
# LlamaForCausalLM), so 205,440 bytes.
LLAMA_BYTES = 205_440


def _llama_folder(root: Path, shards: int = 2) -> Path:
    folder = root / "tiny-llama"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    assert shard(folder, llama_tensors(), shards) == LLAMA_BYTES
    return folder


def test_sharded_folder_reads_every_header(tmp_path: Path) -> None:
    folder = _llama_folder(tmp_path, shards=3)
    found = read_folder(folder)
    assert found.table is not None
    assert found.table.total_bytes == LLAMA_BYTES == found.index_total
    assert found.files == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert found.notes == []
    spec = load_model(str(folder))
    facts = spec.checkpoint
    assert facts is not None and facts.headers_read
    assert facts.total_bytes == LLAMA_BYTES
    assert facts.elements == 102_720
    assert facts.tensor_count == len(llama_tensors()) == 21
    assert [(t.key, t.bytes) for t in facts.by_dtype] == [("BF16", LLAMA_BYTES)]
    components = {t.key: t.elements for t in facts.by_component}
    # embed 128 × 64; per layer q 64×64, k and v 32×64, o 64×64, MLP 3 × 160×64, 2 norms.
    assert components == {"mlp": 61_440, "attention": 24_576, "embeddings": 8192,
                          "lm_head": 8192, "norms": 320}
    assert len(facts.tensors) == 21 and "tensors" not in facts.model_dump()


def test_index_alone_reports_total_size(tmp_path: Path) -> None:
    folder = tmp_path / "index-only"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    names = list(llama_tensors())
    write_index(folder, dict.fromkeys(names, "model-00001-of-00002.safetensors"),
                 1_234_567_890)
    spec = load_model(str(folder))
    facts = spec.checkpoint
    assert facts is not None
    assert not facts.headers_read
    assert facts.total_bytes == 1_234_567_890
    assert facts.tensor_count == 21 and facts.elements is None and facts.by_dtype == []
    assert {t.name for t in facts.tensors} == set(names)
    assert "no shard is present" in facts.notes[0]


def test_missing_shards_fall_back_to_the_index(tmp_path: Path) -> None:
    folder = _llama_folder(tmp_path, shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()
    facts = load_model(str(folder)).checkpoint
    assert facts is not None and not facts.headers_read
    assert facts.total_bytes == LLAMA_BYTES
    assert "1 of 2 shards are missing" in facts.notes[0]


def test_index_without_total_and_no_shards(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    write_index(folder, {"lm_head.weight": "model-00001-of-00001.safetensors"}, None)
    spec = load_model(str(folder))
    assert spec.checkpoint is None
    assert any("no checkpoint sizes" in n for n in spec.notes)


def test_index_total_disagreeing_with_headers_is_noted(tmp_path: Path) -> None:
    folder = _llama_folder(tmp_path, shards=1)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["metadata"]["total_size"] = LLAMA_BYTES + 2
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    facts = load_model(str(folder)).checkpoint
    assert facts is not None and facts.total_bytes == LLAMA_BYTES
    assert "the headers are used" in facts.notes[0]


def test_single_file_and_consolidated_copy(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    write_safetensors(folder / "model.safetensors", llama_tensors())
    write_safetensors(folder / "consolidated.safetensors", llama_tensors())
    facts = load_model(str(folder)).checkpoint
    assert facts is not None
    assert facts.files == ["model.safetensors"]
    assert facts.total_bytes == LLAMA_BYTES
    assert "left out consolidated.safetensors" in facts.notes[0]


def test_unindexed_shards(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    write_config(folder, LLAMA_CONFIG)
    shard(folder, llama_tensors(), 2)
    (folder / "model.safetensors.index.json").unlink()
    facts = load_model(str(folder)).checkpoint
    assert facts is not None and facts.headers_read and facts.total_bytes == LLAMA_BYTES


def test_tensor_in_two_shards_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    write_safetensors(folder / "a-00001-of-00002.safetensors", {"x": ("F32", [2])})
    write_safetensors(folder / "a-00002-of-00002.safetensors", {"x": ("F32", [2])})
    with pytest.raises(InputError, match="'x' is also in a-00001-of-00002"):
        read_folder(folder)


@pytest.mark.parametrize("shard_name", ["../escape.safetensors", "sub/dir.safetensors"])
def test_index_shard_names_stay_in_the_folder(tmp_path: Path, shard_name: str) -> None:
    write_index(tmp_path, {"x": shard_name}, 8)
    with pytest.raises(InputError, match="not a file name in the folder"):
        read_folder(tmp_path)


def _hub_cache(root: Path, revisions: list[str], ref: str | None) -> Path:
    """models--org--name with blobs/, snapshots/<rev>/ of symlinks, and refs/main."""
    repo = root / "models--acme--tiny-llama"
    (repo / "blobs").mkdir(parents=True)
    blobs = {
        "config.json": json.dumps(LLAMA_CONFIG).encode(),
    }
    staging = root / "staging"
    staging.mkdir()
    write_safetensors(staging / "model.safetensors", llama_tensors())
    blobs["model.safetensors"] = (staging / "model.safetensors").read_bytes()
    for number, data in enumerate(blobs.values()):
        (repo / "blobs" / f"blob{number:040d}").write_bytes(data)
    for revision in revisions:
        snapshot = repo / "snapshots" / revision
        snapshot.mkdir(parents=True)
        for number, name in enumerate(blobs):
            (snapshot / name).symlink_to(Path("../../blobs") / f"blob{number:040d}")
    if ref is not None:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(ref)
    return repo


REV_A = "a" * 40
REV_B = "b" * 40


def test_hub_cache_resolves_refs_main(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A, REV_B], REV_B)
    assert resolve_hub_cache(repo) == repo / "snapshots" / REV_B
    spec = load_model(str(repo))
    assert spec.name == "acme/tiny-llama"
    assert spec.checkpoint is not None and spec.checkpoint.total_bytes == LLAMA_BYTES
    assert (repo / "snapshots" / REV_B / "model.safetensors").is_symlink()


def test_hub_cache_single_snapshot_without_ref(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A], None)
    assert load_model(str(repo)).checkpoint is not None


def test_hub_snapshot_folder_keeps_the_repo_name(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A], REV_A)
    snapshot = repo / "snapshots" / REV_A
    assert hub_name(snapshot) == "acme/tiny-llama"
    assert load_model(str(snapshot)).name == "acme/tiny-llama"


def test_hub_cache_with_several_snapshots_asks_for_one(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A, REV_B], None)
    with pytest.raises(InputError) as caught:
        resolve_hub_cache(repo)
    message = str(caught.value)
    assert "2 snapshots" in message and REV_A in message and REV_B in message


def test_hub_cache_ref_to_a_missing_snapshot(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A], REV_B)
    with pytest.raises(InputError, match="not in snapshots"):
        resolve_hub_cache(repo)


def test_hub_cache_with_a_missing_blob_uses_the_index_or_nothing(tmp_path: Path) -> None:
    repo = _hub_cache(tmp_path, [REV_A], REV_A)
    blob = next(p for p in (repo / "blobs").iterdir() if p.stat().st_size > 1000)
    blob.unlink()  # an interrupted download: the snapshot's symlink dangles
    spec = load_model(str(repo))
    assert spec.checkpoint is None
