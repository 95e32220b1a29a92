"""Built-in presets: every one loads, names its source, and counts exactly what transformers
allocates for the same config (tests/data/preset-oracle-totals.json)."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest

from llm_inventory.engine.catalog import model_figures
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Family
from llm_inventory.spec.presets import Preset, find_preset, load_preset, presets
from tests.reference import DATA, model_config, oracle_totals, reference_models

ORACLE: dict[str, Any] = json.loads((DATA / "preset-oracle-totals.json").read_text())
PRESETS = {p.name: p for p in presets()}
NAMES = list(PRESETS)

# The chapter's families, and the presets the catalog promises (one per topology at least).
REQUIRED = [
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "mixtral-8x22b",
    "deepseek-v3", "qwen3-235b-a22b", "qwen3-30b-a3b", "gemma-2-27b", "gpt-oss-120b",
    "gpt-oss-20b", "qwen2-vl-7b", "llava-1.5-7b", "whisper-large-v3", "bge-large", "flux-dev",
]
KEBAB = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")


def _folder() -> Any:
    return resources.files("llm_inventory.data").joinpath("presets")


def _raw(preset: Preset) -> dict[str, Any]:
    return dict(json.loads(_folder().joinpath(preset.file).read_text("utf-8")))


def test_required_presets_are_listed() -> None:
    assert not [name for name in REQUIRED if name not in PRESETS]


def test_names_are_unique_and_kebab_case() -> None:
    assert len(NAMES) == len(set(NAMES))
    assert [n for n in NAMES if not KEBAB.match(n)] == []


def test_names_and_aliases_resolve_to_one_preset_each() -> None:
    owner: dict[str, str] = {}
    for preset in presets():
        for key in (preset.name, *preset.aliases):
            folded = key.strip().lower().replace("_", "-")
            assert owner.setdefault(folded, preset.name) == preset.name, key
            assert find_preset(key).name == preset.name


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_names_its_source(name: str) -> None:
    preset = PRESETS[name]
    assert len(preset.source) > 30
    assert preset.description
    # A copied config says where the copy was found: a repository at a commit, or the
    # explicit provenance of the few copies without one.
    assert re.search(r"github \S+/\S+ @[0-9a-f]{7,40}", preset.source) or any(
        phrase in preset.source for phrase in ("llm-d planner", "unknown origin", "transformers")
    ), preset.source


def test_every_file_in_the_folder_belongs_to_one_preset() -> None:
    files = {p.file for p in presets()}
    assert len(files) == len(PRESETS)
    on_disk = {f.name for f in _folder().iterdir() if f.name != "index.yaml"
               and f.name.endswith((".json", ".yaml"))}
    assert on_disk == files


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_loads(name: str) -> None:
    preset = PRESETS[name]
    spec = load_preset(name)
    assert spec.name == name
    assert spec.source == preset.source
    figures = model_figures(spec)
    assert figures.parameters > 0
    assert figures.weight_bytes > 0


@pytest.mark.parametrize("name", sorted(ORACLE["presets"]))
def test_total_matches_transformers_exactly(name: str) -> None:
    assert count_parameters(load_preset(name)).total == ORACLE["presets"][name]["total"]


def test_every_config_preset_has_an_oracle_total() -> None:
    configs = {n for n, p in PRESETS.items() if p.file.endswith(".json")}
    assert configs == set(ORACLE["presets"])


def _canonical(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True)


def _shared_references() -> dict[str, int]:
    """The totals tests/data already holds, keyed by the config's content."""
    known = {_canonical(model_config(r["name"])): int(r["total_params"])
             for r in reference_models()}
    for path, total in oracle_totals():
        known[_canonical(json.loads(path.read_text()))] = total
    return known


def _shared() -> list[str]:
    """The presets that are the same file as a shared reference config."""
    known = _shared_references()
    return [n for n in sorted(ORACLE["presets"]) if _canonical(_raw(PRESETS[n])) in known]


@pytest.mark.parametrize("name", _shared())
def test_oracle_totals_agree_with_the_shared_reference_data(name: str) -> None:
    """Where a preset is the same file as a shared reference config, the totals agree."""
    reference = _shared_references()[_canonical(_raw(PRESETS[name]))]
    assert ORACLE["presets"][name]["total"] == reference


def test_many_presets_share_a_reference_config() -> None:
    assert len(_shared()) >= 20


def test_deepseek_r1_has_deepseek_v3_shapes() -> None:
    assert _raw(PRESETS["deepseek-r1"]) == _raw(PRESETS["deepseek-v3"])


def test_flux_dev_parts_are_the_sourced_counts() -> None:
    spec = load_preset("flux-dev")
    assert spec.family is Family.DIFFUSION and spec.diffusion is not None
    parts = {p.name: p.parameters for p in spec.diffusion.parts}
    assert parts == ORACLE["flux-dev"]
    d = spec.diffusion
    # FLUX.1 [dev] is guidance-distilled: one pass per step; 2 x 2 packing of a 16-channel
    # latent at 1/8 scale: 1,024 px -> 128 x 128 latent -> 64 x 64 = 4,096 image tokens.
    assert not d.classifier_free_guidance
    assert (d.latent_channels, d.vae_scale_factor, d.patch_size) == (16, 8, 2)
    assert (d.image_size // d.vae_scale_factor // d.patch_size) ** 2 == 4096
    assert d.text_tokens == 512
    assert model_figures(spec).parameters == 16_870_599_139


def test_unknown_preset_names_close_matches() -> None:
    with pytest.raises(InputError) as caught:
        find_preset("lama-3.1-70b")
    assert "did you mean llama-3.1-70b" in caught.value.message
