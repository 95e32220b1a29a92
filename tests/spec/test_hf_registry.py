"""The importer's registry: the explicit list of supported model types, lazy family modules,
and dispatch on the architecture class or the wrapped text config.

A model type added to llm_inventory/spec/hf/registry.py is added to SUPPORTED here in the
same change (keep it in alphabetical order), with its class defaults and a reference count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import builders, from_hf_config, registry, supported_model_types
from llm_inventory.spec.hf.defaults import has_class_defaults
from llm_inventory.spec.model import Family, ModelSpec
from tests.reference import (
    DATA,
    MODELLED_FOLDERS_2026,
    model_config,
    oracle_totals,
    reference_models,
)

SUPPORTED = [
    "afmoe",
    "apertus",
    "arcee",
    "bailing_hybrid",
    "bailing_moe",
    "bert",
    "bloom",
    "cohere",
    "cohere2",
    "cohere2_moe",
    "cwm",
    "dbrx",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_v4",
    "deepseek_v41",
    "deepseek_v41_text",
    "dots1",
    "ernie4_5",
    "ernie4_5_moe",
    "exaone",
    "exaone4",
    "exaone4_5",
    "exaone_moe",
    "falcon",
    "falcon_h1",
    "flex_olmo",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gemma3n",
    "gemma4",
    "gemma4_assistant",
    "gemma4_text",
    "gemma4_unified",
    "gemma4_unified_assistant",
    "gemma4_unified_text",
    "glm",
    "glm4",
    "glm4_moe",
    "glm4_moe_lite",
    "glm5_next",
    "glm5_next_text",
    "glm_moe_dsa",
    "gpt2",
    "gpt_bigcode",
    "gpt_neox",
    "gpt_oss",
    "gptj",
    "granite",
    "granitemoe",
    "granitemoehybrid",
    "granitemoeshared",
    "helium",
    "hunyuan",
    "hunyuan_v1_moe",
    "hy_v3",
    "hy_v4",
    "hy_v4_vl",
    "hy_v4_vl_text",
    "inkling2",
    "inkling2_loop",
    "inkling2_loop_text",
    "inkling2_text",
    "inkling_mm_model",
    "inkling_text",
    "internlm3",
    "internvl",
    "iquestcoder",
    "jais2",
    "jamba",
    "kimi_k25",
    "kimi_k3",
    "kimi_linear",
    "laguna",
    "lfm2",
    "lfm2_moe",
    "lfm2_vl",
    "lfm3",
    "llama",
    "llama4",
    "llava",
    "llava_next",
    "llava_onevision",
    "longcat_flash",
    "mamba",
    "mamba2",
    "mimo",
    "mimo_v2_flash",
    "minimax",
    "minimax_m2",
    "minimax_m3",
    "minimax_m3_vl",
    "ministral3",
    "mistral",
    "mistral3",
    "mistral4",
    "mistral_large4",
    "mistral_large4_text",
    "mixtral",
    "mllama",
    "modernbert",
    "muse_glimmer",
    "muse_glimmer_assistant",
    "muse_glimmer_text",
    "muse_spark",
    "muse_spark_text",
    "nemotron-nas",
    "nemotron_h",
    "nemotron_h_omni",
    "olmo2",
    "olmo3",
    "olmo_hybrid",
    "olmoe",
    "opt",
    "param2moe",
    "phi",
    "phi3",
    "phimoe",
    "qwen2",
    "qwen2_5_omni",
    "qwen2_5_vl",
    "qwen2_moe",
    "qwen2_vl",
    "qwen3",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "qwen3_5_text",
    "qwen3_moe",
    "qwen3_next",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen4_exp",
    "qwen4_exp_text",
    "roberta",
    "sarvam_mla",
    "sarvam_moe",
    "seed_oss",
    "smollm3",
    "solar_open",
    "starcoder2",
    "step3p5",
    "step3p7",
    "t5",
    "whisper",
    "xlm-roberta",
]


def test_the_registry_holds_exactly_the_supported_types() -> None:
    assert SUPPORTED == sorted(SUPPORTED)
    assert supported_model_types() == SUPPORTED


@pytest.mark.parametrize("model_type", SUPPORTED)
def test_every_family_module_and_builder_exists(model_type: str) -> None:
    """A misspelt module or function name in the table fails here, for that type."""
    assert callable(registry.builder(model_type))


def test_builders_imports_every_family() -> None:
    assert sorted(builders()) == SUPPORTED


def test_a_missing_family_module_is_an_error_not_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.MODELS, "jamba", ("hybird", "jamba", ("JambaForCausalLM",)))
    with pytest.raises(ModuleNotFoundError):
        builders()
    with pytest.raises(ModuleNotFoundError):
        from_hf_config(_load("transformers-defaults/jamba.json"), "config.json")


@pytest.mark.parametrize("model_type", SUPPORTED)
def test_every_supported_type_has_class_defaults(model_type: str) -> None:
    assert has_class_defaults(model_type)


def _counted_types() -> set[str]:
    """Model types with a reference total somewhere under tests/data."""
    types = {model_config(r["name"])["model_type"] for r in reference_models()}
    types |= {json.loads(path.read_text())["model_type"] for path, _ in oracle_totals()}
    more = _load("more-configs/oracle-totals.json")
    types |= set(more["minimal"])
    encoders = _load("more-configs/oracle-totals-encoders.json")["totals"]
    types |= {_load(f"more-configs/{name}")["model_type"] for name in encoders}
    # This year's reference figures (oracle-2026*.json): the type of every file counted, and
    # of the language model it wraps (counted with it).
    for name in sorted(p.name for p in DATA.glob("oracle-2026*.json")):
        for entry in _load_list(name):
            if not isinstance(entry.get("total_params"), int):
                continue
            types.add(entry["model_type"])
            for folder in MODELLED_FOLDERS_2026:
                path = DATA / folder / entry["file"]
                text = json.loads(path.read_text()).get("text_config") if path.is_file() \
                    else None
                if isinstance(text, dict) and isinstance(text.get("model_type"), str):
                    types.add(text["model_type"])
    # Types counted by the checkpoint's own modelling code where transformers has no class.
    types |= {str(e["model_type"]) for e in _load("checkpoint-code-counts.json")["entries"]}
    return types | set(NO_TRANSFORMERS_CLASS)


# Types transformers builds no class for, so no total of its own exists: each is counted
# from its checkpoint's modelling code, tested against that code's rules in tests/spec.
NO_TRANSFORMERS_CLASS = {
    "nemotron-nas": "DeciLM (modeling_decilm.py); see tests/data/configs-2026-dense/README.md",
    # No public modelling code either: counted against the checkpoint's tensor listing.
    "kimi_k3": "tests/data/configs-2026-checkpoint-listing (tests/spec/test_kimi_k3.py)",
}


def test_every_supported_type_has_a_reference_count() -> None:
    assert sorted(set(SUPPORTED) - _counted_types()) == []


def test_architecture_classes_are_transformers_names_for_their_type() -> None:
    """Each class a row lists is one transformers 5.23.0 maps to that model type, and no
    class is listed twice."""
    known: dict[str, list[str]] = _load("transformers-architectures.json")["classes"]
    listed = [(mt, name) for mt, (_, _, names) in registry.MODELS.items() for name in names]
    assert [(mt, n) for mt, n in listed if mt not in known.get(n, [])] == []
    names = [n for _, n in listed]
    assert len(names) == len(set(names))


def _imported_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(m for m in "
         "sys.modules if m.startswith('llm_inventory.spec.hf.'))))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return {m.removeprefix("llm_inventory.spec.hf.") for m in out}


def test_listing_the_supported_types_imports_no_family_module() -> None:
    loaded = _imported_after("from llm_inventory.spec.hf import supported_model_types\n"
                             "supported_model_types()")
    assert loaded == {"registry", "reads"}


def test_a_config_imports_only_its_own_family() -> None:
    path = DATA / "models" / "Llama-3.1-8B.json"
    loaded = _imported_after("import json\nfrom llm_inventory.spec.hf import from_hf_config\n"
                             f"from_hf_config(json.load(open({str(path)!r})), 'x')")
    assert loaded == {"registry", "reads", "irrelevant", "dispatch", "defaults", "common",
                      "quant", "llama"}


# --- dispatch ----------------------------------------------------------------------------

def _load(relative: str) -> dict[str, Any]:
    return dict(json.loads((DATA / relative).read_text()))


def _load_list(relative: str) -> list[dict[str, Any]]:
    return list(json.loads((DATA / relative).read_text()))


def _same_model(a: ModelSpec, b: ModelSpec) -> None:
    assert a.decoder == b.decoder and a.encoder == b.encoder
    assert count_parameters(a).total == count_parameters(b).total


@pytest.mark.parametrize(("base", "architecture"), [
    ("models/Llama-3.1-8B.json", "LlamaForCausalLM"),
    ("engine-logs/configs/Qwen--Qwen2.5-7B-Instruct.json", "Qwen2ForCausalLM"),
    ("models/DeepSeek-V3.json", "DeepseekV3ForCausalLM"),
])
def test_an_unknown_type_dispatches_on_its_architecture(base: str, architecture: str) -> None:
    """As vLLM does: a Kimi-K2-style file (its own model_type, DeepSeek-V3's class) is read
    by the class's builder, and the model says so."""
    data = _load(base)
    assert data["architectures"] == [architecture]
    renamed = {**data, "model_type": "kimi_k2"}
    spec = from_hf_config(renamed, "config.json")
    _same_model(spec, from_hf_config(data, "config.json"))
    note = spec.notes[-1]
    assert "'kimi_k2'" in note and architecture in note and data["model_type"] in note


def test_a_known_type_ignores_its_architecture() -> None:
    data = {**_load("models/Llama-3.1-8B.json"), "architectures": ["MistralForCausalLM"]}
    spec = from_hf_config(data, "config.json")
    assert not any("architecture" in note for note in spec.notes)
    assert spec.decoder is not None and spec.decoder.layer_types is None  # not sliding


def test_a_wrapper_of_unknown_type_dispatches_on_its_text_config() -> None:
    text = _load("models/Llama-3.1-8B.json")
    wrapper = {
        "model_type": "nonesuch_vl",
        "architectures": ["NonesuchForConditionalGeneration"],
        "torch_dtype": "float16",
        "text_config": {k: v for k, v in text.items() if k != "torch_dtype"},
        "vision_config": {"model_type": "nonesuch_vision", "hidden_size": 1152},
    }
    spec = from_hf_config(wrapper, "config.json")
    alone = from_hf_config({**text, "torch_dtype": "float16"}, "config.json")
    assert spec.decoder == alone.decoder
    # The tower's config lacks the sizes a generic estimate needs: said, never silent.
    assert spec.family is Family.DENSE and spec.dtype == "fp16" and spec.encoder is None
    assert any("vision_config lacks" in note for note in spec.notes)
    assert any("'nonesuch_vl'" in note and "text_config" in note and "not counted" in note
               for note in spec.notes)
    assert not spec.exact and spec.estimated is not None and "nonesuch_vl" in spec.estimated


def test_a_wrapper_text_config_dispatches_on_its_class_too() -> None:
    text = {**_load("models/Llama-3.1-8B.json"), "model_type": "nonesuch_text"}
    spec = from_hf_config({"model_type": "nonesuch_vl", "text_config": text}, "config.json")
    _same_model(spec, from_hf_config(_load("models/Llama-3.1-8B.json"), "config.json"))


@pytest.mark.parametrize("data", [
    {"model_type": "nonesuch"},
    {"model_type": "nonesuch", "architectures": ["NonesuchForCausalLM"]},
    {"model_type": "nonesuch", "text_config": {"model_type": "nonesuch_text"}},
    # A wrapper's text_config must be a language model, not an encoder.
    {"model_type": "nonesuch", "text_config": {"model_type": "bert"}},
    {"model_type": "nonesuch", "text_config": "llama"},
])
def test_nothing_known_is_an_error_naming_model_type(data: dict[str, Any]) -> None:
    with pytest.raises(InputError) as error:
        from_hf_config(data, "config.json")
    first = supported_model_types()[0]
    assert "model_type" in str(error.value) and f"supported: {first}" in str(error.value)
    assert "model_type" in str(error.value) and f"supported: {SUPPORTED[0]}," in str(error.value)
