"""Thinking Machines' Inkling (inkling_text, inkling_mm_model) and Inkling 2 (inkling2_text,
inkling2, and the looped inkling2_loop_text, inkling2_loop), held to what transformers
itself builds.

tests/data/oracle-2026-inkling.json and oracle-2026-inkling2.json hold the figures
`tools/reference_counts.py` read from transformers 5.25.0 (torch 2.13.0, meta device) for
the configs under tests/data/configs-2026-inkling/ and configs-2026-inkling2/ (index.json
there says where each came from). For every
entry the importer's count must equal transformers' to the parameter (total, active, the
embedding and the head), the K/V each layer adds per token must match on the same number of
layers, the four conv windows of every layer their channels and dtype, and the count must
be labelled exact.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.state import StateRequest, size_state
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.hf.inkling import vision_scales
from llm_inventory.spec.model import ModelSpec
from tests.reference import DATA, check_parts, check_reference_set

SETS = {"inkling": {"inkling_text", "inkling_mm_model"},
        "inkling2": {"inkling2_text", "inkling2", "inkling2_loop_text", "inkling2_loop"}}
ENTRIES: list[dict[str, Any]] = [
    e | {"set": name} for name in SETS
    for e in json.loads((DATA / f"oracle-2026-{name}.json").read_text())]
_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    folder = DATA / f"configs-2026-{entry['set']}"
    return dict(json.loads((folder / str(entry["file"])).read_text()))


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return from_hf_config(_config(entry), str(entry["file"]))


def _entry(name: str, family: str = "inkling") -> dict[str, Any]:
    return next(e for e in ENTRIES if e["file"] == name and e["set"] == family)


@pytest.mark.parametrize("family", SETS)
def test_the_set_covers_its_types_with_versions_recorded(family: str) -> None:
    entries = [e for e in ENTRIES if e["set"] == family]
    check_reference_set(entries, DATA / f"configs-2026-{family}", SETS[family])
    assert all("cache_error" not in e for e in entries)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['set']}/{e['file']}")
def test_total_and_active_equal_transformers(entry: dict[str, Any]) -> None:
    spec = _spec(entry)
    check_parts(spec, entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['set']}/{e['file']}")
def test_kv_per_token_equals_transformers(entry: dict[str, Any]) -> None:
    """K and V each layer adds per token: the sliding layers' own heads apart from the full
    layers'; the conv windows add nothing per token."""
    layers = [layer for layer in state_layers(_spec(entry)) for _ in range(layer.count)]
    growing = Counter(layer.elements_per_token() for layer in layers
                      if layer.elements_per_token())
    expected = entry["kv_elems_per_token_per_layer"]
    if isinstance(expected, int):
        expected = {expected: entry["kv_layers_with_kv"]}
    assert dict(growing) == {int(k): v for k, v in expected.items()}
    windowed = sum(1 for layer in layers if layer.window)
    assert windowed == entry["sliding_window_layers"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['set']}/{e['file']}")
