"""Coverage of this year's architecture list: which listed model types are counted exactly.

A listed type is exact when the importer reads it and every reference figure of it in
tests/data/oracle-2026*.json (transformers 5.24.0 on the meta device) matches: total
parameters and the KV elements per token per layer. (Whether one file's count may be
labelled exact also depends on every key of that file being read: tests/spec/
test_exactness.py; here the builder's count is held to the reference either way.)
`coverage()` reports each type's status; the test fails when a type that was exact stops
being so.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.spec.hf import dispatch, from_hf_config, supported_model_types
from tests.reference import DATA, MODELLED_FOLDERS_2026

# The model types the 2026 coverage issue lists, by its groups.
LISTED = [
    # hybrid linear attention
    "qwen3_next", "qwen3_5", "qwen3_5_moe", "kimi_linear", "lfm2",
    # MLA and sparse attention
    "deepseek_v32", "deepseek_v4", "glm_moe_dsa", "kimi_k2", "kimi_k25", "longcat_flash",
    # large MoE
    "glm4_moe", "minimax_m2", "minimax", "mimo_v2_flash", "step3p7", "dots1", "ernie4_5_moe",
    "hunyuan_v1_moe", "hunyuan", "bailing_moe", "granitemoe", "phimoe", "dbrx", "llama4",
    # multimodal
    "qwen3_vl", "qwen3_vl_moe", "gemma4", "gemma3n", "internvl", "qwen2_5_omni", "llava_next",
    "llava_onevision", "mistral3",
    # Mamba / attention hybrids
    "nemotron_h", "granitemoehybrid", "falcon_h1",
    # dense with per-layer kinds or quirks (phi3: Phi-4-mini)
    "exaone4", "olmo2", "olmo3", "cohere", "cohere2", "smollm3", "seed_oss", "apertus",
    "nemotron-nas", "phi3",
    # classics
    "gpt2", "gpt_neox", "gpt_bigcode", "starcoder2", "gptj", "bloom", "opt", "modernbert", "t5",
]
# Counted from the checkpoint's own modelling code: transformers has no class to compare with.
CHECKPOINT_CODE = {"nemotron-nas", "bailing_moe"}
# The dense group and the classics: each exact (nemotron-nas by its checkpoint's code).
DENSE_GROUP = LISTED[LISTED.index("exaone4"):]
FOLDERS = MODELLED_FOLDERS_2026
# Counts that follow the checkpoint rather than the meta-built model, and by how much
# (tests/data/configs-2026-dense/README.md).
ADJUSTED = {"t5--untied-gated.json": 32_128 * 768}


def _path(name: str) -> Path | None:
    return next((DATA / f / name for f in FOLDERS if (DATA / f / name).is_file()), None)


def _matches(entry: dict[str, Any]) -> bool:
    path = _path(entry["file"])
    if path is None:
        return False
    try:
        spec = from_hf_config(json.loads(path.read_text()), entry["file"])
    except Exception:  # noqa: BLE001 - a type that fails to build is simply not exact
        return False
    if not _builds(entry):
        return False
    params = count_parameters(spec)
    # transformers' own total where it allocates rows no checkpoint holds (LongCat's zero
    # experts, reported apart as phantom parameters).
    total = params.transformers_total or params.total
    # Qwen2.5-Omni: the thinker is the model served and counted (the speech parts apart).
    thinker = entry.get("thinker_components")
    wanted = sum(thinker.values()) if isinstance(thinker, dict) else entry["total_params"]
    if total != wanted + ADJUSTED.get(entry["file"], 0):
        return False
    expected = entry.get("kv_elems_per_token_per_layer")
    if entry["file"] in OWN_CACHE_CONVENTION or not (isinstance(expected, int | dict)
                                                      and expected):
        return True
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        # The reference lists a sparse-attention indexer's keys apart from the KV it caches.
        elements = layer.elements_per_token() - layer.index_dim
        if layer.kind != "cross" and elements:
            found[elements] += layer.count
    if isinstance(expected, int):
        return dict(found) == {expected: entry.get("kv_layers_with_kv")}
    want = {int(k): v for k, v in expected.items()}
    layers = spec.decoder.layers if spec.decoder is not None else 0
    if 0 in want:  # every layer without per-token KV, whatever it keeps instead
        found[0] = layers - sum(found.values())
    return dict(found) == want


# Files whose per-token cache the reference reads in transformers' own convention, which
# the kind documents and departs from (DeepSeek-V4's windowed K=V entries: transformers
# stores the sliding-only layers' vector twice and counts compressed entries apart).
OWN_CACHE_CONVENTION = {"DeepSeek-V4-Flash.json", "deepseek-ai--DeepSeek-V4-Pro.json"}


def _builds(entry: dict[str, Any]) -> bool:
    path = _path(entry["file"])
    try:
        # a generic estimate of an architecture nobody modelled does not count as read
        return path is not None and dispatch.route(json.loads(path.read_text()),
                                                   entry["file"]) is not None
    except Exception:  # noqa: BLE001 - not read: unsupported
        return False


def coverage() -> dict[str, str]:
    """Each listed type's status: exact, checkpoint code, mismatch, no reference or
    unsupported."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(DATA.glob("oracle-2026*.json")):
        for e in json.loads(path.read_text()):
            if isinstance(e.get("total_params"), int):
                entries.setdefault(str(e["model_type"]), []).append(e)
    supported = set(supported_model_types())
    status = {}
    for model_type in LISTED:
        # A type with no registry row of its own may still be read, dispatched by its
        # `architectures` class (Kimi-K2 is DeepseekV3ForCausalLM).
        dispatched = model_type not in supported and any(
            _builds(e) for e in entries.get(model_type, []))
        if model_type not in supported and not dispatched:
            status[model_type] = "unsupported"
        elif model_type in CHECKPOINT_CODE:
            status[model_type] = "checkpoint code"
        elif not entries.get(model_type):
            status[model_type] = "no reference"
        else:
            ok = all(_matches(e) for e in entries[model_type])
            status[model_type] = "exact" if ok else "mismatch"
    return status


def test_every_supported_listed_type_is_exact() -> None:
    """A supported type is exact (or counted from its checkpoint's code); the types not yet
    read are the ones `NOT_YET` names, no more and no fewer."""
    status = coverage()
    exact = sum(s == "exact" for s in status.values())
    summary = (f"{exact} exact of {len(LISTED)} (and {len(CHECKPOINT_CODE)} from checkpoint "
               f"code); not exact: {', '.join(t for t, s in status.items() if s != 'exact')}")
    assert {t for t, s in status.items() if s not in ("exact", "checkpoint code")} == NOT_YET, \
        summary
    assert {t for t in DENSE_GROUP if status[t] != "exact"} == {"nemotron-nas"}
    # bailing_moe and nemotron-nas: counted from the checkpoints' own modelling code
    # (tests/data/checkpoint-code-counts.json, tests/data/configs-2026-dense/README.md).


# Listed types not read exactly yet (some wrappers are read as their text model alone, and
# mistral3 not with a ministral3 text model).
NOT_YET: set[str] = set()


def test_the_list_names_each_type_once() -> None:
    assert len(LISTED) == len(set(LISTED)) == 56
