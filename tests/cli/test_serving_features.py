"""LoRA and the vision-language budget through the command line: placement and recommend
options, JSON keys, the printed launch line read back by `inventory launch` to the same
plan, and bad input refused in one line."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import Invoke

LORA = ("--lora-rank", "64", "--max-loras", "4")


def test_placement_sizes_lora_and_its_launch_line_reads_back(invoke: Invoke) -> None:
    data = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--limit", "1", "--launch",
                  *LORA, "--format", "json").json()
    plan = data["plans"][0]
    lora = plan["per_device"]["lora"]
    assert lora["device_bytes"] == 1_342_177_280 and lora["in_budget"] is True
    assert lora["host_bytes"] == 1_342_177_280  # max_cpu_loras = max_loras by default
    line = plan["launch"][0]
    assert "--enable-lora --max-loras 4 --max-lora-rank 64" in line
    run = invoke("launch", "-d", "h100", "--format", "json", "--", *shlex.split(line))
    assert run.code == 0, run.stderr
    back = run.json()
    assert back["plan"]["per_device"]["lora"] == lora
    assert back["plan"]["per_device"]["kv_pool_bytes"] == plan["per_device"]["kv_pool_bytes"]
    assert "--enable-lora" not in run.stderr  # read, no longer "not modelled"


def test_placement_table_says_what_lora_and_the_encoder_hold(invoke: Invoke) -> None:
    out = invoke("placement", "llama-3.1-8b", "-d", "h100", "-n", "1", "--limit", "1", *LORA).stdout
    assert "LoRA: 4 slots × rank 64 (bf16, 7 modules)" in out
    vlm = invoke("placement", "qwen2.5-vl-7b", "-d", "h100", "-n", "1", "--limit", "1").stdout
    assert "vision encoder: 16,384 tokens an image" in vlm


def test_multimodal_limits_reach_the_line_and_back(invoke: Invoke) -> None:
    data = invoke("placement", "qwen2.5-vl-7b", "-d", "h100", "-n", "1", "--limit", "1", "--launch",
                  "--limit-mm-per-prompt", "image=2,video=0", "--mm-max-pixels", "1003520",
                  "--format", "json").json()
    plan = data["plans"][0]
    mm = plan["per_device"]["multimodal"]
    assert (mm["tokens_per_item"], mm["limit_per_prompt"]) == (1280, 2)
    run = invoke("launch", "-d", "h100", "--format", "json", "--",
                 *shlex.split(plan["launch"][0]))
    assert run.code == 0, run.stderr
    assert run.json()["plan"]["per_device"]["multimodal"] == mm


def test_recommend_writes_the_adapters_in_its_line(invoke: Invoke) -> None:
    data = invoke("recommend", "llama-3.1-8b", "-d", "h100", "--use-case", "chat",
                  "--qps", "2", *LORA, "--format", "json").json()
    assert "--enable-lora" in data["launch"]
    assert "trtllm" not in data["equivalents"]  # its adapters are set in its YAML only


def test_llamacpp_adapter_file_is_sized_by_its_bytes(invoke: Invoke, tmp_path: Path) -> None:
    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"\0" * 4096)
    data = invoke("placement", "llama-3.1-8b", "-d", "rtx-4090", "-n", "1", "-e", "llamacpp",
                  "--limit", "1", "--lora-file", str(adapter), "--format", "json").json()
    assert data["plans"][0]["per_device"]["lora"]["device_bytes"] == 4096


@pytest.mark.parametrize(("args", "field"), [
    (("--lora-modules", "q_proj,bogus"), "lora-modules: 'bogus'"),
    (("--limit-mm-per-prompt", "pictures=2"), "limit-mm-per-prompt: unknown modality"),
    (("--lora-rank", "16", "-e", "trtllm"), "lora: LoRA buffers are not modelled"),
    (("-e", "sglang", "--enable-lora"), "lora-rank: SGLang"),
    (("--lora-dtype", "int3", "--enable-lora"), "lora-dtype:"),
    (("--lora-file", "/nonexistent/adapter.gguf"), "lora-file: cannot read adapter.gguf"),
    (("--devices", "h100:2,a100-80gb:2", "--lora-rank", "8"), "devices: LoRA and multimodal"),
    (("--lora-rank", "20"), "takes a max-lora-rank of 1, 8, 16"),
    (("--max-loras", "4", "--max-cpu-loras", "2"), "max-cpu-loras: vLLM 0.33 needs"),
])
def test_bad_feature_input_is_one_line(invoke: Invoke, args: tuple[str, ...],
                                       field: str) -> None:
    run = invoke("placement", "llama-3.1-8b", *(args if "--devices" in args
                                                 else ("-d", "h100", *args)))
    assert run.code == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert field in run.stderr.replace("_", "-")
