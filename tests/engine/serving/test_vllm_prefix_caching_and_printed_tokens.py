"""Two vLLM V1 rules the held-out start-ups (engine-logs-heldout/) showed were missing:

- prefix caching on a hybrid model caches its Mamba / linear-attention state in mode
  "align": two state pages per request instead of one (`MambaSpec.max_memory_usage_bytes`,
  vllm/v1/kv_cache_interface.py; `CacheConfig.mamba_cache_mode`, vllm/config/cache.py);
- from 0.21, "GPU KV cache size" is ⌊maximum concurrency × max_model_len⌋
  (`get_kv_cache_capacity`, vllm/v1/core/kv_cache_utils.py), not blocks ÷ groups × block.
"""

from __future__ import annotations

import json

import pytest

from llm_inventory.engine import serving
from llm_inventory.engine.model_state import state_layers
from llm_inventory.engine.serving.base import (
    EngineSettings,
    KvLayer,
    LaunchSettings,
    device_layers_by_index,
)
from llm_inventory.engine.serving.paged import BlockPool
from llm_inventory.engine.serving.vllm_launch import parse_vllm
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.hf import from_hf_config
from tests.reference import DATA

GIB = 2**30


def _layers(relative: str, tp: int = 1, kv_dtype: str = "bf16") -> list[KvLayer]:
    spec = from_hf_config(json.loads((DATA / relative).read_text()), relative)
    assert spec.decoder is not None
    per = device_layers_by_index(state_layers(spec), tp, kv_dtype, spec.decoder.layers)
    return [layer for layers in per for layer in layers]


def _settings(engine: str, max_model_len: int, *, prefix: bool, kv_dtype: str = "bf16",
              seqs: int = 1024) -> EngineSettings:
    asked = LaunchSettings(context=max_model_len, kv_dtype=kv_dtype, max_num_seqs=seqs,
                           max_num_batched_tokens=8192,
                           flags={"enable_prefix_caching": prefix})
    return serving.get(engine).settings(resolve_device("h100-sxm"), asked)


@pytest.mark.parametrize("engine", ["vllm@0.19", "vllm@0.24"])
def test_prefix_caching_doubles_each_state_groups_pages(engine: str) -> None:
    """Qwen3.5-35B-A3B, fp8 KV, 131,072 tokens: an attention block of 2,096 tokens, one
    attention group and three Gated DeltaNet groups of 10 layers."""
    layers = _layers("configs-2026/Qwen3.5-35B-A3B.json", kv_dtype="fp8")
    eng = serving.get(engine)
    off = eng.pool_layout(layers, _settings(engine, 131_072, prefix=False, kv_dtype="fp8"))
    on = eng.pool_layout(layers, _settings(engine, 131_072, prefix=True, kv_dtype="fp8"))
    assert isinstance(off, BlockPool) and isinstance(on, BlockPool)
    attention = -(-131_072 // 2096)
    assert (off.attention_block, off.groups, off.need) == (2096, 4, attention + 3)
    assert (on.attention_block, on.groups, on.need) == (2096, 4, attention + 3 * 2)
    assert on.page == off.page  # the same pages, more of them per request


def test_prefix_caching_leaves_attention_only_models_alone() -> None:
    layers = [KvLayer(kind="full", bytes_per_token=4096)] * 32
    eng = serving.get("vllm@0.19")
    on = eng.pool_layout(layers, _settings("vllm@0.19", 8192, prefix=True))
    off = eng.pool_layout(layers, _settings("vllm@0.19", 8192, prefix=False))
    assert on == off


def test_0_21_prints_concurrency_times_max_model_len() -> None:
    """The same pool and blocks; only the printed token count changes."""
    layers = _layers("configs-2026/Qwen3.5-27B.json")
    old = serving.get("vllm@0.19")
    new = serving.get("vllm@0.21")
    pool = 71 * GIB
    a = old.pool_layout(layers, _settings("vllm@0.19", 32_768, prefix=False)).capacity(pool)
    b = new.pool_layout(layers, _settings("vllm@0.21", 32_768, prefix=False)).capacity(pool)
    assert (a.blocks, a.max_concurrency) == (b.blocks, b.max_concurrency)
    assert a.tokens == a.blocks // 4 * 784
    assert b.tokens == int(b.max_concurrency * 32_768) > a.tokens


def test_one_attention_kind_prints_the_same_tokens_at_a_block_multiple() -> None:
    layers = [KvLayer(kind="full", bytes_per_token=131_072)] * 32
    pool = 40 * GIB
    caps = [serving.get(e).pool_layout(layers, _settings(e, 8192, prefix=False))
            .capacity(pool) for e in ("vllm@0.19", "vllm@0.21")]
    assert caps[0].tokens == caps[1].tokens == caps[0].blocks * 16


def test_the_launch_switches_set_the_engine_flag() -> None:
    on = parse_vllm(["Qwen/Qwen3.5-27B", "--enable-prefix-caching"])
    off = parse_vllm(["Qwen/Qwen3.5-27B", "--no-enable-prefix-caching"])
    assert on.flags == {"enable_prefix_caching": True}
    assert off.flags == {"enable_prefix_caching": False}
    assert "--enable-prefix-caching" in on.understood


def test_v0_takes_the_flag_and_changes_nothing() -> None:
    eng = serving.get("vllm@0.8")
    asked = LaunchSettings(context=8192, kv_dtype="bf16", flags={"enable_prefix_caching": True})
    settings = eng.settings(resolve_device("h100-sxm"), asked)
    assert "enable_prefix_caching" not in settings.flags


@pytest.mark.parametrize("engine", ["vllm@0.19", "vllm@0.21"])
def test_a_flag_that_is_not_true_or_false_is_refused(engine: str) -> None:
    asked = LaunchSettings(context=8192, kv_dtype="bf16",
                           flags={"enable_prefix_caching": "maybe"})
    with pytest.raises(InputError, match="enable_prefix_caching must be true or false"):
        serving.get(engine).settings(resolve_device("h100-sxm"), asked)


@pytest.mark.parametrize(("given", "expected"), [(True, True), ("false", False), (1, True),
                                                 (0, False)])
def test_on_off_flags_read_as_the_cli_passes_them(given: object, expected: bool) -> None:
    """`--engine-arg KEY=1` reaches the engine as the number 1."""
    asked = LaunchSettings(context=8192, kv_dtype="bf16",
                           flags={"enable_prefix_caching": given, "enforce_eager": given})
    settings = serving.get("vllm@0.21").settings(resolve_device("h100-sxm"), asked)
    assert settings.flags == {"enforce_eager": expected, "enable_prefix_caching": expected,
                              "max_model_len_auto": False}
