"""`inventory launch` on real vLLM command lines: a flag one era models and another does not
is listed as ignored, never refused, and vLLM's one-key-at-a-time form of its dict flags
(`--limit-mm-per-prompt.image 1`) reads as the JSON form does."""

from __future__ import annotations

import pytest

from llm_inventory.engine.launch import without_untaken
from llm_inventory.engine.serving import get
from llm_inventory.engine.serving.vllm_launch import parse_vllm
from tests.conftest import Invoke

MODEL = ("vllm", "serve", "qwen2.5-7b", "--max-model-len", "8192")


@pytest.mark.parametrize(("version", "ignored", "understood"), [
    # V0 reads the swap space; the V1 eras before 0.21 read neither flag
    ("0.8.0", ["--enforce-eager"], ["--swap-space 4"]),
    ("0.19.1", ["--swap-space 4", "--enforce-eager"], []),
    # 0.21 drops the CUDA-graph estimate under --enforce-eager; V1 keeps no swap space
    ("0.21", ["--swap-space 4"], ["--enforce-eager"]),
])
def test_a_flag_the_era_does_not_model_is_listed_not_refused(
        invoke: Invoke, version: str, ignored: list[str], understood: list[str]) -> None:
    run = invoke("launch", "--engine-version", version, "-d", "h100", "--format", "json",
                 "--", *MODEL, "--swap-space", "4", "--enforce-eager")
    assert run.code == 0, run.stderr
    command = run.json()["command"]
    assert command["ignored"] == ignored
    assert [t for t in command["understood"] if t in ("--swap-space 4", "--enforce-eager")] \
        == understood
    assert "flags not modelled, ignored" in run.stderr


def test_the_ignored_flag_leaves_every_figure_as_without_it(invoke: Invoke) -> None:
    """On 0.19 --enforce-eager changes nothing the era models: the same plan as without."""
    def per_device(*extra: str) -> dict[str, object]:
        run = invoke("launch", "--engine-version", "0.19.1", "-d", "h100", "--format", "json",
                     "--", *MODEL, *extra)
        assert run.code == 0, run.stderr
        found: dict[str, object] = run.json()["plan"]["per_device"]
        return found

    assert per_device("--enforce-eager") == per_device()


def test_untaken_flags_move_with_the_text_they_were_written_as() -> None:
    command = parse_vllm(["qwen2.5-7b", "--no-enable-prefix-caching", "--enforce-eager",
                          "--kv-cache-memory-bytes", "8589934592"])
    v0 = get("vllm@0.8.0")
    moved = without_untaken(command, v0)
    assert "enforce_eager" not in moved.flags and "kv_cache_memory" not in moved.flags
    assert moved.flags.get("enable_prefix_caching") is False  # V0 reads it (and ignores it)
    assert "--enforce-eager" in moved.ignored
    assert "--kv-cache-memory-bytes 8589934592" in moved.ignored
    assert without_untaken(moved, v0) == moved
    # an era that models every flag read leaves the command as it is
    v21 = get("vllm@0.21")
    assert without_untaken(command, v21) == command


def test_dotted_limit_flags_read_as_the_json_form(invoke: Invoke) -> None:
    common = ("--engine-version", "0.14.0", "-d", "l40s", "--format", "json", "--",
              "vllm", "serve", "qwen3-vl-8b", "--max-model-len", "8192",
              "--max-num-seqs", "10", "--max-num-batched-tokens", "8192")
    dotted = invoke("launch", *common, "--limit-mm-per-prompt.image", "1",
                    "--limit-mm-per-prompt.video", "0", "--mm-processor-kwargs.max_pixels",
                    "1003520")
    as_json = invoke("launch", *common, "--limit-mm-per-prompt", '{"image": 1, "video": 0}',
                     "--mm-processor-kwargs", '{"max_pixels": 1003520}')
    assert dotted.code == as_json.code == 0, dotted.stderr + as_json.stderr
    assert dotted.json()["command"]["multimodal"] == as_json.json()["command"]["multimodal"] \
        == {"limit_per_prompt": {"image": 1, "video": 0}, "max_pixels": 1003520,
            "skip_profiling": False}
    assert dotted.json()["plan"] == as_json.json()["plan"]
    assert not dotted.json()["command"]["ignored"]


def test_dotted_image_zero_leaves_the_encoder_out(invoke: Invoke) -> None:
    run = invoke("launch", "--engine-version", "0.14.0", "-d", "l40s", "--format", "json",
                 "--", "vllm", "serve", "qwen3-vl-8b", "--max-model-len", "8192",
                 "--limit-mm-per-prompt.image", "0")
    assert run.code == 0, run.stderr
    assert run.json()["plan"]["per_device"]["multimodal"] is None
    assert not any("Encoder cache" in line for line in run.json()["startup"])


@pytest.mark.parametrize(("flag", "value", "field"), [
    ("--limit-mm-per-prompt.sound", "1", "limit_mm_per_prompt"),
    ("--limit-mm-per-prompt.image", "many", "limit_mm_per_prompt"),
    ("--mm-processor-kwargs.max_pixels", "0", "max_pixels"),
])
def test_a_bad_dotted_value_is_one_line(invoke: Invoke, flag: str, value: str,
                                        field: str) -> None:
    run = invoke("launch", "-d", "l40s", "--", "vllm", "serve", "qwen3-vl-8b", flag, value)
    assert run.code == 2 and not run.stdout
    assert field in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
