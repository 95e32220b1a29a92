"""Model files that cannot be used: one line on stderr naming the file and field, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Invoke

GOOD = """\
name: tiny
family: dense
decoder:
  layers: 2
  hidden_size: 64
  heads: 4
  kv_heads: 2
  intermediate_size: 128
  vocab_size: 100
"""


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("bad.yaml", "name: tiny\nfamily: [dense\n", "malformed YAML"),
        ("typo.yaml", GOOD.replace("  layers: 2", "  layrs: 2"), "decoder.layrs"),
        ("negative.yaml", GOOD.replace("layers: 2", "layers: -2"), "decoder.layers"),
        ("family.yaml", GOOD.replace("family: dense", "family: dance"), "family"),
        ("kv.yaml", GOOD.replace("kv_heads: 2", "kv_heads: 3"), "kv_heads"),
        ("list.yaml", "- 1\n- 2\n", "mapping"),
        ("empty.yaml", "", "mapping"),
        ("bomb.yaml", "a: &a [1, 2]\n" + "".join(f"k{i}: *a\n" for i in range(100)), "aliases"),
        ("moe.yaml", GOOD.replace("family: dense", "family: moe"), "moe"),
        ("binary.yaml", "\udcff", "UTF-8"),
    ],
)
def test_bad_model_files(tmp_path: Path, invoke: Invoke, name: str, text: str,
                         needle: str) -> None:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    for command in (["inventory", str(path)], ["kv", "--model", str(path)]):
        run = invoke(*command)
        assert run.code == 2, (command, run.stdout)
        assert run.stdout == ""
        assert run.stderr.count("\n") == 1
        assert needle in run.stderr
        assert "Traceback" not in run.stderr


def test_good_model_file(tmp_path: Path, invoke: Invoke) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(GOOD)
    data = invoke("inventory", str(path), "-f", "json").json()
    assert data["state"]["bytes_per_token"] == 2 * 2 * 2 * 16 * 2  # layers × K,V × heads × dim


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"model_type": "nonesuch"}, "supported:"),
        ({"architectures": ["X"]}, "model_type"),
        ({"model_type": "llama", "hidden_size": "wide"}, "hidden_size"),
    ],
)
def test_bad_configs(tmp_path: Path, invoke: Invoke, config: dict[str, object],
                     needle: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    run = invoke("inventory", str(tmp_path))
    assert run.code == 2
    assert run.stdout == "" and run.stderr.count("\n") == 1
    assert needle in run.stderr


def test_missing_folder_and_empty_folder(tmp_path: Path, invoke: Invoke) -> None:
    missing = invoke("inventory", str(tmp_path / "nowhere"))
    assert missing.code == 2 and "no such file or folder" in missing.stderr
    empty = invoke("inventory", str(tmp_path))
    assert empty.code == 2 and empty.stderr.count("\n") == 1
