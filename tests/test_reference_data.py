"""The reference figures of this year's architectures are well-formed and point at real files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.reference import DATA, ORACLE_FOLDERS_2026

ORACLE = DATA / "oracle-2026.json"
# Further reference sets of this year's architectures, one file per set (oracle-2026-*.json).
ORACLES = sorted(DATA.glob("oracle-2026*.json"))
FOLDERS = ORACLE_FOLDERS_2026
# The reference sets computed with transformers 5.24.0; every later set with 5.25.0, the
# release that has the newer model types.
TRANSFORMERS_5_24 = {"oracle-2026.json", "oracle-2026-dense.json",
                     "oracle-2026-glm4-moe-lite.json"}


def entries() -> list[dict[str, object]]:
    return [e for path in ORACLES for e in json.loads(path.read_text())]


def config_path(name: str) -> Path:
    hits = [DATA / folder / name for folder in FOLDERS if (DATA / folder / name).exists()]
    assert len(hits) == 1, f"{name}: expected in exactly one of {FOLDERS}, found {hits}"
    return hits[0]


def test_every_entry_names_one_config_file() -> None:
    names = [str(e["file"]) for e in entries()]
    assert len(names) == len(set(names))
    for name in names:
        assert json.loads(config_path(name).read_text())["model_type"]


def test_every_config_file_has_an_entry() -> None:
    names = {str(e["file"]) for e in entries()}
    for folder in FOLDERS:
        for path in (DATA / folder).glob("*.json"):
            if path.name != "index.json":
                assert path.name in names, f"{folder}/{path.name} has no entry in {ORACLE.name}"


# Drafters that borrow their target's embedding and head, so have none of their own.
NO_EMBEDDING = {"muse_glimmer_assistant"}


def test_totals_are_positive_integers_or_a_stated_error() -> None:
    for e in entries():
        if "error" in e:
            assert isinstance(e["error"], str) and e["error"]
            continue
        if e["model_type"] in NO_EMBEDDING:
            assert e["input_embedding_params"] == e["output_head_params"] == 0, e["file"]
            assert e["total_params_no_embed"] == e["total_params"] > 0, e["file"]
            continue
        for key in ("total_params", "total_params_no_embed", "input_embedding_params"):
            value = e[key]
            assert isinstance(value, int) and not isinstance(value, bool) and value > 0, (
                e["file"], key, value)
        assert e["total_params_no_embed"] < e["total_params"]


def test_moe_figures_are_consistent() -> None:
    for e in entries():
        if "num_experts" not in e or e.get("active_params") is None:
            continue
        per = e["params_per_routed_expert"]
        if isinstance(per, int) and isinstance(e["num_experts"], int):
            inactive = (e["num_experts"] - e["experts_per_token"]) * per * e["moe_layers"]
            assert e["active_params"] == e["total_params"] - inactive, e["file"]


def test_versions_are_recorded() -> None:
    for path in ORACLES:
        for e in json.loads(path.read_text()):
            versions = e["versions"]
            assert isinstance(versions, dict)
            assert versions["transformers"] == (
                "5.24.0" if path.name in TRANSFORMERS_5_24 else "5.25.0"), path.name
            assert str(versions["torch"]).startswith("2.13.0")


def test_more_configs_are_indexed_with_their_source() -> None:
    index = json.loads((DATA / "configs-2026-more" / "index.json").read_text())
    listed = {e["file"] for e in index}
    on_disk = {p.name for p in (DATA / "configs-2026-more").glob("*.json")} - {"index.json"}
    assert listed == on_disk
    for e in index:
        assert e["repository"] and len(e["commit"]) == 40 and e["confidence"]


def test_dense_configs_are_indexed_with_their_source() -> None:
    folder = DATA / "configs-2026-dense"
    index = json.loads((folder / "index.json").read_text())
    assert {e["file"] for e in index} == {p.name for p in folder.glob("*.json")} - {
        "index.json"}
    for e in index:
        assert e["source"] and e["config_kind"] and e["confidence"]


def test_reported_configs_say_how_they_were_found() -> None:
    """A config copied from a report names no repository or commit: it says so, gives its
    sha256 and the checkpoint figures the report lists."""
    import hashlib

    folder = DATA / "configs-2026-reported"
    index = json.loads((folder / "index.json").read_text())
    assert {e["file"] for e in index} == {p.name for p in folder.glob("*.json")} - {
        "index.json"}
    for e in index:
        assert e["source"] and e["confidence"] and "unknown origin" in e["doubts"]
        assert e["repository"] is None and e["commit"] is None
        body = (folder / e["file"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == e["sha256"]
        assert e["checkpoint"]["parameters"] > 0
