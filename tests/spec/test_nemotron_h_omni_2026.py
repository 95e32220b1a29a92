"""Nemotron-H Omni (transformers 5.25 `models/nemotron_h_omni`), held to what transformers
builds.

tests/data/oracle-2026-omni.json holds the figures `tools/reference_counts.py` read from
transformers 5.25.0 (torch 2.13.0, meta device) for the configs under
tests/data/configs-2026-omni/ (index.json there says where each came from). For every entry
the importer's count equals transformers' to the parameter and is labelled exact, and the
K/V it caches per token matches layer for layer; the Parakeet audio encoder, under either of
its names, is counted with it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import ModelSpec
from tests.conftest import Invoke
from tests.reference import DATA, check_counts, check_reference_set

ORACLE = DATA / "oracle-2026-omni.json"
FOLDER = DATA / "configs-2026-omni"
ENTRIES: list[dict[str, Any]] = list(json.loads(ORACLE.read_text()))
SMALL = FOLDER / "constructed--nemotron_h_omni-small-legacy-names.json"


def _spec(entry: dict[str, Any]) -> ModelSpec:
    name = str(entry["file"])
    return from_hf_config(json.loads((FOLDER / name).read_text()), name)


def test_the_set_covers_its_type_with_versions_recorded() -> None:
    check_reference_set(ENTRIES, FOLDER, {"nemotron_h_omni"})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_total_equals_transformers(entry: dict[str, Any]) -> None:
    check_counts(_spec(entry), entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_kv_per_token_equals_transformers(entry: dict[str, Any]) -> None:
    layers = [layer for layer in state_layers(_spec(entry)) for _ in range(layer.count)]
    cached = Counter(layer.elements_per_token() for layer in layers
                     if layer.elements_per_token())
    want = {int(k): v for k, v in entry["kv_elems_per_token_per_layer"].items() if int(k)}
    assert dict(cached) == want


def test_the_audio_encoder_is_counted_under_either_name() -> None:
    # released files name it sound_config; the class's own name is audio_config
    entry = next(e for e in ENTRIES if "released-sound" in e["file"])
    raw = json.loads((FOLDER / entry["file"]).read_text())
    renamed = {**{k: v for k, v in raw.items() if k != "sound_config"},
               "audio_config": raw["sound_config"]}
    for data in (raw, renamed):
        spec = from_hf_config(data, entry["file"])
        assert [e.kind for e in (spec.encoder, *spec.extra_encoders)] == ["vision", "audio"]
        check_counts(spec, entry)


def test_the_towers_video_packing_must_match_the_composites() -> None:
    raw = json.loads(SMALL.read_text())
    raw["vision_config"]["video_temporal_patch_size"] = 2
    with pytest.raises(InputError, match="video_temporal_patch_size"):
        from_hf_config(raw, SMALL.name)


def test_a_plan_is_sized(invoke: Invoke) -> None:
    run = invoke("placement", str(SMALL), "-d", "h100", "-n", "1", "--format", "json")
    assert run.code == 0 and run.json()["plans"][0]["fits"]


@pytest.mark.parametrize(("where", "key", "value"), [
    ("vision_config", "mlp_ratio", -1), ("vision_config", "max_img_size", 1),
    ("sound_config", "num_mel_bins", 2),
    (None, "downsample_ratio", 0.3),
])
def test_a_shape_transformers_cannot_build_is_refused_naming_the_key(
        where: str | None, key: str, value: object) -> None:
    raw = json.loads((FOLDER / next(e["file"] for e in ENTRIES
                                    if "released-sound" in e["file"])).read_text())
    (raw if where is None else raw[where])[key] = value
    with pytest.raises(InputError, match=key):
        from_hf_config(raw, "config.json")