def test_conv_windows_have_the_channels_transformers_allocates(entry: dict[str, Any]) -> None:
    """conv_states[0] and [1] (K and V) hold the layer's K/V heads × head dim channels,
    [2] and [3] (the residual branches) the hidden size, all in float32; kept here as
    kernel − 1 positions where transformers keeps all kernel positions."""
    convs = [layer for layer in state_layers(_spec(entry)) if layer.kind == "residual_conv"
             for _ in range(layer.count)]
    states: dict[str, Counter[int]] = {}
    kernels, dtypes = set(), set()
    for tensor in entry["fixed_state_per_sequence"]:
        if not tensor["tensor"].startswith("conv_states"):
            continue
        _, channels, kernel = tensor["shape"]
        states.setdefault(tensor["tensor"], Counter())[channels] += tensor["layers"]
        kernels.add(kernel)
        dtypes.add(_DTYPES[tensor["dtype"]])
    assert states["conv_states[0]"] == states["conv_states[1]"] == Counter(
        c.kv_heads * c.k_head_dim for c in convs)
    assert states["conv_states[2]"] == states["conv_states[3]"] == Counter(
        c.conv_channels // 2 for c in convs)
    assert {c.conv_window for c in convs} == {k - 1 for k in kernels}
    assert {c.conv_dtype for c in convs} == dtypes == {"fp32"}


def test_class_defaults_bytes_per_token_and_per_sequence() -> None:
    """Inkling's defaults at bf16: 11 full layers keep 8 × 128 K and V a token, 55 sliding
    ones 16 × 128 (capped at 512 tokens), (11 × 2,048 + 55 × 4,096) × 2 = 495,616 bytes;
    each layer's four fp32 windows hold 3 positions of 2 × 6,144 channels plus its K/V
    heads', 55 × (4,096 + 12,288) × 12 + 11 × (2,048 + 12,288) × 12 = 12,705,792 bytes."""
    spec = _spec(_entry("transformers-defaults--inkling_text.json"))
    result = size_state(StateRequest(layers=state_layers(spec), tokens=1000))
    assert result.bytes_per_token == 495_616
    assert result.fixed_bytes_per_sequence == 12_705_792


def test_the_state_is_labelled_an_assumption_and_the_count_is_not() -> None:
    for entry in ENTRIES:
        spec = _spec(entry)
        assert spec.exact
        assert spec.state_estimated and "no mainline serving engine" in spec.state_estimated


def test_checkpoint_spellings_read_as_the_class_reads_them() -> None:
    """dense_intermediate_size is the dense width and intermediate_size then the experts';
    dense_mlp_idx 2 makes layers 0–1 dense; local_layer_ids picks the sliding layers;
    sconv_kernel_size and model_max_length are aliases."""
    spec = _spec(_entry("constructed--inkling_text-small.json"))
    stack = spec.decoder
    assert stack is not None and stack.moe is not None
    assert (stack.intermediate_size, stack.moe.expert_intermediate_size) == (96, 40)
    assert stack.moe.layers == [2, 3, 4, 5, 6]
    assert [i for i, k in enumerate(stack.kinds()) if k == "sliding"] == [0, 1, 3, 4]
    assert stack.residual_conv is not None and stack.residual_conv.kernel == 3
    assert spec.max_context == 4096
    assert any("1 multi-token-prediction layer" in note for note in spec.notes)
    assert any("unpadded_vocab_size (300)" in note for note in spec.notes)


def test_the_composites_mtp_config_is_noted() -> None:
    spec = _spec(_entry("constructed--inkling_mm_model-small.json"))
    assert any("2 multi-token-prediction layers" in note for note in spec.notes)
    assert [e.kind for e in [spec.encoder, *spec.extra_encoders] if e] == ["vision", "audio"]


def test_the_patch_plan_follows_transformers() -> None:
    """`plan_out_scales` as transformers 5.25 returns it (written out from a run): at a
    40-pixel patch of 2 frames over 24 layers, each boundary the scale nearest its share of
    the log size (runs of 5, 6, 3, 4, 3 and 4 boundaries); at a 12-pixel patch over 3
    layers, fewer than the 5 scales, an assignment that skips the 6-pixel side."""
    runs = [((1, 1, 1, 3), 5), ((1, 5, 5, 128), 6), ((1, 10, 10, 320), 3),
            ((1, 20, 20, 1216), 4), ((1, 40, 40, 4800), 3), ((2, 40, 40, 614_400), 4)]
    assert vision_scales(40, 2, 24, 3) == [scale for scale, n in runs for _ in range(n)]
    assert vision_scales(12, 2, 3, 3) == [(1, 1, 1, 3), (1, 3, 3, 64), (1, 12, 12, 448),
                                          (2, 12, 12, 55_296)]


@pytest.mark.parametrize(("change", "key"), [
    ({"layer_types": ["hybrid"] * 3}, "layer_types"),
    ({"layer_types": ["full_attention"] * 7}, "layer_types"),
    ({"mlp_layer_types": ["moe"] * 7}, "mlp_layer_types"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"swa_num_key_value_heads": 3}, "swa_num_key_value_heads"),
    ({"local_layer_ids": [-1]}, "local_layer_ids"),
    ({"n_routed_experts": 1, "num_experts_per_tok": 2}, "top_k"),
])
def test_inkling_text_refuses_what_the_class_refuses_by_name(change: dict[str, Any],
                                                             key: str) -> None:
    config = _config(_entry("constructed--inkling_text-small.json")) | change
    with pytest.raises(InputError, match=key):
        from_hf_config(config, "bad")


