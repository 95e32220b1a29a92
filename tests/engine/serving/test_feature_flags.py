"""LoRA and multimodal flags: read from each engine's command line (no longer "ignored"),
written into launch lines, and read back to the same requests."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_inventory.engine import serving
from llm_inventory.engine.launch import match_program
from llm_inventory.engine.lora import LoraRequest
from llm_inventory.engine.mm_budget import MultimodalRequest
from llm_inventory.engine.serving.launch_line import LaunchPlan
from llm_inventory.errors import InputError


def _read(line: str):  # type: ignore[no-untyped-def]
    era, rest = match_program(shlex.split(line))
    return era.parse_launch(rest)


def test_vllm_reads_its_lora_and_multimodal_flags() -> None:
    got = _read("vllm serve Qwen/Qwen2.5-VL-7B-Instruct --enable-lora --max-loras 4 "
                "--max-lora-rank 64 --max-cpu-loras 8 --lora-dtype bfloat16 "
                "--fully-sharded-loras --lora-modules sql=/a chat=/b "
                "--limit-mm-per-prompt '{\"image\": 2, \"video\": 0}' "
                "--mm-processor-kwargs '{\"max_pixels\": 1003520}' --skip-mm-profiling")
    assert got.lora == LoraRequest(max_loras=4, max_lora_rank=64, max_cpu_loras=8,
                                   lora_dtype="bfloat16", fully_sharded=True,
                                   adapters=("sql=/a", "chat=/b"))
    assert got.multimodal == MultimodalRequest(limit_per_prompt={"image": 2, "video": 0},
                                               max_pixels=1_003_520, skip_profiling=True)
    assert not any("lora" in word or "mm" in word for word in got.ignored)


def test_vllm_lora_flags_without_enable_lora_make_no_lora() -> None:
    """`EngineArgs.create_lora_config` builds no LoRAConfig without --enable-lora."""
    got = _read("vllm serve m --max-lora-rank 64")
    assert got.lora is None
    assert "--max-lora-rank 64" in got.ignored


def test_sglang_reads_its_lora_flags() -> None:
    got = _read("python -m sglang.launch_server --model-path m --max-loras-per-batch 4 "
                "--max-lora-rank 32 --lora-target-modules q_proj v_proj "
                "--lora-paths a=/x b=/y --port 30000")
    assert got.lora == LoraRequest(max_loras=4, max_lora_rank=32,
                                   target_modules=("q_proj", "v_proj"),
                                   adapters=("a=/x", "b=/y"))
    assert got.ignored == ["--port 30000"]


def test_llamacpp_reads_lora_files() -> None:
    got = _read("llama-server -m x.gguf --lora a.gguf --lora-scaled b.gguf 0.5 -c 4096")
    assert got.lora is not None and got.lora.adapters == ("a.gguf", "b.gguf")
    with pytest.raises(InputError):
        _read("llama-server -m x.gguf --lora-scaled b.gguf")


@st.composite
def featured(draw: st.DrawFn) -> tuple[str, LaunchPlan]:
    engine = draw(st.sampled_from(["vllm", "sglang", "llamacpp"]))
    if engine == "llamacpp":
        files = tuple(draw(st.lists(st.sampled_from(["a.gguf", "dir/b.gguf"]), min_size=1,
                                    max_size=2, unique=True)))
        lora = LoraRequest(adapters=files, adapter_bytes=tuple(1 << 20 for _ in files))
        mm = None
    else:
        lora = LoraRequest(
            max_loras=draw(st.one_of(st.none(), st.integers(1, 64))),
            max_lora_rank=draw(st.integers(1, 512)),
            max_cpu_loras=draw(st.one_of(st.none(), st.integers(1, 64)))
            if engine == "vllm" else None,
            fully_sharded=draw(st.booleans()) if engine == "vllm" else False,
            target_modules=draw(st.one_of(st.none(), st.just(("q_proj", "v_proj"))))
            if engine == "sglang" else None)
        mm = MultimodalRequest(
            limit_per_prompt=draw(st.dictionaries(st.sampled_from(["image", "video"]),
                                                  st.integers(0, 16), max_size=2)),
            max_pixels=draw(st.one_of(st.none(), st.integers(1, 1 << 26))),
            skip_profiling=draw(st.booleans())) if engine == "vllm" else None
    return engine, LaunchPlan(model="x.gguf" if engine == "llamacpp" else "org/model",
                              tp=1, pp=1, ep=1, context=4096, max_num_seqs=None,
                              max_num_batched_tokens=2048, gguf=engine == "llamacpp",
                              lora=lora, multimodal=mm)


@settings(max_examples=60, deadline=None)
@given(featured())
def test_written_features_read_back(case: tuple[str, LaunchPlan]) -> None:
    name, plan = case
    lines = serving.get(name).launch_lines(plan)
    assert lines
    got = _read(lines[0].text())
    assert plan.lora is not None and got.lora is not None
    sized = got.lora.model_copy(update={"adapter_bytes": plan.lora.adapter_bytes})
    assert sized == plan.lora
    if plan.multimodal is not None and (plan.multimodal.limit_per_prompt
                                        or plan.multimodal.max_pixels is not None
                                        or plan.multimodal.skip_profiling):
        assert got.multimodal == plan.multimodal
    assert not any("lora" in word for word in got.ignored)


def test_engines_that_cannot_say_it_write_no_line() -> None:
    """TensorRT-LLM's adapters live in its options file; llama.cpp's --lora names files,
    never a rank: no line that would start a plan without the adapters."""
    ranked = LaunchPlan(model="x.gguf", tp=1, pp=1, ep=1, context=4096, max_num_seqs=None,
                        max_num_batched_tokens=2048, gguf=True,
                        lora=LoraRequest(max_lora_rank=16))
    assert serving.get("llamacpp").launch_lines(ranked) == []
    hub = LaunchPlan(model="org/model", tp=1, pp=1, ep=1, context=4096, max_num_seqs=None,
                     max_num_batched_tokens=2048, lora=LoraRequest(max_lora_rank=16))
    assert serving.get("trtllm").launch_lines(hub) == []
