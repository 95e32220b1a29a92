"""Every config under tests/data (and every preset) builds the same ModelSpec as recorded.

`tests/data/spec-snapshots/<model_type>.json` holds what the importer built for each case
of that model type when the snapshot was taken: the full `model_dump()` of each real
config, preset and composite variant (`specs`); for every key of a set of base configs the
digest (or the error) of the spec built with that key removed, and with it set to null, so
a class default that moves or a required key that starts defaulting shows up
(`perturbed`); and for each base config the smallest config the importer accepted, every
key it could fill in itself left out (`sparse`).

UPDATE_SPEC_SNAPSHOTS=1 rewrites the files from a fresh run instead of comparing; do that
only for an intended change of output, and say which.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from functools import cache
from importlib import resources
from typing import Any

import pytest

from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config, supported_model_types
from tests.reference import DATA, merge

SNAPSHOTS = DATA / "spec-snapshots"
# Classes that only appear nested in a composite config are not configs of their own.
SUB_CONFIGS = DATA / "transformers-defaults" / "sub-configs"
UPDATE = bool(os.environ.get("UPDATE_SPEC_SNAPSHOTS"))
YEAR_2026 = {"configs-2026", "configs-2026-more", "configs-2026-dense",
             "configs-2026-checkpoint-code", "configs-2026-variants",
             "configs-2026-reported", "transformers-defaults-2026"}
# Base configs whose keys are perturbed one by one: each configuration class's own
# defaults, and one real config of every model type those do not cover.
PERTURBED = [
    *sorted(f"transformers-defaults/{p.name}"
            for p in (DATA / "transformers-defaults").glob("*.json")),
    *sorted(f"more-configs/{p.name}" for p in (DATA / "more-configs").iterdir()
            if p.name.startswith("transformers-defaults--")),
    "models/Qwen2.5-VL-7B-Instruct.json",
    "more-configs/Qwen--Qwen2-VL-7B-Instruct.json",
    "more-configs/llava-hf--llava-1.5-7b-hf.json",
    "more-configs/meta-llama--Llama-3.2-90B-Vision-Instruct.json",
    "configs/google--gemma-3-4b-it.json",
    "configs/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json",
    "engine-logs/configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
    "models/snowflake-arctic-embed-m.json",
    # This year's dense types: their classes' defaults, and a real config where none exists.
    *sorted(f"transformers-defaults-2026/{t}.json" for t in (
        "apertus", "bloom", "cohere", "cohere2", "exaone4", "gpt_bigcode", "gpt_neox",
        "gptj", "modernbert", "olmo2", "olmo3", "opt", "seed_oss", "smollm3", "starcoder2",
        "t5")),
    "configs-2026/Llama-3_3-Nemotron-Super-49B-v1.json",
    "configs-2026/MiniMax-M3.json",
    "transformers-defaults-2026/glm4_moe_lite.json",
    "configs-2026-dense/transformers-defaults--gpt2.json",
    "more-configs/openai--whisper-base.json",
    # Gemma 4's text model at the top level (transformers 5.25's Gemma4ForCausalLM)
    "configs-2026-frontier/transformers-defaults--gemma4_text.json",
    # Gemma 4's assistant: its bare defaults do not build; the two values it needs set
    "configs-2026-gemma4a/transformers-defaults--gemma4_assistant.json",
    "configs-2026-frontier/constructed--step3p5-flat.json",
    # Inkling and Inkling 2: their classes' defaults
    "configs-2026-inkling2/transformers-defaults--inkling2.json",
    "configs-2026-inkling2/transformers-defaults--inkling2_loop.json",
    "configs-2026-inkling2/transformers-defaults--inkling2_loop_text.json",
    "configs-2026-inkling2/transformers-defaults--inkling2_text.json",
    "configs-2026-inkling/transformers-defaults--inkling_mm_model.json",
    "configs-2026-inkling/transformers-defaults--inkling_text.json",
    # Kimi-K3: no class defaults exist; its real config stands in
    "configs-2026-checkpoint-listing/moonshotai--Kimi-K3.json",
    # Types transformers 5.25 added (LFM2-MoE's bare defaults do not build: its stand-in)
    *sorted(f"transformers-defaults-2026/{t}.json" for t in (
        "afmoe", "arcee", "cohere2_moe", "cwm", "ernie4_5", "exaone", "exaone4_5", "exaone_moe",
        "flex_olmo", "glm", "glm4", "granitemoeshared", "helium",
        "internlm3", "iquestcoder", "jais2",
        "laguna", "lfm2_moe--layer-types-of-LFM2-8B-A1B", "lfm3", "olmo_hybrid", "param2moe",
        "sarvam_mla", "sarvam_moe", "solar_open")),
]


def _load(relative: str) -> dict[str, Any]:
    return dict(json.loads((DATA / relative).read_text()))


@cache
def cases() -> dict[str, dict[str, Any]]:
    """Case id → config mapping: real configs, presets, composite defaults and variants."""
    found: dict[str, dict[str, Any]] = {}
    supported = set(supported_model_types())
    for path in sorted(DATA.rglob("*.json")):
        if SNAPSHOTS in path.parents or SUB_CONFIGS in path.parents:
            continue
        data = json.loads(path.read_text())
        if not (isinstance(data, dict) and isinstance(data.get("model_type"), str)):
            continue
        relative = path.relative_to(DATA).as_posix()
        # This year's reference configs join the snapshots as their model type is supported
        # (the supported-types list is itself under test).
        text = data.get("text_config")
        types = {data["model_type"]} | ({text["model_type"]} if isinstance(text, dict)
                                        and isinstance(text.get("model_type"), str) else set())
        if relative.split("/")[0] in YEAR_2026 and not types <= supported:
            continue
        found[relative] = data
    folder = resources.files("llm_inventory.data").joinpath("presets")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found[f"presets/{entry.name}"] = json.loads(entry.read_text("utf-8"))
    oracle = _load("more-configs/oracle-totals.json")
    for model_type, arch in oracle["architectures"].items():
        minimal = {"model_type": model_type, "architectures": [arch]}
        found[f"minimal/{model_type}"] = minimal
        found[f"empty-sub-configs/{model_type}"] = {**minimal, "text_config": {},
                                                    "vision_config": {}}
    for i, variant in enumerate(oracle["variants"]):
        found[f"variants/{i}"] = merge(_load(variant["base"]), variant["patch"])
    return found


def _build(data: dict[str, Any], label: str) -> dict[str, Any] | str:
    """The spec's JSON dump without the fields left at their defaults (so a new field of
    the model description moves no other type's snapshot), or the error's text."""
    try:
        return from_hf_config(copy.deepcopy(data), label).model_dump(mode="json",
                                                                      exclude_defaults=True)
    except InputError as exc:
        return f"InputError: {exc}"


def _digest(result: dict[str, Any] | str) -> str:
    if isinstance(result, str):
        return result
    text = json.dumps(result, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:20]


def _perturbations(base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each top-level and sub-config key removed, and set to null, one at a time."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in base.items():
        out[f"-{key}"] = {k: v for k, v in base.items() if k != key}
        out[f"{key}=null"] = {**base, key: None}
        if isinstance(value, dict) and key.endswith("_config"):
            for sub in value:
                out[f"-{key}.{sub}"] = {**base, key: {k: v for k, v in value.items()
                                                       if k != sub}}
                out[f"{key}.{sub}=null"] = {**base, key: {**value, sub: None}}
    return out


def _sparse(base: dict[str, Any], label: str) -> dict[str, Any]:
    """The base config with every key whose removal the importer accepts taken out."""
    current = copy.deepcopy(base)
    for key in list(base):
        trial = {k: v for k, v in current.items() if k != key}
        if not isinstance(_build(trial, label), str):
            current = trial
    return current


def _type_of(data: dict[str, Any]) -> str:
    return str(data["model_type"])


@cache
def _recorded(section: str) -> dict[str, Any]:
    """One section (specs, perturbed, sparse) of every model type's snapshot file."""
    found: dict[str, Any] = {}
    for path in sorted(SNAPSHOTS.glob("*.json")):
        found.update(json.loads(path.read_text())[section])
    return found