def test_a_one_pixel_patch_is_refused_as_transformers_fails_on_it() -> None:
    config = _config(_entry("constructed--inkling_mm_model-small.json"))
    config["vision_config"] = config["vision_config"] | {"patch_size": 1}
    with pytest.raises(InputError, match="patch_size"):
        from_hf_config(config, "bad")


# --- Inkling 2 ---------------------------------------------------------------------------

def test_inkling2_defaults_bytes_per_token_and_per_sequence() -> None:
    """Inkling 2's defaults at bf16: 48 layers, each 8 K/V heads of 128 (the sliding ones
    capped at 1,024 tokens), 48 × 2,048 × 2 = 196,608 bytes a token; each layer's four fp32
    windows hold 3 positions of 2 × 1,024 + 2 × 4,608 channels, 48 × 11,264 × 12 =
    6,488,064 bytes a sequence."""
    spec = _spec(_entry("transformers-defaults--inkling2_text.json", "inkling2"))
    result = size_state(StateRequest(layers=state_layers(spec), tokens=1000))
    assert result.bytes_per_token == 196_608
    assert result.fixed_bytes_per_sequence == 6_488_064


def test_inkling2_head_has_the_unpadded_rows_and_the_table_the_padded_ones() -> None:
    spec = _spec(_entry("transformers-defaults--inkling2_text.json", "inkling2"))
    stack = spec.decoder
    assert stack is not None
    assert (stack.vocab_size, stack.embedding_rows) == (200_058, 201_024)
    assert any("unpadded_vocab_size (200,058)" in note for note in spec.notes)


def test_inkling2_lists_its_own_conv_weights_dynamic_on_full_layers() -> None:
    """Full layers: static taps (kernel, K/V width) and a per-token tap projection (K/V
    heads × kernel, hidden) for K and for V; sliding layers: depthwise conv weights; every
    layer: the two residual convs. The residual_conv kind adds none of its own."""
    from llm_inventory.engine.tensors import model_tensors

    spec = _spec(_entry("constructed--inkling2_text-small.json", "inkling2"))
    shapes = {(g.name, g.shape, g.layers) for g in model_tensors(spec)}
    full, sliding, every = (0, 3, 5), (1, 2, 4, 6), tuple(range(7))
    at = "model.layers.{i}"
    for proj in ("k_proj", "v_proj"):
        assert (f"{at}.self_attn.{proj}.sconv.static_weight", (3, 32), full) in shapes
        assert (f"{at}.self_attn.{proj}.sconv.weight_proj.weight", (6, 64), full) in shapes
        assert (f"{at}.self_attn.{proj}.sconv.conv1d.weight", (16, 1, 3), sliding) in shapes
    for name in ("post_attention_convolution", "post_mlp_convolution"):
        assert (f"{at}.{name}.conv1d.weight", (64, 1, 3), every) in shapes
    assert not any("_sconv" in name for name, _, _ in shapes)


@pytest.mark.parametrize(("change", "key"), [
    ({"layer_types": ["hybrid"] * 3}, "layer_types"),
    ({"unpadded_vocab_size": 400}, "unpadded_vocab_size"),
    ({"swa_num_key_value_heads": 3}, "swa_num_key_value_heads"),
])
def test_inkling2_text_refuses_what_the_class_refuses_by_name(change: dict[str, Any],
                                                              key: str) -> None:
    config = _config(_entry("constructed--inkling2_text-small.json", "inkling2")) | change
    with pytest.raises(InputError, match=key):
        from_hf_config(config, "bad")


def test_inkling2_refuses_a_tower_of_another_width() -> None:
    """Inkling2Config.validate_architecture: the merger must reach the text width."""
    config = _config(_entry("constructed--inkling2-small.json", "inkling2"))
    config["vision_config"] = config["vision_config"] | {"text_hidden_size": 96}
    with pytest.raises(InputError, match="text_hidden_size"):
        from_hf_config(config, "bad")


