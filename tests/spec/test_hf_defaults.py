"""The importer's class defaults (llm_inventory/data/hf-defaults/) are the configuration
classes' own: each value equals what the class's `to_dict()` holds when built with no
arguments (tests/data/transformers-defaults/, written by tools/transformers_defaults.py)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config, registry
from llm_inventory.spec.hf.defaults import class_defaults
from tests.reference import DATA

REFERENCES = DATA / "transformers-defaults"
FOLDER = resources.files("llm_inventory.data").joinpath("hf-defaults")
FILES = sorted(e.name.removesuffix(".json") for e in FOLDER.iterdir() if e.name.endswith(".json"))
SOURCE = re.compile(r"^transformers 5\.2[345]\.0 src/transformers/models/[a-z0-9_]+/"
                    r"configuration_[a-z0-9_]+\.py$"
                    # A type transformers has no class for: the checkpoint's own code.
                    r"|^checkpoint code [\w.-]+/[\w.-]+ configuration_[a-z0-9_]+\.py: .+$")
# A model type transformers has no class for: the checkpoint's own configuration module.
CHECKPOINT_SOURCE = re.compile(r"^checkpoint code github [\w.-]+/[\w.-]+ @[0-9a-f]{40} "
                               r"(\S+/)?configuration_[a-z0-9_]+\.py$")
# Types with no transformers class (no to_dict() to compare with): a real config stands in.
NO_CLASS = {"nemotron-nas": DATA / "configs-2026" / "Llama-3_3-Nemotron-Super-49B-v1.json",
            # MiniMaxM3VLTextConfig reads the hub file's keys under other names
            # (sparse_attention_config, moe_layer_freq): the real file stands in.
            "minimax_m3": DATA / "configs-2026" / "MiniMax-M3.json",
            # No class and no public configuration code: the real file stands in.
            "kimi_k3": DATA / "configs-2026-checkpoint-listing" / "moonshotai--Kimi-K3.json"}
YEAR_2026 = DATA / "transformers-defaults-2026"
# Classes whose bare defaults do not build (Lfm2MoeConfig leaves layer_types None): their
# defaults with the fewest values set to build stand in (transformers-defaults-2026/README.md).
MADE_BUILDABLE = {"lfm2_moe": YEAR_2026 / "lfm2_moe--layer-types-of-LFM2-8B-A1B.json",
                  # Qwen4ExpConfig(): indexed_attention layers with null indexer keys.
                  "qwen4_exp": DATA / "configs-2026-qwen4"
                  / "transformers-defaults--qwen4_exp-with-qsa.json",
                  "qwen4_exp_text": DATA / "configs-2026-qwen4"
                  / "transformers-defaults--qwen4_exp_text-with-qsa.json"}
# Defaults to_dict() does not show as the class holds them, and why.
NOT_IN_TO_DICT = {
    ("gemma3_text", "sliding_window_pattern"):
        "read in __post_init__ as kwargs.get('sliding_window_pattern', 6); to_dict keeps "
        "the layer_types it makes",
    ("qwen2_vl_text", "sliding_window"):
        "the field defaults to 4096; __post_init__ drops it while use_sliding_window is false",
    ("qwen2_5_vl_text", "sliding_window"):
        "the field defaults to 4096; __post_init__ drops it while use_sliding_window is false",
    ("ernie4_5_moe", "moe_layer_end_index"):
        "the field defaults to -1 (the last layer); __post_init__ writes num_hidden_layers - 1, "
        "which to_dict keeps",
    ("gemma3n_text", "intermediate_size"):
        "the field defaults to 16,384; __post_init__ expands it to one width per layer",
    ("gemma4_text", "global_head_dim"):
        "read in __post_init__ as kwargs.pop('global_head_dim', 512); to_dict keeps the "
        "per_layer_config it makes",
    ("gemma4_unified_text", "global_head_dim"):
        "read in __post_init__ as kwargs.pop('global_head_dim', 512); to_dict keeps the "
        "per_layer_config it makes",
    ("bailing_hybrid", "head_dim"):
        "the field defaults to 128, which __post_init__ copies to linear_head_dim before it "
        "sets head_dim to qk_rope_head_dim (64); to_dict keeps both",
}


def _reference(model_type: str) -> dict[str, Any]:
    for path in (REFERENCES / f"{model_type}.json",
                 REFERENCES / "sub-configs" / f"{model_type}.json",
                 DATA / "more-configs" / f"transformers-defaults--{model_type}.json",
                 YEAR_2026 / f"{model_type}.json",
                 DATA / "configs-2026-dense" / f"transformers-defaults--{model_type}.json",
                 *DATA.glob(f"configs-2026*/transformers-defaults--{model_type}.json"),
                 NO_CLASS.get(model_type, REFERENCES)):
        if path.is_file():
            return dict(json.loads(path.read_text()))
    raise AssertionError(f"no to_dict() reference for {model_type}")


def _raw(model_type: str) -> dict[str, Any]:
    return dict(json.loads(FOLDER.joinpath(f"{model_type}.json").read_text("utf-8")))


def _lookup(reference: dict[str, Any], key: str, alias: str | None) -> Any:
    """The class's value: the key, its attribute_map name, or inside rope_parameters
    (where transformers 5 keeps partial_rotary_factor)."""
    for name in (key, alias):
        if name is not None and name in reference:
            return reference[name]
    return (reference.get("rope_parameters") or {}).get(key, "<absent>")


def _differences(ours: Any, theirs: Any, path: str) -> list[str]:
    """Where `ours` differs; a nested mapping need only agree on the keys it gives."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [d for k, v in ours.items()
                for d in _differences(v, theirs.get(k, "<absent>"), f"{path}.{k}")]
    return [] if ours == theirs else [f"{path}: {ours!r} vs the class's {theirs!r}"]


