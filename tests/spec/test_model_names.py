"""A model loaded from a file or folder is named after itself, not after the folder holding it:
the config's `_name_or_path`, else the file's stem, else (for config.json) its folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llm_inventory.spec.loader import config_name, load_model
from tests.conftest import ROOT, Invoke

MODELS = ROOT / "tests" / "data" / "models"


@pytest.mark.parametrize(
    ("given", "file", "expected"),
    [
        ("meta-llama/Llama-3.1-8B", "config.json", "meta-llama/Llama-3.1-8B"),
        ("Phi-3-mini-4k-instruct", "x.json", "Phi-3-mini-4k-instruct"),
        ("/scratch/runs/ckpt-500/", "config.json", "ckpt-500"),
        ("./out/my-model", "config.json", "my-model"),
        ("", "gemma-2-9b.json", "gemma-2-9b"),
        (None, "gemma-2-9b.json", "gemma-2-9b"),
        ("", "config.json", "Folder-Name"),
    ],
)
def test_config_name_rule(tmp_path: Path, given: str | None, file: str, expected: str) -> None:
    folder = tmp_path / "Folder-Name"
    folder.mkdir()
    data = {} if given is None else {"_name_or_path": given}
    assert config_name(data, folder / file) == expected


def test_files_in_one_folder_get_their_own_names(invoke: Invoke, tmp_path: Path) -> None:
    models = tmp_path / "a" / "models"
    models.mkdir(parents=True)
    for name in ("Llama-3.1-8B.json", "gemma-2-9b.json"):
        shutil.copy(MODELS / name, models / name)
    run = invoke("compare", str(models / "Llama-3.1-8B.json"), str(models / "gemma-2-9b.json"),
                 "--format", "json")
    assert run.code == 0, run.stderr
    assert [inv["model"] for inv in run.json()] == ["Llama-3.1-8B", "gemma-2-9b"]
    table = invoke("compare", str(models / "Llama-3.1-8B.json"),
                   str(models / "gemma-2-9b.json"))
    header = next(line for line in table.stdout.splitlines() if line.startswith("┃"))
    assert "Llama-3.1-8B" in header and "gemma-2-9b" in header and "models" not in header


def test_config_json_in_a_folder_takes_the_folder_name(tmp_path: Path) -> None:
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    data = json.loads((MODELS / "Llama-3.1-8B.json").read_text())
    data.pop("_name_or_path", None)
    (folder / "config.json").write_text(json.dumps(data))
    assert load_model(str(folder)).name == "Llama-3.1-8B"
    assert load_model(str(folder / "config.json")).name == "Llama-3.1-8B"


def test_models_shows_a_folder_in_detail(invoke: Invoke, tmp_path: Path) -> None:
    folder = tmp_path / "my-llama"
    folder.mkdir()
    shutil.copy(MODELS / "Llama-3.1-8B.json", folder / "config.json")
    run = invoke("models", str(folder), "--format", "json")
    assert run.code == 0, run.stderr
    detail = run.json()
    assert detail["parameters"] == 8_030_261_248
    assert detail["family"] == "dense"
    table = invoke("models", str(folder))
    assert table.code == 0, table.stderr
    assert table.stdout.startswith("Model · ")
    file = invoke("models", str(MODELS / "gemma-2-9b.json"), "--format", "json")
    assert file.code == 0, file.stderr
    assert file.json()["name"] == "gemma-2-9b"


def test_models_unknown_name_is_still_bad_input(invoke: Invoke) -> None:
    run = invoke("models", "llama-3.1-8bb")
    assert run.code == 2
    assert "did you mean llama-3.1-8b" in run.stderr
    assert run.stdout == ""
