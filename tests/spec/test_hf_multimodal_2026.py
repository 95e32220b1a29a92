"""This year's multimodal types against transformers: totals, active parameters, the towers
and projectors, the cache a meta forward builds per layer, and the tokens per image the
processors' own functions give.

Figures: tests/data/oracle-2026.json (tools/reference_counts.py, transformers 5.24.0, meta
device) for the real configs of configs-2026/ and configs-2026-more/, the class defaults
of transformers-defaults-2026/ (stand-ins where no published file was found: InternVL,
LLaVA-NeXT, LLaVA-OneVision, Qwen2.5-Omni, Gemma 3n) and the variants of
configs-2026-variants/; tests/data/media-2026.json for the media geometry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine import kinds
from llm_inventory.engine.media import feature_tokens
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.serving.base import KvLayer
from llm_inventory.engine.serving.paged import pool_layout
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.hf.common import over_defaults
from llm_inventory.spec.hf.qwen_omni import speech_parameters
from llm_inventory.spec.model import Component, LayerKind, ModelSpec
from tests.conftest import Invoke
from tests.reference import DATA

TYPES = {"qwen3_vl", "qwen3_vl_moe", "gemma4", "gemma3n", "internvl", "qwen2_5_omni",
         "llava_next", "llava_onevision", "mistral3"}
FOLDERS = ("configs-2026", "configs-2026-more", "transformers-defaults-2026",
           "configs-2026-variants")
ORACLE = [e for e in json.loads((DATA / "oracle-2026.json").read_text())
          if e["model_type"] in TYPES]
IDS = [str(e["file"]) for e in ORACLE]
# Module names of the towers and projectors in transformers' component breakdown.
MEDIA_MODULES = ("visual", "vision_tower", "audio_tower", "multi_modal_projector",
                 "embed_vision", "embed_audio")


def _path(name: str) -> Path:
    return next(DATA / f / name for f in FOLDERS if (DATA / f / name).exists())


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(_path(str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def test_every_type_has_a_computed_reference() -> None:
    assert {e["model_type"] for e in ORACLE if "error" not in e} == TYPES


@pytest.mark.parametrize("entry", ORACLE, ids=IDS)
def test_totals_match_transformers(entry: dict[str, Any]) -> None:
    counted = count_parameters(_spec(entry))
    total = entry["total_params"]
    if entry["model_type"] == "qwen2_5_omni":
        # The thinker is counted; its talker and token2wav apart (see the next test).
        total = sum(v for k, v in entry["components"].items() if k.startswith("thinker."))
    assert counted.total == total
    assert counted.input_embedding == entry["input_embedding_params"]
    assert counted.lm_head == entry["output_head_params"]


@pytest.mark.parametrize("entry", [e for e in ORACLE if e["model_type"] == "qwen2_5_omni"],
                         ids=lambda e: str(e["file"]))
def test_omni_thinker_talker_and_token2wav_sum_to_the_whole(entry: dict[str, Any]) -> None:
    parts = speech_parameters(over_defaults(_config(entry), "qwen2_5_omni", "x", "x"))
    components = entry["components"]
    talker = sum(v for k, v in components.items() if k.startswith("talker."))
    assert parts == {"talker": talker, "token2wav": components["token2wav"]}
    spec = _spec(entry)
    assert count_parameters(spec).total + talker + parts["token2wav"] == entry["total_params"]
    assert any(f"{talker:,}" in note for note in spec.notes)


@pytest.mark.parametrize("entry", [e for e in ORACLE if e.get("active_params")],
                         ids=lambda e: str(e["file"]))
def test_active_parameters_and_experts(entry: dict[str, Any]) -> None:
    counted = count_parameters(_spec(entry))
    assert counted.active == entry["active_params"]
    assert counted.experts == entry["num_experts"]
    assert counted.top_k == entry["experts_per_token"]
    assert counted.moe_layers == entry["moe_layers"]
    assert counted.parameters_per_expert == entry["params_per_routed_expert"]


@pytest.mark.parametrize("entry", ORACLE, ids=IDS)
def test_towers_and_projectors_match_transformers(entry: dict[str, Any]) -> None:
    """The tower and projector modules, plus the parameters outside any named module
    (LLaVA-NeXT's image_newline vector, which the importer puts with the projector)."""
    spec = _spec(entry)
    counted = count_parameters(spec)
    ours = sum(c.parameters for c in counted.by_component
               if c.component in (Component.ENCODER, Component.PROJECTOR))
    components = entry.get("thinker_components") or entry["components"]
    expected = sum(v for k, v in components.items()
                   if any(m in k.split(".") for m in MEDIA_MODULES))
    if "thinker_components" not in entry:
        expected += entry["total_params"] - sum(components.values())
    assert ours == expected


@pytest.mark.parametrize("entry", ORACLE, ids=IDS)
def test_kv_per_token_per_layer_is_the_meta_forward_cache(entry: dict[str, Any]) -> None:
    per_layer: list[int] = []
    for run in state_layers(_spec(entry)):
        kind = kinds.get(run.kind)
        per_layer += [kind.elements_per_token(run) if kind.grows else 0] * run.count
    expected = entry.get("kv_elems_per_token_by_layer") or (
        [entry["kv_elems_per_token_per_layer"]] * entry["kv_layers_with_kv"])
    assert per_layer == expected
    assert sum(per_layer) == entry["kv_elems_per_token"]


def _entry(name: str) -> dict[str, Any]:
    return next(e for e in ORACLE if e["file"] == name)


def test_gemma4_global_layers_drop_v_proj_but_cache_v() -> None:
    """31B: sliding layers 16 KV heads × 256 (K and V: 8,192 elements per token), global
    layers 4 KV heads × 512 with K = V — no v_proj, yet 4,096 elements cached."""
    spec = _spec(_entry("nvidia--Gemma-4-31B-IT-NVFP4.json"))
    assert spec.decoder is not None
    # Decoder layer 5 is global.
    names = {g.name for g in model_tensors(spec) if g.stack == "decoder" and 5 in g.layers}
    assert not any(n.endswith("v_proj.weight") for n in names)
    assert any(n.endswith("k_proj.weight") for n in names)
    assert spec.decoder.at(5).k_eq_v and (spec.decoder.at(5).n_kv_heads,
                                          spec.decoder.at(5).k_dim) == (4, 512)
    assert any("K = V" in note and "110,100,480" in note for note in spec.notes)


def test_kv_shared_layers_keep_queries_and_output_only() -> None:
    spec = _spec(_entry("gemma4--kv-shared-double-wide-audio.json"))
    assert spec.decoder is not None
    assert spec.decoder.kinds()[20:] == [LayerKind.SHARED] * 10
    shared = {g.name.rsplit(".", 2)[-2] for g in model_tensors(spec)
              if g.stack == "decoder" and 25 in g.layers and ".self_attn." in g.name}
    assert shared == {"q_proj", "q_norm", "o_proj"}
    # use_double_wide_mlp: the shared layers' MLPs are twice as wide.
    assert spec.decoder.at(25).intermediate_size == 2 * (spec.decoder.intermediate_size or 0)


def test_gemma4_audio_is_its_own_stage() -> None:
    spec = _spec(_entry("gemma4--kv-shared-double-wide-audio.json"))
    assert [e.kind for e in spec.extra_encoders] == ["audio"]
    entry = _entry("gemma4--kv-shared-double-wide-audio.json")
    groups = [g for g in model_tensors(spec) if g.stack == "other_encoder"]
    components = entry["components"]
    assert sum(g.parameters for g in groups) == (components["model.audio_tower"]
                                                 + components["model.embed_audio"])


def test_gemma3n_matformer_widths_per_layer() -> None:
    spec = _spec(_entry("gemma3n--matformer-widths.json"))
    assert spec.decoder is not None
    widths = [spec.decoder.at(i).intermediate_size for i in range(spec.decoder.layers)]
    assert widths == [16384] * 10 + [8192] * 15 + [12288] * 10


# --- media geometry ----------------------------------------------------------------------

MEDIA: dict[str, Any] = json.loads((DATA / "media-2026.json").read_text())["tokens"]
TOWERS = {
    "llava_next": "transformers-defaults-2026/llava_next.json",
    "llava_onevision": "transformers-defaults-2026/llava_onevision.json",
    "internvl": "transformers-defaults-2026/internvl.json",
    "gemma4": "configs-2026/gemma-4-26B-A4B.json",
    "pixtral": "configs-2026/Devstral-Small-2-24B-Instruct-2512.json",
    "qwen3_vl": "configs-2026/Qwen3-VL-8B-Instruct.json",
}


def _media(relative: str) -> Any:
    spec = from_hf_config(json.loads((DATA / relative).read_text()), relative)
    assert spec.encoder is not None
    return spec.encoder.media


@pytest.mark.parametrize(("tower", "size"), [(t, s) for t in TOWERS for s in MEDIA[t]])
def test_tokens_per_image_are_the_processors(tower: str, size: str) -> None:
    width, height = (int(v) for v in size.split("x"))
    geometry = feature_tokens(_media(TOWERS[tower]), width=width, height=height)
    assert geometry.feature_tokens == MEDIA[tower][size]


@pytest.mark.parametrize(("relative", "patch", "merge", "tokens"), [
    # 448 × 448 at 16 px: 28 × 28 patches, merged 2 × 2 → 196.
    ("configs-2026/Qwen3-VL-8B-Instruct.json", 16, 2, 196),
    ("configs-2026/Qwen3-VL-30B-A3B-Instruct.json", 16, 2, 196),
    # The budget: at most 280 tokens, each 3 × 3 pooled 16 px patches.
    ("configs-2026/gemma-4-26B-A4B.json", 16, 3, 280),
    # MobileNetV5 at 768 px: vision_soft_tokens_per_image.
    ("transformers-defaults-2026/gemma3n.json", None, 1, 256),
    # One 448 px tile of 14 px patches, pixel-shuffled 2 × 2: 256.
    ("transformers-defaults-2026/internvl.json", 14, 2, 256),
    # A 336 px image: the base tile (576) and the 1 × 2 grid unpadded to 24 × 24 plus 24
    # newlines.
    ("transformers-defaults-2026/llava_next.json", 14, 1, 1176),
    # A 384 px image: 729 base tokens, a 27 × 27 grid and 27 newlines.
    ("transformers-defaults-2026/llava_onevision.json", 14, 1, 1485),
    ("transformers-defaults-2026/qwen2_5_omni.json", 14, 2, 256),
    # 1,540 px at 14 px merged 2 × 2: 55 rows of 55 tokens and an [IMG_BREAK].
    ("configs-2026/Devstral-Small-2-24B-Instruct-2512.json", 14, 2, 3080),
])
def test_default_geometry(relative: str, patch: int | None, merge: int, tokens: int,
                          invoke: Invoke) -> None:
    media = _media(relative)
    assert (media.patch_size, media.spatial_merge_size) == (patch, merge)
    assert feature_tokens(media).feature_tokens == tokens
    run = invoke("kv", "--model", str(DATA / relative), "--images", "1", "--tokens", "1000",
                 "-f", "json")
    assert run.code == 0 and run.json()["tokens"] == 1000 + tokens


# --- vLLM's paging of unequal pages -----------------------------------------------------

def test_gemma4_pages_unify_by_enlarging_the_global_layers_block() -> None:
    """31B at TP 1: a sliding layer holds 16 KiB per token, a global one 8 KiB, so vLLM
    (`unify_kv_cache_spec_page_size`) gives the global group 32-token blocks: one page of
    16 tokens × 16 KiB × 10 layers; a 32,768-token request needs 5 sliding groups ×
    (⌈(1,023 + 8,192) ÷ 16⌉ + 1) blocks and ⌈32,768 ÷ 32⌉ for the global group."""
    sliding = KvLayer(kind="sliding", window=1024, bytes_per_token=16384)
    full = KvLayer(kind="full", bytes_per_token=8192)
    pool = pool_layout([sliding] * 50 + [full] * 10, block_size=16, max_model_len=32768,
                       max_num_batched_tokens=8192)
    assert pool.page == 16 * 16384 * 10 and pool.groups == 6
    assert pool.need == 5 * (-(-(1023 + 8192) // 16) + 1) + 32768 // 32


# --- every command on every type ------------------------------------------------------

CONFIGS = sorted({str(_path(str(e["file"])).relative_to(DATA)) for e in ORACLE})


@pytest.mark.parametrize("relative", CONFIGS)
def test_every_command_runs(relative: str, invoke: Invoke) -> None:
    path = str(DATA / relative)
    for args in (("kv", "--model", path, "--images", "1"), ("inventory", path),
                 ("placement", path, "-d", "h100-sxm", "-n", "8"),
                 ("compare", path, "qwen3-vl-8b")):
        run = invoke(*args, "-f", "json")
        assert run.code == 0, (args, run.stderr)
        assert run.json()