def test_every_registered_type_and_no_other_file_is_top_level() -> None:
    top = {p.stem for p in REFERENCES.glob("*.json")} | {
        p.stem.removeprefix("transformers-defaults--")
        for p in (DATA / "more-configs").glob("transformers-defaults--*.json")} | {
        p.stem for p in YEAR_2026.glob("*.json")} | {
        p.stem.removeprefix("transformers-defaults--")
        for p in DATA.glob("configs-2026*/transformers-defaults--*.json")} | set(NO_CLASS)
    nested = {p.stem for p in (REFERENCES / "sub-configs").glob("*.json")}
    assert set(registry.MODELS) <= set(FILES)
    assert set(FILES) - set(registry.MODELS) <= nested
    assert set(registry.MODELS) <= top


@pytest.mark.parametrize("model_type", FILES)
def test_each_file_names_its_class_and_source(model_type: str) -> None:
    raw = _raw(model_type)
    assert set(raw) <= {"class", "source", "defaults", "nested_only", "aliases"}
    assert SOURCE.match(raw["source"]) or CHECKPOINT_SOURCE.match(raw["source"]), raw["source"]
    assert raw["class"].endswith("Config")
    cls = class_defaults(model_type)
    assert cls.nested_only <= set(cls.defaults)
    assert set(cls.aliases) <= set(cls.defaults)


@pytest.mark.parametrize("model_type", FILES)
def test_defaults_are_the_classes_own(model_type: str) -> None:
    cls = class_defaults(model_type)
    reference = _reference(model_type)
    assert reference["model_type"] == model_type
    found = []
    for key, value in cls.defaults.items():
        if (model_type, key) in NOT_IN_TO_DICT:
            continue
        theirs = _lookup(reference, key, cls.aliases.get(key))
        found += _differences(value, theirs, key)
    assert found == []


def test_the_exceptions_are_still_needed() -> None:
    """Each listed exception is a default the to_dict() reference really does not show."""
    for model_type, key in NOT_IN_TO_DICT:
        value = class_defaults(model_type).defaults[key]
        assert _lookup(_reference(model_type), key, None) != value


def test_reference_files_are_what_the_script_writes() -> None:
    """to_dict() written with indent 1, nothing else (the script's exact output)."""
    for path in [*REFERENCES.glob("*.json"), *(REFERENCES / "sub-configs").glob("*.json")]:
        text = Path(path).read_text()
        assert text == json.dumps(json.loads(text), indent=1), path.name