@pytest.fixture(scope="module", autouse=True)
def _regenerate() -> None:
    """UPDATE_SPEC_SNAPSHOTS=1: rewrite one file per model type (so adding a family touches
    only its own file)."""
    if not UPDATE:
        return
    files: dict[str, dict[str, dict[str, Any]]] = {}

    def section(model_type: str, name: str) -> dict[str, Any]:
        entry = files.setdefault(model_type, {"specs": {}, "perturbed": {}, "sparse": {}})
        return entry[name]

    for case, data in cases().items():
        section(_type_of(data), "specs")[case] = _build(data, case)
    for name in PERTURBED:
        base = _load(name)
        section(_type_of(base), "perturbed")[name] = {
            p: _digest(_build(cfg, name)) for p, cfg in _perturbations(base).items()}
        small = _sparse(base, name)
        section(_type_of(base), "sparse")[name] = {"config": small, "spec": _build(small, name)}
    SNAPSHOTS.mkdir(exist_ok=True)
    for stale in SNAPSHOTS.glob("*.json"):
        stale.unlink()
    for model_type, content in files.items():
        (SNAPSHOTS / f"{model_type}.json").write_text(
            json.dumps(content, indent=1, sort_keys=True) + "\n")


def test_every_case_is_recorded() -> None:
    assert sorted(_recorded("specs")) == sorted(cases())


