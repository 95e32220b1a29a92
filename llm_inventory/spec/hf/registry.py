"""Which builder reads each Hugging Face `model_type`: the importer's one registry.

Each row is `model_type: (family module, builder function, architecture classes)`. The module
is `llm_inventory.spec.hf.<module>`, imported only when a config needs it. The architecture
classes are the names transformers gives that model's classes (as `architectures` in a
config.json lists them): a config whose `model_type` is unknown but whose `architectures[0]`
is one of them is read by that row, as vLLM's registry (`vllm/model_executor/models/
registry.py`, `_TEXT_GENERATION_MODELS` and friends) dispatches on class names alone.

Adding a model type: its row here (keep each table in alphabetical order, so parallel
additions do not touch the same lines), and the same model type in SUPPORTED in
tests/spec/test_hf_registry.py; then its class defaults and a reference count, as
docs/adding-an-architecture.md says.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from llm_inventory.spec.hf import HFConfig
    from llm_inventory.spec.model import ModelSpec

Builder = Callable[["HFConfig"], "ModelSpec"]
Row = tuple[str, str, tuple[str, ...]]

# Decoder-only language models: they can also be the language model of a composite config.
TEXT_MODELS: dict[str, Row] = {
    "afmoe": ("afmoe", "afmoe", ("AfmoeForCausalLM",)),
    "apertus": ("apertus", "apertus", ("ApertusForCausalLM",)),
    "arcee": ("llama", "arcee", ("ArceeForCausalLM",)),
    "bloom": ("bloom", "bloom", ("BloomForCausalLM",)),
    "cohere": ("cohere", "cohere", ("CohereForCausalLM",)),
    "cohere2": ("cohere", "cohere2", ("Cohere2ForCausalLM",)),
    "cohere2_moe": ("cohere", "cohere2_moe", ("Cohere2MoeForCausalLM",)),
    "deepseek_v2": ("deepseek", "deepseek_v2", ("DeepseekV2ForCausalLM",)),
    "deepseek_v3": ("deepseek", "deepseek_v3", ("DeepseekV3ForCausalLM",)),
    "deepseek_v32": ("deepseek", "deepseek_v32", ("DeepseekV32ForCausalLM",)),
    "deepseek_v4": ("deepseek_v4", "deepseek_v4", ("DeepseekV4ForCausalLM",)),
    # transformers main's DeepseekV41ForCausalLM (5.25 has no class) takes a text config as
    # it is; its class is listed on no row (transformers-architectures.json is 5.23's)
    "deepseek_v41_text": ("deepseek_v41", "deepseek_v41_text", ()),
    # ExaoneConfig builds LlamaForCausalLM (transformers models/auto/modeling_auto.py)
    "exaone": ("llama", "llama", ()),
    "exaone4": ("exaone", "exaone4", ("Exaone4ForCausalLM",)),
    "exaone_moe": ("exaone", "exaone_moe", ("ExaoneMoeForCausalLM",)),
    "bailing_hybrid": ("bailing_hybrid", "bailing_hybrid", ("BailingHybridForCausalLM",)),
    "bailing_moe": ("bailing", "bailing_moe", ()),  # no transformers class
    "cwm": ("llama", "cwm", ("CwmForCausalLM",)),
    "dbrx": ("dbrx", "dbrx", ("DbrxForCausalLM",)),
    "dots1": ("dots", "dots1", ("Dots1ForCausalLM",)),
    "ernie4_5": ("llama", "ernie4_5", ("Ernie4_5ForCausalLM",)),
    "ernie4_5_moe": ("ernie", "ernie4_5_moe", ("Ernie4_5_MoeForCausalLM",)),
    "falcon": ("falcon", "falcon", ("FalconForCausalLM",)),
    "falcon_h1": ("falcon_h1", "falcon_h1", ("FalconH1ForCausalLM",)),
    # FlexOlmoConfig: OLMoE's MoE under OLMo 2's attention and post-norms (same tensors)
    "flex_olmo": ("olmo", "olmoe", ("FlexOlmoForCausalLM",)),
    "gemma": ("gemma", "gemma", ("GemmaForCausalLM",)),
    "gemma2": ("gemma", "gemma2", ("Gemma2ForCausalLM",)),
    "gemma3_text": ("gemma", "gemma3_text", ("Gemma3ForCausalLM",)),
    "gemma4_assistant": ("gemma4", "gemma4_assistant", ("Gemma4AssistantForCausalLM",)),
    "gemma4_text": ("gemma4", "gemma4_text", ("Gemma4ForCausalLM",)),
    "gemma4_unified_assistant": ("gemma4", "gemma4_unified_assistant",
                                 ("Gemma4UnifiedAssistantForCausalLM",)),
    "gemma4_unified_text": ("gemma4", "gemma4_unified_text", ("Gemma4UnifiedForCausalLM",)),
    "glm": ("glm", "glm", ("GlmForCausalLM",)),
    "glm4": ("glm", "glm4", ("Glm4ForCausalLM",)),
    "glm_moe_dsa": ("deepseek", "glm_moe_dsa", ("GlmMoeDsaForCausalLM",)),
    # transformers builds it only inside glm5_next (Glm5NextTextModel has no head of its own)
    "glm5_next_text": ("glm5_next", "glm5_next_text", ()),
    "gpt2": ("gpt2", "gpt2", ("GPT2LMHeadModel",)),
    "gpt_bigcode": ("gpt2", "gpt_bigcode", ("GPTBigCodeForCausalLM",)),
    "gpt_neox": ("gpt_neox", "gpt_neox", ("GPTNeoXForCausalLM",)),
    "glm4_moe": ("glm", "glm4_moe", ("Glm4MoeForCausalLM",)),
    "glm4_moe_lite": ("deepseek", "glm4_moe_lite", ("Glm4MoeLiteForCausalLM",)),
    "gpt_oss": ("gpt_oss", "gpt_oss", ("GptOssForCausalLM",)),
    "gptj": ("gpt_neox", "gptj", ("GPTJForCausalLM",)),
    "granite": ("granite", "granite", ("GraniteForCausalLM",)),
    "granitemoeshared": ("granite", "granitemoeshared", ("GraniteMoeSharedForCausalLM",)),
    "granitemoehybrid": ("granite_hybrid", "granitemoehybrid", ("GraniteMoeHybridForCausalLM",)),
    "granitemoe": ("granite", "granitemoe", ("GraniteMoeForCausalLM",)),
    "helium": ("llama", "helium", ("HeliumForCausalLM",)),
    "hunyuan": ("hunyuan", "hunyuan", ()),  # no transformers class
    "hunyuan_v1_moe": ("hunyuan", "hunyuan_v1_moe", ("HunYuanMoEV1ForCausalLM",)),
    "hy_v3": ("hy", "hy_v3", ("HYV3ForCausalLM",)),
    "hy_v4": ("hy", "hy_v4", ("HYV4ForCausalLM",)),
    # transformers builds it only inside hy_v4_vl: Hy4's layers at the VL model's defaults
    "hy_v4_vl_text": ("hy", "hy_v4", ()),
    "inkling2_loop_text": ("inkling2", "inkling2_loop_text", ("Inkling2LoopForCausalLM",)),
    "inkling2_text": ("inkling2", "inkling2_text", ("Inkling2ForCausalLM",)),
    "inkling_text": ("inkling", "inkling_text", ("InklingForCausalLM",)),
    # InternLM3Config builds LlamaForCausalLM
    "internlm3": ("llama", "llama", ()),
    # IQuestCoderConfig builds LlamaForCausalLM
    "iquestcoder": ("llama", "llama", ()),
    "jamba": ("jamba", "jamba", ("JambaForCausalLM",)),
    "jais2": ("llama", "jais2", ("Jais2ForCausalLM",)),
    "kimi_linear": ("kimi_linear", "kimi_linear", ("KimiLinearForCausalLM",)),
    "laguna": ("laguna", "laguna", ("LagunaForCausalLM",)),
    "lfm2": ("lfm2", "lfm2", ("Lfm2ForCausalLM",)),
    "lfm2_moe": ("lfm2", "lfm2_moe", ("Lfm2MoeForCausalLM",)),
    "lfm3": ("lfm2", "lfm3", ("Lfm3ForCausalLM",)),
    "llama": ("llama", "llama", ("LlamaForCausalLM",)),
    "longcat_flash": ("longcat", "longcat_flash", ("LongcatFlashForCausalLM",)),
    "mamba": ("mamba", "mamba", ("MambaForCausalLM",)),
    "mamba2": ("mamba", "mamba2", ("Mamba2ForCausalLM",)),
    "minimax": ("minimax_lightning", "minimax", ("MiniMaxForCausalLM",)),
    "mimo": ("mimo", "mimo", ()),  # no transformers class
    "mimo_v2_flash": ("mimo", "mimo_v2_flash", ("MiMoV2FlashForCausalLM",)),
    "minimax_m2": ("minimax", "minimax_m2", ("MiniMaxM2ForCausalLM",)),
    # no transformers class: MiniMaxM3VLTextConfig (models/minimax_m3_vl) reads its files
    "minimax_m3": ("minimax", "minimax_m3", ()),
    "ministral3": ("mistral", "ministral3", ("Ministral3ForCausalLM",)),
    "mistral": ("mistral", "mistral", ("MistralForCausalLM",)),
    "mistral4": ("deepseek", "mistral4", ("Mistral4ForCausalLM",)),
    # transformers builds it only inside mistral_large4 (no model class of its own)
    "mistral_large4_text": ("mistral_large4", "mistral_large4_text", ()),
    "mixtral": ("mistral", "mixtral", ("MixtralForCausalLM",)),
    # Muse Glimmer's DFlash drafter: no embedding or head (it borrows its target's)
    "muse_glimmer_assistant": ("muse", "muse_glimmer_assistant", ("MuseGlimmerAssistantModel",)),
    # transformers builds these only inside muse_glimmer / muse_spark (*TextModel has no head)
    "muse_glimmer_text": ("muse", "muse_glimmer_text", ()),
    "muse_spark_text": ("muse", "muse_spark_text", ()),
    "nemotron_h": ("nemotron_h", "nemotron_h", ("NemotronHForCausalLM",)),
    "nemotron-nas": ("nemotron_nas", "nemotron_nas", ()),
    "olmo2": ("olmo", "olmo2", ("Olmo2ForCausalLM",)),
    "olmo3": ("olmo", "olmo3", ("Olmo3ForCausalLM",)),
    "olmo_hybrid": ("olmo", "olmo_hybrid", ("OlmoHybridForCausalLM",)),
    "olmoe": ("olmo", "olmoe", ("OlmoeForCausalLM",)),
    "opt": ("opt", "opt", ("OPTForCausalLM",)),
    # Param2MoeConfig builds Glm4MoeForCausalLM
    "param2moe": ("glm", "glm4_moe", ()),
    "phi": ("phi", "phi", ("PhiForCausalLM",)),
    "phi3": ("phi", "phi3", ("Phi3ForCausalLM",)),
    "phimoe": ("phi", "phimoe", ("PhimoeForCausalLM",)),
    "qwen2": ("qwen", "qwen2", ("Qwen2ForCausalLM",)),
    "qwen2_moe": ("qwen", "qwen2_moe", ("Qwen2MoeForCausalLM",)),
    "qwen3": ("qwen", "qwen3", ("Qwen3ForCausalLM",)),
    "qwen3_5_moe_text": ("qwen_next", "qwen3_5_moe_text", ("Qwen3_5MoeForCausalLM",)),
    "qwen3_5_text": ("qwen_next", "qwen3_5_text", ("Qwen3_5ForCausalLM",)),
    "qwen3_moe": ("qwen", "qwen3_moe", ("Qwen3MoeForCausalLM",)),
    "qwen3_next": ("qwen_next", "qwen3_next", ("Qwen3NextForCausalLM",)),
    "qwen4_exp_text": ("qwen4_exp", "qwen4_exp_text", ("Qwen4ExpForCausalLM",)),
    # SarvamMLAConfig builds DeepseekV3ForCausalLM, SarvamMoEConfig Glm4MoeForCausalLM
    "sarvam_mla": ("deepseek", "deepseek_v3", ()),
    "sarvam_moe": ("glm", "glm4_moe", ()),
    "seed_oss": ("seed_oss", "seed_oss", ("SeedOssForCausalLM",)),
    "smollm3": ("smollm", "smollm3", ("SmolLM3ForCausalLM",)),
    "solar_open": ("glm", "solar_open", ("SolarOpenForCausalLM",)),
    "starcoder2": ("starcoder2", "starcoder2", ("Starcoder2ForCausalLM",)),
    # Step-3.5-Flash's flat file; transformers reads it as Step3p7TextConfig, no model class.
    "step3p5": ("step", "step3p5", ()),
}

# Encoder-only and encoder-decoder models.
ENCODER_MODELS: dict[str, Row] = {
    "bert": ("bert", "bert_like", (
        "BertModel", "BertForMaskedLM", "BertForSequenceClassification",
        "BertForTokenClassification", "BertForQuestionAnswering", "BertForMultipleChoice",
        "BertForNextSentencePrediction", "BertForPreTraining")),
    "modernbert": ("modernbert", "modernbert", (
        "ModernBertModel", "ModernBertForMaskedLM", "ModernBertForSequenceClassification",
        "ModernBertForTokenClassification", "ModernBertForQuestionAnswering",
        "ModernBertForMultipleChoice")),
    "roberta": ("bert", "bert_like", (
        "RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
        "RobertaForTokenClassification", "RobertaForQuestionAnswering",
        "RobertaForMultipleChoice")),
    "t5": ("t5", "t5", ("T5ForConditionalGeneration", "T5Model", "T5EncoderModel")),
    "whisper": ("whisper", "whisper", (
        "WhisperForConditionalGeneration", "WhisperModel", "WhisperForAudioClassification")),
    "xlm-roberta": ("bert", "bert_like", (
        "XLMRobertaModel", "XLMRobertaForMaskedLM", "XLMRobertaForSequenceClassification",
        "XLMRobertaForTokenClassification", "XLMRobertaForQuestionAnswering",
        "XLMRobertaForMultipleChoice")),
}

# Composite (vision-language) models: a tower, a projector and a language model.
MULTIMODAL_MODELS: dict[str, Row] = {
    # transformers main's DeepseekV41Config (5.25 has no class): DeepseekV41ForCausalLM builds
    # its text_config and no tower yet
    "deepseek_v41": ("deepseek_v41", "deepseek_v41", ()),
    "exaone4_5": ("exaone", "exaone4_5", ("Exaone4_5_ForConditionalGeneration",)),
    "gemma3": ("gemma3", "gemma3", ("Gemma3ForConditionalGeneration",)),
    "kimi_k25": ("kimi", "kimi_k25", ("Kimi_K25ForConditionalGeneration",)),
    "kimi_k3": ("kimi_k3", "kimi_k3", ()),  # no transformers class
    "gemma3n": ("gemma3n", "gemma3n", ("Gemma3nForConditionalGeneration",)),
    "gemma4": ("gemma4", "gemma4", ("Gemma4ForConditionalGeneration",)),
    "gemma4_unified": ("gemma4", "gemma4_unified", ("Gemma4UnifiedForConditionalGeneration",)),
    "glm5_next": ("glm5_next", "glm5_next", ("Glm5NextForConditionalGeneration",)),
    "hy_v4_vl": ("hy", "hy_v4_vl", ("HYV4VLForConditionalGeneration",)),
    "inkling2": ("inkling2", "inkling2", ("Inkling2ForConditionalGeneration",)),
    "inkling2_loop": ("inkling2", "inkling2_loop", ("Inkling2LoopForConditionalGeneration",)),
    "inkling_mm_model": ("inkling", "inkling_mm_model", ("InklingForConditionalGeneration",)),
    "internvl": ("internvl", "internvl", ("InternVLForConditionalGeneration",)),
    "llama4": ("llama4", "llama4", ("Llama4ForConditionalGeneration",)),
    "lfm2_vl": ("lfm2_vl", "lfm2_vl", ("Lfm2VlForConditionalGeneration",)),
    "llava": ("llava", "llava", ("LlavaForConditionalGeneration",)),
    "llava_next": ("llava", "llava_next", ("LlavaNextForConditionalGeneration",)),
    "llava_onevision": ("llava", "llava_onevision", ("LlavaOnevisionForConditionalGeneration",)),
    "minimax_m3_vl": ("minimax_vl", "minimax_m3_vl", ("MiniMaxM3SparseForConditionalGeneration",)),
    "mistral3": ("mistral3", "mistral3", ("Mistral3ForConditionalGeneration",)),
    # Mistral 3's composite around the mistral_large4_text language model
    "mistral_large4": ("mistral3", "mistral3", ("MistralLarge4ForConditionalGeneration",)),
    "mllama": ("mllama", "mllama", ("MllamaForConditionalGeneration",)),
    "muse_glimmer": ("muse", "muse_glimmer", ("MuseGlimmerForConditionalGeneration",)),
    "muse_spark": ("muse", "muse_spark", ("MuseSparkForConditionalGeneration",)),
    "nemotron_h_omni": ("nemotron_h_omni", "nemotron_h_omni", ("NemotronH_Omni_Reasoning_V3",)),
    "qwen2_5_omni": ("qwen_omni", "qwen2_5_omni", ("Qwen2_5OmniForConditionalGeneration",)),
    "qwen2_5_vl": ("qwen_vl", "qwen2_5_vl", ("Qwen2_5_VLForConditionalGeneration",)),
    "qwen2_vl": ("qwen_vl", "qwen2_vl", ("Qwen2VLForConditionalGeneration",)),
    "qwen3_5": ("qwen_next", "qwen3_5", ("Qwen3_5ForConditionalGeneration",)),
    "qwen3_5_moe": ("qwen_next", "qwen3_5_moe", ("Qwen3_5MoeForConditionalGeneration",)),
    "qwen3_vl": ("qwen_vl", "qwen3_vl", ("Qwen3VLForConditionalGeneration",)),
    "qwen3_vl_moe": ("qwen_vl", "qwen3_vl_moe", ("Qwen3VLMoeForConditionalGeneration",)),
    "qwen4_exp": ("qwen4_exp", "qwen4_exp", ("Qwen4ExpForConditionalGeneration",)),
    # Step-3.7-Flash's hub file nests a step3p5 text_config and the vision tower.
    "step3p7": ("step", "step3p7", ("Step3p7ForConditionalGeneration",)),
}

MODELS: Mapping[str, Row] = {**TEXT_MODELS, **ENCODER_MODELS, **MULTIMODAL_MODELS}


def supported_model_types() -> list[str]:
    """Every model type the registry reads (no family module is imported)."""
    return sorted(MODELS)


def is_text_model(model_type: str) -> bool:
    """Whether the type is a decoder-only language model (one a composite may wrap)."""
    return model_type in TEXT_MODELS


@cache
def _architectures() -> dict[str, str]:
    found: dict[str, str] = {}
    for model_type, (_, _, classes) in MODELS.items():
        for name in classes:
            found[name] = model_type
    return found


def model_type_of_architecture(name: str) -> str | None:
    """The model type whose row lists this architecture class, if any."""
    return _architectures().get(name)


def builder(model_type: str) -> Builder:
    """The builder of a registered model type, importing its family module.

    A module or function named in the table that does not exist raises (ImportError,
    AttributeError): a broken registry is a bug, never an unsupported type.
    """
    module, function, _ = MODELS[model_type]
    family: Any = importlib.import_module(f"llm_inventory.spec.hf.{module}")
    return cast(Builder, getattr(family, function))