# --- absent means the class default --------------------------------------------------------

# Keys of a class's own defaults whose absence is not its default, and why.
READ_FROM_FILE = {
    "model_type": "it names the class",
    "architectures": "it names the head class (the encoders' files set one)",
    "max_position_embeddings": "a config that gives none has no known context",
    "max_seq_len": "DBRX's name for max_position_embeddings",
}


# Keys to_dict() writes that __post_init__ derives from a field it then overwrites: left out
# of the to_dict() file, the class derives them from the overwritten value, not the
# default (its to_dict() does not round-trip), and the importer reads the file as the class.
NOT_ROUND_TRIPPED = {
    ("bailing_hybrid", "linear_head_dim"):
        "copied from head_dim (128) before head_dim becomes qk_rope_head_dim (64): without "
        "it, BailingHybridConfig(**to_dict()) makes the KDA heads 64 wide",
}


def _expanded(spec: Any) -> dict[str, Any]:
    """The spec's dump with each stack's layer kinds spelled out per layer (a repeating
    pattern and its expansion are the same model), without the notes and without what the
    trust label says (a left-out key the importer does not read leaves the shapes alone)."""
    dump = spec.model_dump(mode="json")
    for key in ("notes", "exact", "estimated"):
        dump.pop(key)
    for part, stack in (("decoder", spec.decoder),
                        ("encoder", spec.encoder.stack if spec.encoder else None)):
        if stack is not None:
            target = dump[part] if part == "decoder" else dump[part]["stack"]
            target["layer_types"] = [str(k) for k in stack.kinds()]
    return dump


@pytest.mark.parametrize("model_type", sorted(set(registry.MODELS) - set(NO_CLASS)))
def test_a_left_out_key_takes_the_class_default(model_type: str) -> None:
    """From the class's own to_dict(), leaving out any one key builds the same model, or
    is an error naming that key (the shape a config.json must give)."""
    reference = _reference(model_type)
    own: set[str] = set()  # values a buildable stand-in sets apart from the class's
    if model_type in MADE_BUILDABLE:
        bare, reference = reference, json.loads(MADE_BUILDABLE[model_type].read_text())
        own = {k for k, v in reference.items() if bare.get(k) != v}
    base = _expanded(from_hf_config(reference, "config.json"))
    changed = []
    for key in reference:
        if key in READ_FROM_FILE or key in own or (model_type, key) in NOT_ROUND_TRIPPED:
            continue
        try:
            spec = from_hf_config({k: v for k, v in reference.items() if k != key},
                                  "config.json")
        except InputError as exc:
            if key not in str(exc):
                changed.append(f"{key}: {exc}")
            continue
        if _expanded(spec) != base:
            changed.append(key)
    assert changed == []


@pytest.mark.parametrize(("model_type", "key", "field", "value"), [
    # MistralConfig: num_key_value_heads null is as many as the heads (its __post_init__).
    ("mistral", "num_key_value_heads", "kv_heads", 32),
    # DeepseekV3: n_shared_experts null is none (`if config.n_shared_experts is not None`).
    ("deepseek_v3", "n_shared_experts", "shared_experts", 0),
])
def test_an_explicit_null_is_not_the_class_default(model_type: str, key: str, field: str,
                                                   value: int) -> None:
    spec = from_hf_config({**_reference(model_type), key: None}, "config.json")
    assert spec.decoder is not None
    found = getattr(spec.decoder.moe, field) if field == "shared_experts" else getattr(
        spec.decoder, field)
    assert found == value


def test_deepseek_v3_left_bare_is_the_class_default_moe() -> None:
    """DeepseekV3Config(): 256 routed experts, 8 per token, one shared, three dense layers
    first (671 B parameters of DeepSeek-V3's shape with the class's 61 layers)."""
    reference = _reference("deepseek_v3")
    bare = {k: v for k, v in reference.items() if k not in (
        "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "first_k_dense_replace")}
    assert count_parameters(from_hf_config(bare, "config.json")).total == count_parameters(
        from_hf_config(reference, "config.json")).total