@pytest.mark.parametrize("case", sorted(cases()))
def test_spec_is_unchanged(case: str) -> None:
    assert _build(cases()[case], case) == _recorded("specs")[case]


@pytest.mark.parametrize("name", PERTURBED)
def test_defaults_and_required_keys_are_unchanged(name: str) -> None:
    recorded = _recorded("perturbed")[name]
    got = {p: _digest(_build(cfg, name)) for p, cfg in _perturbations(_load(name)).items()}
    assert got == recorded


@pytest.mark.parametrize("name", PERTURBED)
def test_sparse_config_builds_the_same_spec(name: str) -> None:
    entry = _recorded("sparse")[name]
    assert _build(entry["config"], name) == entry["spec"]


# Class defaults transformers cannot build either, and the key the error names
# (Lfm2MoeConfig() leaves layer_types None; Lfm2MoeDecoderLayer indexes it).
FAILS_AS_TRANSFORMERS_DOES = {"transformers-defaults-2026/lfm2_moe.json": "layer_types",
                              # Qwen4ExpConfig(): indexed_attention layers, null indexer keys.
                              "transformers-defaults/qwen4_exp.json": "indexer_n_heads",
                              "transformers-defaults/qwen4_exp_text.json": "indexer_n_heads",
                              # an empty vision_config leaves RADIO's video packing unset
                              "empty-sub-configs/nemotron_h_omni": "video_temporal_patch_size",
                              # an empty vision_config's 4,608-wide text against the loop
                              # model's 2,304
                              "empty-sub-configs/inkling2_loop": "text_hidden_size",
                              # An EXL3 repack's quantization block: transformers has no exl3
                              # quantizer ("Unknown quantization type") and neither does this.
                              "configs-2026-deepseek-v41/verbatim/"
                              "sfxnz--TensorFold--DeepSeek-V4.1-Flash.json": "exl3"}


def test_every_case_builds() -> None:
    failed = {case: spec for case, spec in _recorded("specs").items() if isinstance(spec, str)}
    assert set(failed) == set(FAILS_AS_TRANSFORMERS_DOES)
    assert all(FAILS_AS_TRANSFORMERS_DOES[case] in error for case, error in failed.items())


def test_every_supported_model_type_is_perturbed() -> None:
    assert {_load(name)["model_type"] for name in PERTURBED} == set(supported_model_types())
