"""DeepSeek-V4's routed experts are stored apart from its block-scaled FP8: `expert_dtype:
fp4` (top-level, moved into quantization_config as DeepseekV4Config.__post_init__ moves it)
packs two e2m1 values a byte with one ue8m0 scale per 32 inputs (transformers
integrations/finegrained_fp8.py FP8Experts)."""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine.params import count_parameters
from llm_inventory.engine.tensors import model_tensors
from llm_inventory.engine.weights import copy_bytes
from llm_inventory.errors import InputError
from llm_inventory.spec.hf import from_hf_config
from llm_inventory.spec.model import Component
from tests.reference import DATA

FLASH = DATA / "configs-2026" / "DeepSeek-V4-Flash.json"


def _config() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(FLASH.read_text())
    return loaded


def test_routed_experts_take_fp4_with_byte_scales_and_the_rest_block_fp8() -> None:
    spec = from_hf_config(_config(), "flash")
    q = spec.quantization
    assert q is not None and q.experts is not None
    assert (q.bits, q.block, q.scale_bits) == (8, (128, 128), 32)
    # scale_fmt ue8m0: the experts' scales are one byte (FP8Experts' sf_dtype)
    assert (q.experts.bits, q.experts.group_size, q.experts.scale_bits) == (4, 32, 8)
    # one expert's gate/up and down matrices: half a byte a value, a byte per 32 inputs
    hidden, inter, experts = 4096, 2048, 256
    per_expert = (2 * inter * hidden // 2 + 2 * inter * hidden // 32
                  + hidden * inter // 2 + hidden * (inter // 32))
    routed = [g for g in model_tensors(spec) if g.experts and g.stack == "decoder"
              and g.component is Component.EXPERTS]
    assert routed
    layer = next(iter(routed[0].layers))
    got = sum(copy_bytes(g, spec.dtype, q, layer) for g in routed
              if layer in g.layers)
    assert got == per_expert * experts
    assert not any("expert_dtype" in note for note in spec.notes)


def test_the_count_is_unchanged_and_the_weights_shrink() -> None:
    fp8 = _config() | {"expert_dtype": "fp8"}
    fp4 = from_hf_config(_config(), "flash")
    full = from_hf_config(fp8, "flash")
    assert count_parameters(fp4).total == count_parameters(full).total
    assert count_parameters(fp4).weight_bytes < 0.6 * count_parameters(full).weight_bytes


def test_an_expert_dtype_inside_the_quantization_config_wins_and_an_unknown_one_is_refused(
) -> None:
    config = _config()
    inner = dict(config["quantization_config"])  # type: ignore[call-overload]
    inside = from_hf_config(config | {"expert_dtype": "fp8",
                                      "quantization_config": inner | {"expert_dtype": "fp4"}},
                            "flash")
    assert inside.quantization is not None and inside.quantization.experts is not None
    with pytest.raises(InputError, match="expert_dtype"):
        from_hf_config(config | {"expert_dtype": "int2"}, "flash")
