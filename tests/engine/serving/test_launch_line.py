"""Every launch line an engine writes reads back through `inventory launch`'s reader to the
plan it was written for: the split, the engine instances, the context and the settings."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine import serving
from llm_inventory.engine.launch import match_program
from llm_inventory.engine.serving.launch_line import LaunchPlan

ENGINES = ["vllm", "sglang", "trtllm", "llamacpp"]


def _fp8(dtype: str | None) -> str | None:
    return "fp8" if dtype and dtype.startswith("fp8") else dtype


@st.composite
def plans(draw: st.DrawFn) -> tuple[str, LaunchPlan]:
    engine = draw(st.sampled_from(ENGINES))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    ep = tp * draw(st.sampled_from([1, 2, 4, 8])) if draw(st.booleans()) else 1
    if engine == "llamacpp":
        tp, ep = 1, 1
    kv = draw(st.sampled_from([None, "fp8"] if engine != "llamacpp" else
                              [None, "q8_0", "q4_0", "iq4_nl"]))
    return engine, LaunchPlan(
        model=draw(st.sampled_from(["meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V3"])),
        tp=tp, pp=draw(st.sampled_from([1, 2, 4])), ep=ep,
        context=draw(st.integers(1, 262144)),
        max_num_seqs=draw(st.one_of(st.none(), st.integers(1, 1024))),
        max_num_batched_tokens=draw(st.integers(1, 65536)),
        memory_fraction=draw(st.sampled_from([None, 0.9, 0.85]))
        if engine != "llamacpp" else None, kv_dtype=kv,  # llama.cpp takes no fraction
        disaggregation=draw(st.sampled_from([None, "prefill/decode"]))
        if engine != "llamacpp" else None,
        gguf=engine == "llamacpp" and draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(plans())
def test_every_line_reads_back_to_its_plan(case: tuple[str, LaunchPlan]) -> None:
    name, plan = case
    engine = serving.get(name)
    lines = engine.launch_lines(plan)
    if name == "trtllm" and (plan.attention_dp > 1 or plan.kv_dtype or plan.disaggregation):
        assert lines == []  # set only in its YAML: no line that would start another plan
        return
    assert lines, f"{name} wrote no line for {plan}"
    servers = [line for line in lines if line.server]
    if plan.disaggregation:
        assert [line.role for line in lines] == ["prefill", "decode", "router"]
        # the two pools on different devices of one node
        assert servers[0].env != servers[1].env
    else:
        assert [line.role for line in lines] == ["serve"]
    for line in servers:
        era, rest = match_program(shlex.split(line.text()))
        assert era.name == engine.name
        got = era.parse_launch(rest)
        assert got.model == plan.model
        assert (got.tp, got.pp, got.ep or 1) == (plan.tp, plan.pp, plan.ep)
        assert got.tp * got.pp * got.dp == plan.devices  # the devices one instance uses
        assert got.dp == plan.attention_dp  # engine instances: one per attention rank
        assert got.context == plan.context
        assert got.max_num_seqs == plan.max_num_seqs  # per engine instance
        assert got.max_num_batched_tokens == plan.max_num_batched_tokens
        assert got.memory_fraction == plan.memory_fraction
        if name == "llamacpp":
            assert got.flags.get("cache_type_k", "f16") == (plan.kv_dtype or "f16")
            assert not got.flags.get("cache_type_v") or got.flags.get("flash_attn") == "on"
        else:  # SGLang spells fp8 as its e4m3 format; one byte either way
            assert _fp8(got.kv_dtype) == _fp8(plan.kv_dtype)
        if name != "trtllm":
            assert not [w for w in got.ignored if "parallel" in w or "dp" in w]


def test_sglang_dp_attention_is_tp_devices_split_into_dp_ranks() -> None:
    """The DeepSeek recipe `--tp 8 --dp 8 --enable-dp-attention` is 8 GPUs: attention DP 8
    of one device each, the experts over all 8; --max-running-requests per rank ÷ 8."""
    era, rest = match_program(shlex.split(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8 "
        "--enable-dp-attention --max-running-requests 256 --chunked-prefill-size 16384"))
    got = era.parse_launch(rest)
    assert (got.tp, got.dp, got.ep, got.tp * got.pp * got.dp) == (1, 8, 8, 8)
    assert (got.max_num_seqs, got.max_num_batched_tokens) == (32, 2048)
    # without the switch --dp is replicas of a tp-8 instance: 64 devices
    era, rest = match_program(shlex.split(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8"))
    plain = era.parse_launch(rest)
    assert plain.tp * plain.pp * plain.dp == 64


def test_sglang_writes_dp_attention_as_sglang_reads_it() -> None:
    """A tp1 ep5 plan is --tp-size 5 --dp-size 5 --enable-dp-attention, and the per-rank
    request cap times 5 (SGLang divides it by dp_size)."""
    plan = LaunchPlan(model="org/m", tp=1, pp=1, ep=5, context=4096, max_num_seqs=5,
                      max_num_batched_tokens=8192)
    argv = serving.get("sglang").launch_lines(plan)[0].argv
    text = " ".join(argv)
    assert "--tp-size 5 " in text and "--dp-size 5 --enable-dp-attention" in text
    assert "--max-running-requests 25 " in text


def test_environment_words_before_the_program_are_not_the_program() -> None:
    era, rest = match_program(["CUDA_VISIBLE_DEVICES=4,5", "vllm", "serve", "org/m"])
    assert era.name == "vllm" and rest == ["org/m"]