def test_inkling2_tower_width_comes_from_mlp_ratio_unless_given() -> None:
    """Inkling2VisionConfig.__post_init__: intermediate_size, when unset, is
    int(hidden × mlp_ratio) (32 × 2.5 = 80); a given one wins."""
    config = _config(_entry("constructed--inkling2-small.json", "inkling2"))
    spec = from_hf_config(config, "x")
    assert spec.encoder is not None and spec.encoder.stack is not None
    assert spec.encoder.stack.intermediate_size == 80
    config["vision_config"] = config["vision_config"] | {"intermediate_size": 50}
    given = from_hf_config(config, "x")
    assert given.encoder is not None and given.encoder.stack is not None
    assert given.encoder.stack.intermediate_size == 50
    assert given.exact


# --- Inkling 2 Loop ----------------------------------------------------------------------

def test_inkling2_loop_keeps_a_cache_per_pass_of_its_looped_layers() -> None:
    """Inkling 2 Loop's defaults: 24 layers, 6–17 looped 3 times, 24 + 2 × 12 = 48 cache
    layers as transformers appends them; at bf16 48 × 2,048 × 2 = 196,608 bytes a token and
    48 × (2,048 + 2 × 2,304) × 3 × 4 = 3,833,856 bytes of conv windows a sequence."""
    spec = _spec(_entry("transformers-defaults--inkling2_loop_text.json", "inkling2"))
    layers = state_layers(spec)
    assert sum(layer.count for layer in layers if layer.kind != "residual_conv") == 48
    result = size_state(StateRequest(layers=layers, tokens=1000))
    assert result.bytes_per_token == 196_608
    assert result.fixed_bytes_per_sequence == 3_833_856
    copies = [layer for layer in layers[len(layers) // 2:] if layer.kind != "residual_conv"]
    assert all(6 <= layer.first < 18 for layer in copies)


def test_a_checkpoints_loop_config_wins_over_the_loop_keys() -> None:
    spec = _spec(_entry("constructed--inkling2_loop-small.json", "inkling2"))
    stack = spec.decoder
    assert stack is not None and stack.loop is not None
    assert (stack.loop.start, stack.loop.end, stack.loop.passes) == (4, 6, 2)
    assert spec.exact
    assert any("layers 4–5 run 2 passes" in note for note in spec.notes)


@pytest.mark.parametrize(("change", "key"), [
    ({"loop_layer_index_start": 3}, "loop_layer_index_start"),
    ({"loop_layer_index_start": 0}, "loop_layer_index_start"),
    ({"loop_layer_index_end": 5}, "loop_layer_index_end"),
    ({"loop_layer_index_end": 2}, "loop_layer_index_end"),
    ({"loop_num_passes": 0}, "loop_num_passes"),
])
def test_inkling2_loop_refuses_what_validate_architecture_refuses(change: dict[str, Any],
                                                                 key: str) -> None:
    config = _config(_entry("constructed--inkling2_loop_text-small.json", "inkling2")) | change
    with pytest.raises(InputError, match=key):
        from_hf_config(config, "bad")


def test_the_time_model_runs_looped_layers_once_per_pass() -> None:
    """Inkling 2 Loop's defaults on one H100: with the loop (24 layers, 12 of them run 3
    times: 48 visits) a decode step reads the looped layers' weights and does their work
    three times, so it is slower than the same layers run once, and by less than the 2×
    of the visits alone (the head, the embedding and the per-step costs are paid once)."""
    from llm_inventory.engine.placement import PlacementRequest, plan_placement
    from llm_inventory.spec.devices import resolve_device

    looped = _spec(_entry("transformers-defaults--inkling2_loop_text.json", "inkling2"))
    assert looped.decoder is not None and looped.decoder.visited_layers == 48
    once = looped.model_copy(update={"decoder": looped.decoder.model_copy(
        update={"loop": None})})
    request = PlacementRequest(device=resolve_device("h100"), count=1, tp=1, limit=0,
                               context=4096, gpu_memory_utilization=0.95)
    steps = []
    for spec in (looped, once):
        plan = plan_placement(spec, request).plans[0]
        assert plan.timing is not None and plan.per_device is not None
        steps.append(plan.timing.tpot_s)
    assert 1.3 < steps[0] / steps[1] < 2.0
