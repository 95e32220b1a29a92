"""The drift check's pure helpers (tools/drift.py, a dev-only script) on a small fixture:
registry sources in the forms transformers and vLLM write them."""

from __future__ import annotations

from types import ModuleType

from tests.reference import load_tool

AUTO_MAPPINGS = '''
from collections import OrderedDict
CONFIG_MAPPING_NAMES = OrderedDict(
    [
        ("llama", "LlamaConfig"),
        ("lfm2_moe", "Lfm2MoeConfig"),
        ("siglip", "SiglipConfig"),
    ]
)
'''
CONFIGURATION_AUTO = '''
from .auto_mappings import CONFIG_MAPPING_NAMES
CONFIG_MAPPING_NAMES = OrderedDict(**{"gpt-sw3": "GPT2Config"}, **CONFIG_MAPPING_NAMES)
CONFIG_MAPPING_NAMES.update({"mimi_decoder": "MimiDecoderConfig"})
'''
MODELING_AUTO = '''
MODEL_MAPPING_NAMES = OrderedDict([("llama", "LlamaModel"), ("siglip", "SiglipModel")])
MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(
    [
        # Model for Causal LM mapping
        ("llama", "LlamaForCausalLM"),
        ("lfm2_moe", "Lfm2MoeForCausalLM"),
        ("gpt-sw3", "GPT2LMHeadModel"),
    ]
)
'''
VLLM_REGISTRY = '''
_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "Lfm2MoeForCausalLM": ("lfm2_moe", "Lfm2MoeForCausalLM"),
}
_MULTIMODAL_MODELS = {
    "Lfm2VlForConditionalGeneration": ("lfm2_vl", "Lfm2VLForConditionalGeneration"),
    **{k: v for k, v in _TEXT_GENERATION_MODELS.items()},
}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS}
'''


def _tool() -> ModuleType:
    return load_tool("drift")


def test_transformers_types_follow_every_form_of_the_mapping() -> None:
    drift = _tool()
    types = drift.transformers_types(AUTO_MAPPINGS, CONFIGURATION_AUTO)
    assert types == ["gpt-sw3", "lfm2_moe", "llama", "mimi_decoder", "siglip"]


def test_missing_types_put_generative_ones_first() -> None:
    drift = _tool()
    types = drift.transformers_types(AUTO_MAPPINGS, CONFIGURATION_AUTO)
    tags = drift.auto_tables(MODELING_AUTO)
    rows = drift.missing_types(types, ["llama"], tags)
    assert [r["model_type"] for r in rows] == ["gpt-sw3", "lfm2_moe", "mimi_decoder",
                                               "siglip"]
    assert [r["generative"] for r in rows] == [True, True, False, False]
    assert rows[3]["tables"] == ["MODEL_MAPPING_NAMES"]


def test_vllm_architectures_and_what_the_registry_lacks() -> None:
    drift = _tool()
    found = drift.vllm_architectures(VLLM_REGISTRY)
    assert found == {"LlamaForCausalLM": "_TEXT_GENERATION_MODELS",
                     "Lfm2MoeForCausalLM": "_TEXT_GENERATION_MODELS",
                     "Lfm2VlForConditionalGeneration": "_MULTIMODAL_MODELS"}
    missing = drift.missing_architectures(found, ["LlamaForCausalLM"])
    assert [m["architecture"] for m in missing] == ["Lfm2MoeForCausalLM",
                                                    "Lfm2VlForConditionalGeneration"]


def test_releases_newer_than_the_newest_era() -> None:
    drift = _tool()
    eras = [("vllm", "0.28", "vllm_v28"), ("vllm", "0.9", "vllm_old"),
            ("llamacpp", "7880", "llamacpp")]
    newest = drift.newest_eras(eras)
    assert newest == {"vllm": "0.28", "llamacpp": "7880"}
    releases = drift.parse_release_lines(
        "# engine release\nvllm 0.27.1\nvllm 0.33.0\nvllm 0.30.0rc1\nvllm 0.28\n"
        "llamacpp b8123\nsglang 0.6.0  # no era modelled: skipped\n")
    newer = drift.newer_releases(releases, newest)
    assert [(r["engine"], r["release"]) for r in newer] == [("llamacpp", "b8123"),
                                                           ("vllm", "0.33.0")]


def test_version_key_orders_numerically() -> None:
    drift = _tool()
    assert drift.version_key("0.10.1") > drift.version_key("0.9.2")
    assert drift.version_key("b8123") == (8123,)
    assert drift.version_key("0.31.0rc1") == (0, 31, 0)
