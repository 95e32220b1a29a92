"""This year's dense decoders and the classics, exact against transformers.

Every entry of the 2026 reference sets (tests/data/oracle-2026*.json, computed by
tools/reference_counts.py with transformers 5.24.0 on the meta device) whose model type is
one of DENSE_2026: total, input embedding, output head and the KV elements per token per
layer that a one-token meta forward caches. Per-layer facts are checked against the
modelling code each builder cites.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.params import count_parameters
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.hf.nemotron_nas import ffn_mult_to_intermediate_size
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA

DENSE_2026 = ["apertus", "bloom", "cohere", "cohere2", "exaone4", "gpt2", "gpt_bigcode",
              "gpt_neox", "gptj", "modernbert", "nemotron-nas", "olmo2", "olmo3", "opt",
              "phi3", "seed_oss", "smollm3", "starcoder2", "t5"]
FOLDERS = ("configs-2026", "configs-2026-more", "configs-2026-dense",
           "transformers-defaults-2026")
# Files whose count differs from the meta-built model on purpose, and by how much.
UNTIED_T5 = {"t5--untied-gated.json": 32_128 * 768}


def _entries() -> list[dict[str, Any]]:
    return [e for path in sorted(DATA.glob("oracle-2026*.json"))
            for e in json.loads(path.read_text()) if e.get("model_type") in DENSE_2026]


def _path(name: str) -> Path:
    return next(DATA / f / name for f in FOLDERS if (DATA / f / name).is_file())


def _spec(name: str) -> ModelSpec:
    return from_hf_config(json.loads(_path(name).read_text()), name)


COUNTED = [e for e in _entries() if isinstance(e.get("total_params"), int)]


def test_every_dense_type_has_a_transformers_figure() -> None:
    """nemotron-nas alone has none: transformers has no class for it."""
    assert sorted(set(DENSE_2026) - {e["model_type"] for e in COUNTED}) == ["nemotron-nas"]


@pytest.mark.parametrize("entry", COUNTED, ids=lambda e: e["file"])
def test_totals_match_transformers(entry: dict[str, Any]) -> None:
    counted = count_parameters(_spec(entry["file"]))
    extra_head = UNTIED_T5.get(entry["file"], 0)
    assert counted.total == entry["total_params"] + extra_head
    assert counted.input_embedding == entry["input_embedding_params"]
    assert counted.lm_head == entry["output_head_params"] + extra_head
    assert counted.total - counted.input_embedding - counted.lm_head == entry[
        "total_params_no_embed"]


def _per_layer(spec: ModelSpec) -> Counter[int]:
    """Self-attention KV elements per token, per layer (cross-attention apart)."""
    found: Counter[int] = Counter()
    for layer in state_layers(spec):
        if layer.kind != "cross" and layer.elements_per_token():
            found[layer.elements_per_token()] += layer.count
    return found


@pytest.mark.parametrize("entry", [e for e in COUNTED if e.get("kv_elems_per_token_per_layer")],
                         ids=lambda e: e["file"])
def test_kv_per_token_per_layer_is_the_meta_forward_cache(entry: dict[str, Any]) -> None:
    spec = _spec(entry["file"])
    expected = entry["kv_elems_per_token_per_layer"]
    layers = entry["kv_layers_with_kv"]
    assert _per_layer(spec) == ({expected: layers} if isinstance(expected, int) else {
        int(k): v for k, v in expected.items()})


def test_t5_cross_attention_keeps_keys_and_values_per_encoder_token() -> None:
    entry = next(e for e in COUNTED if e["file"] == "t5.json")
    cross = [layer for layer in state_layers(_spec("t5.json"), encoder_tokens=10)
             if layer.kind == "cross"]
    assert sum(layer.count for layer in cross) == 6
    assert {layer.kv_heads * (layer.k_head_dim + layer.v_head_dim) for layer in cross} == {
        entry["cross_kv_elems_per_encoder_token_per_layer"]}


def test_t5_says_where_its_untied_head_comes_from() -> None:
    """T5Config forces tie_word_embeddings; the checkpoint of a false one holds its head."""
    spec = _spec("t5--untied-gated.json")
    assert any("stores its own lm_head.weight" in n for n in spec.notes)
    tied = _spec("t5.json")
    assert not any("lm_head" in n for n in tied.notes)


@pytest.mark.parametrize(("name", "sliding"), [
    ("EXAONE-4.0-32B.json", 48), ("Olmo-3.1-32B-Instruct.json", 48), ("cohere2.json", 30),
    ("starcoder2-7b.json", 32)])
def test_sliding_layers_are_the_cache_s_sliding_layers(name: str, sliding: int) -> None:
    entry = next(e for e in COUNTED if e["file"] == name)
    assert entry["sliding_window_layers"] == sliding
    spec = _spec(name)
    assert spec.decoder is not None
    assert Counter(spec.decoder.kinds())["sliding"] == sliding


@pytest.mark.parametrize("name", ["EXAONE-4.0-32B.json", "cohere2.json"])
def test_global_layers_of_exaone4_and_cohere2_apply_no_rope(name: str) -> None:
    stack = _spec(name).decoder
    assert stack is not None
    kinds = stack.kinds()
    assert {stack.at(i).rope for i in range(stack.layers) if kinds[i] == "full"} == {False}
    assert {stack.at(i).rope for i in range(stack.layers) if kinds[i] == "sliding"} == {True}


def test_smollm3_skips_rope_every_fourth_layer() -> None:
    stack = _spec("SmolLM3-3B.json").decoder
    assert stack is not None
    assert [i for i in range(stack.layers) if not stack.at(i).rope] == list(range(3, 36, 4))


def test_modernbert_alternates_global_and_local_attention() -> None:
    entry = next(e for e in COUNTED if e["file"] == "modernbert.json")
    spec = _spec("modernbert.json")
    assert spec.encoder is not None and spec.encoder.stack is not None
    stack = spec.encoder.stack
    assert stack.kinds() == [t.removesuffix("_attention") for t in entry["layer_types"]]
    assert stack.sliding_window == entry["sliding_window"]
    assert not state_layers(spec)  # an encoder keeps no cache


# transformers 5.24.0 on the meta device, ModernBertConfig() with each class: 149,014,272,
# 149,655,232 and 149,606,402 parameters.
@pytest.mark.parametrize(("arch", "extra"), [
    ("ModernBertModel", 0),
    # head.dense 768² (no bias), head.norm 768 (no bias), decoder bias 50,368, tied weight.
    ("ModernBertForMaskedLM", 768 * 768 + 768 + 50_368),
    ("ModernBertForSequenceClassification", 768 * 768 + 768 + 2 * 768 + 2),
])
def test_modernbert_heads(arch: str, extra: int) -> None:
    data = {**json.loads(_path("modernbert.json").read_text()), "architectures": [arch]}
    assert count_parameters(from_hf_config(data, "config.json")).total == 149_014_272 + extra


def test_apertus_counts_the_xielu_scalars() -> None:
    data = json.loads(_path("apertus.json").read_text())
    with_xielu = count_parameters(from_hf_config(data, "a")).total
    without = count_parameters(from_hf_config({**data, "hidden_act": "silu"}, "a")).total
    assert with_xielu - without == 2 * data["num_hidden_layers"]


def test_phi4_mini_partial_rotary_and_longrope() -> None:
    stack = _spec("microsoft--Phi-4-mini-instruct.json").decoder
    assert stack is not None and stack.rope_scaling is not None
    assert stack.partial_rotary_factor == 0.75
    assert stack.rope_scaling.type == "longrope"
    assert stack.rope_scaling.original_max_positions == 4096


def test_gpt_neox_reads_rotary_pct_and_gptj_rotary_dim() -> None:
    neox = _spec("togethercomputer--RedPajama-INCITE-Chat-3B-v1.json").decoder
    gptj = _spec("EleutherAI--gpt-j-6b.json").decoder
    assert neox is not None and gptj is not None
    assert neox.partial_rotary_factor == 1.0  # rotary_pct 1.0
    assert gptj.partial_rotary_factor == 64 / 256


def test_opt_350m_projects_its_narrower_embeddings() -> None:
    """OPT-350m: word_embed_proj_dim 512 under a 1,024 hidden size (OPTDecoder)."""
    data = {**json.loads(_path("opt.json").read_text()), "hidden_size": 1024,
            "num_attention_heads": 16, "ffn_dim": 4096, "num_hidden_layers": 24,
            "word_embed_proj_dim": 512, "do_layer_norm_before": False}
    counted = count_parameters(from_hf_config(data, "config.json"))
    # transformers 5.24.0, OPTForCausalLM on the meta device, these keys over OPTConfig().
    assert counted.total == 331_196_416


# --- Llama-Nemotron NAS: the checkpoint's modeling_decilm.py rules ----------------------

NEMOTRON = "Llama-3_3-Nemotron-Super-49B-v1.json"


def test_nemotron_ffn_widths_follow_decilm_rounding() -> None:
    assert ffn_mult_to_intermediate_size(5.25, 8192) == 28_672
    assert ffn_mult_to_intermediate_size(1.3125, 8192) == 7_168
    assert ffn_mult_to_intermediate_size(0.5, 8192) == 2_816  # 2,730 up to a multiple of 256
    assert ffn_mult_to_intermediate_size(3.28125, 8192) == 17_920


def test_nemotron_super_layers() -> None:
    spec = _spec(NEMOTRON)
    stack = spec.decoder
    assert stack is not None
    blocks = json.loads(_path(NEMOTRON).read_text())["block_configs"]
    attention = [i for i, b in enumerate(blocks) if not b["attention"]["no_op"]]
    assert [i for i, k in enumerate(stack.kinds()) if k == "full"] == attention
    assert _per_layer(spec) == {2 * 8 * 128: len(attention)}  # 64 heads / 8 per group
    for i, block in enumerate(blocks):
        assert stack.at(i).intermediate_size == ffn_mult_to_intermediate_size(
            block["ffn"]["ffn_mult"], 8192)
    # 80 layers: 49 with attention (each a q/k/v/o and an input norm), 80 MLPs and norms.
    assert count_parameters(spec).total == 49_867_145_216


def test_nemotron_linear_and_no_op_blocks() -> None:
    data = json.loads(_path(NEMOTRON).read_text())
    base = count_parameters(from_hf_config(data, "n")).total
    blocks = json.loads(json.dumps(data["block_configs"]))
    first = blocks[0]
    hidden = 8192
    mlp = 3 * hidden * ffn_mult_to_intermediate_size(first["ffn"]["ffn_mult"], hidden)
    attn = 2 * hidden * hidden + 2 * hidden * (hidden // 8)
    blocks[0] = {"attention": {**first["attention"], "replace_with_linear": True},
                 "ffn": {**first["ffn"], "no_op": True}}
    changed = count_parameters(from_hf_config({**data, "block_configs": blocks}, "n")).total
    # The block loses its attention and MLP and its post-attention norm, gains linear_attn.
    assert base - changed == attn + mlp + hidden - hidden * hidden


def test_nemotron_block_errors_name_the_block() -> None:
    data = json.loads(_path(NEMOTRON).read_text())
    blocks = json.loads(json.dumps(data["block_configs"]))
    blocks[3]["attention"]["n_heads_in_group"] = 7
    with pytest.raises(InputError, match=r"block_configs\[3\]\.attention\.n_heads_in_group"):
        from_hf_config({**data, "block_configs": blocks}, "n")
    with pytest.raises(InputError, match="block_configs"):
        from_hf_config({**data, "block_configs": blocks[:10]}, "n")


def test_vllm_caches_longrope_short_and_long_ranges() -> None:
    """`Phi3LongRoPEScaledRotaryEmbedding` concatenates a cos/sin cache over the original
    4,096 positions and one over all 131,072, each of the 96 rotary dims."""
    from llm_inventory.engine.serving.vllm import ENGINE

    spec = _spec("microsoft--Phi-4-mini-instruct.json")
    assert ENGINE.rope_positions(spec) == [4_096, 131_072]
    assert ENGINE.runtime_buffer_bytes(spec, "bf16") == (4_096 + 131_072) * 96 * 2
