"""Every hostile input the issue lists, as a named case: bad input is one line and exit 2.

The cases that used to hang or exhaust memory run as real processes under RLIMIT_CPU and
RLIMIT_AS (harness.run_limited); the rest in process (harness.run). Both check the shared
invariants; each test then checks what its line must say.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
import yaml

from llm_inventory import bounds
from tests.checkpoint import synthetic
from tests.checkpoint.gguf_files import llama_gguf
from tests.fuzz.harness import Outcome, run, run_limited

LLAMA = synthetic.LLAMA_CONFIG


def refused(outcome: Outcome, *words: str) -> str:
    """The one error line, after checking it names every word given."""
    assert outcome.code == 2, outcome
    line = outcome.stderr.strip()
    for word in words:
        assert word in line, f"{word!r} not in {line!r}"
    return line


def _devices_file(tmp_path: Path, **fields: object) -> Path:
    device = {"id": "big", "name": "Big", "memory_bytes": "80GiB", **fields}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"devices": [device]}))
    return path


def _config(tmp_path: Path, **changes: object) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**LLAMA, **changes}))
    return folder


def _yaml_model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return path


# --- hangs and memory blow-ups ------------------------------------------------------------


def test_a_million_devices_per_node_is_refused(tmp_path: Path) -> None:
    path = _devices_file(tmp_path, devices_per_node=1_000_000)
    line = refused(run_limited(["placement", "llama-3.1-8b", "--devices-file", path,
                                "--device", "big"]), "devices_per_node", "1024")
    assert "1000000" in line or "1,000,000" in line


def test_a_billion_layers_in_a_yaml_model_is_refused(tmp_path: Path) -> None:
    path = _yaml_model(tmp_path, "name: deep\nfamily: dense\ndecoder:\n  layers: 1000000000\n"
                       "  hidden_size: 64\n  heads: 4\n  vocab_size: 128\n")
    for command in (["inventory", path], ["placement", path, "--device", "h100"]):
        refused(run_limited(command), "decoder.layers", "4096", "1000000000")


def test_a_gguf_block_count_of_2_to_the_32_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    llama_gguf(path)
    raw = bytearray(path.read_bytes())
    at = raw.find(b"llama.block_count") + len(b"llama.block_count") + 4
    raw[at:at + 4] = struct.pack("<I", 2**32 - 1)
    path.write_bytes(bytes(raw))
    refused(run_limited(["inventory", path]), "block_count", "4,096", "4294967295")


def test_ten_thousand_nested_lists_in_a_devices_file_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("devices: " + "[" * 10_000 + "]" * 10_000 + "\n")
    refused(run_limited(["devices", "--devices-file", path]), str(path), "nest")


def test_a_yaml_file_just_under_the_size_limit_is_quick(tmp_path: Path) -> None:
    """4 MiB of flow lists took the pure-Python parser a minute; the node bound stops it."""
    path = tmp_path / "fleet.yaml"
    body = "devices: [" + ", ".join(["[1, 2]"] * 600_000)
    path.write_text(body[: bounds.FILE_BYTES - 16] + "]\n")
    refused(run_limited(["devices", "--devices-file", path]), str(path))


@pytest.mark.parametrize(("flag", "value", "bound"), [
    ("--per-node", "2147483648", "1,024"),
    ("--count", "1000000", "65,536"),
])
def test_absurd_device_counts_are_refused(flag: str, value: str, bound: str) -> None:
    refused(run_limited(["placement", "llama-3.1-8b", "--device", "h100", flag, value]),
            flag, bound, value)


def test_a_fifo_nobody_writes_to_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fleet.yaml"
    os.mkfifo(fifo)
    refused(run(["devices", "--devices-file", fifo]), str(fifo), "empty")
    refused(run(["inventory", fifo]), str(fifo))


def test_an_endless_device_is_read_no_further_than_the_limit() -> None:
    refused(run(["devices", "--devices-file", "/dev/zero"]), "/dev/zero", "4,194,304")


# --- internal errors that were exit 3 -----------------------------------------------------


@pytest.mark.parametrize("command", ["inventory", "placement"])
def test_hidden_size_beyond_float_range(tmp_path: Path, command: str) -> None:
    folder = _config(tmp_path, hidden_size=10**400)
    extra = ["--device", "h100"] if command == "placement" else []
    line = refused(run([command, folder, *extra]), "hidden_size", "401-digit integer")
    assert len(line) < 300


def test_a_1_mb_refs_main(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--tiny"
    snapshot = repo / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(LLAMA))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("x" * 1_000_000)
    line = refused(run(["inventory", repo]), "refs/main", "the limit is 1,024")
    assert len(line) < 400


@pytest.mark.parametrize("header", [
    {"a": {"dtype": "BF16", "shape": [2]}},  # no data_offsets
    {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "__metadata__": [1]},
    {"a": {"dtype": ["BF16"], "shape": [2], "data_offsets": [0, 4]}},  # unhashable dtype
    {"a": {"dtype": "BF16", "shape": [10**40, 10**40], "data_offsets": [0, 4]}},
    {"a": {"dtype": "BF16", "shape": [2**64 + 1], "data_offsets": [0, 4]}},
    {"a": "BF16"},
    [1, 2],
])
def test_malformed_safetensors_headers(tmp_path: Path, header: object) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    synthetic.write_config(folder, LLAMA)
    raw = json.dumps(header).encode()
    synthetic.write_raw(folder / "model.safetensors", raw, total=8 + len(raw) + 4)
    refused(run(["inventory", folder]), "model.safetensors")


def test_a_malformed_gguf_tensor_type(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    llama_gguf(path)
    raw = bytearray(path.read_bytes())
    name = b"token_embd.weight"
    at = raw.find(name) + len(name)
    dims = struct.unpack("<I", raw[at:at + 4])[0]
    type_at = at + 4 + 8 * dims
    raw[type_at:type_at + 4] = struct.pack("<I", 4)  # Q4_2: removed from ggml, no block size
    path.write_bytes(bytes(raw))
    refused(run(["inventory", path]), str(path))


def test_a_config_nested_ten_thousand_levels(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    text = json.dumps(LLAMA)[:-1] + ', "rope_scaling": ' + "[" * 10_000 + "]" * 10_000 + "}"
    (folder / "config.json").write_text(text)
    refused(run(["inventory", folder]), "config.json", "nest")


def test_a_yaml_model_nested_ten_thousand_levels(tmp_path: Path) -> None:
    path = _yaml_model(tmp_path, "name: " + "[" * 10_000 + "]" * 10_000 + "\n")
    refused(run(["inventory", path]), str(path))


def test_an_integer_of_more_than_4300_digits(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA)[:-1] + ', "vocab_size": '
                                        + "9" * 5000 + "}")
    refused(run(["inventory", folder]), "config.json", "4,300 digits")
    path = _yaml_model(tmp_path, "name: x\nfamily: dense\ndecoder:\n  layers: " + "9" * 5000)
    refused(run(["inventory", path]), str(path), "5,000 characters")


@pytest.mark.parametrize("images", ["9223372036854775808", "1" + "0" * 30, "4097"])
def test_huge_images(images: str) -> None:
    refused(run(["inventory", "llava-1.5-7b", "--images", images]), "--images", "4,096")


@pytest.mark.parametrize("command", [["inventory", "llama-3.1-8b"],
                                     ["placement", "llama-3.1-8b", "--device", "h100"]])
def test_prompt_tokens_zero(command: list[str]) -> None:
    line = refused(run([*command, "--prompt-tokens", "0"]), "--prompt-tokens", "at least 1")
    assert "ValidationError" not in line


@pytest.mark.parametrize(("tag", "kind"), [("!!int 1.5", "!!int"),
                                           ("!!timestamp soon", "!!timestamp"),
                                           ("!!bool 24", "!!bool")])
def test_yaml_tags_pyyaml_cannot_construct(tmp_path: Path, tag: str, kind: str) -> None:
    path = _yaml_model(tmp_path, f"name: x\nfamily: dense\ndecoder:\n  layers: {tag}\n")
    refused(run(["inventory", path]), str(path), kind, "line 4")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(f"id: a\nname: A\nmemory_bytes: {tag}\n")
    refused(run(["devices", "--devices-file", fleet]), str(fleet), kind)


@pytest.mark.parametrize("command", [
    ["inventory", "{}"], ["compare", "{}", "{}"], ["placement", "{}", "--device", "h100"]])
def test_a_lone_surrogate_in_a_model_name(tmp_path: Path, command: list[str]) -> None:
    """A folder whose name is not UTF-8 (b"\\xff") names its model "\\udcff" (Python's
    surrogate escape); tables replace what the output cannot encode."""
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/tiny-\xff"))
    folder.mkdir()
    synthetic.write_config(folder, LLAMA)
    outcome = run([str(folder) if part == "{}" else part for part in command])
    assert outcome.code == 0, outcome.stderr
    assert "tiny-?" in outcome.stdout
    json_out = run([str(folder) if part == "{}" else part for part in command]
                   + ["--format", "json"])
    assert json_out.code == 0
    assert "tiny-\\udcff" in json_out.stdout


@pytest.mark.parametrize("command", [
    ["inventory", "{}"], ["compare", "{}", "{}"], ["placement", "{}", "--device", "h100"]])
def test_a_model_name_that_looks_like_rich_markup(tmp_path: Path, command: list[str]) -> None:
    text = (Path(__file__).parents[2] / "examples" / "dense-70b.yaml").read_text()
    path = _yaml_model(tmp_path, text.replace("name: dense-70b", 'name: "[/bold] [red"'))
    outcome = run([str(path) if part == "{}" else part for part in command])
    assert outcome.code == 0, outcome.stderr
    assert "[/bold] [red" in outcome.stdout


def test_a_5000_digit_tokens_is_refused_at_parse() -> None:
    line = refused(run(["kv", "--tokens", "9" * 5000]), "--tokens", "5,000 characters")
    assert len(line) < 300


# --- bounded error lines and no arguments ---------------------------------------------------


@pytest.mark.parametrize(("args", "quoted"), [
    (["inventory", "x" * 100_000], True),
    (["kv", "--dtype", "x" * 100_000], True),
    (["placement", "llama-3.1-8b", "--device", "x" * 100_000], True),
    (["kv", "--tokens", "x" * 100_000], True),
    (["kv", "--layers", "x" * 100_000], True),
    (["nope" * 25_000], True),
    (["kv", "--" + "x" * 100_000], True),
])
def test_error_lines_quote_a_bounded_excerpt(args: list[str], quoted: bool) -> None:
    line = refused(run(args))
    assert len(line) < 600, line[:700]
    assert ("characters" in line) is quoted, line


def test_no_arguments_is_help_on_stderr_and_exit_2() -> None:
    outcome = run_limited([])
    assert outcome.code == 2
    assert outcome.stdout == ""
    assert "Usage" in outcome.stderr and "Commands" in outcome.stderr


# --- found past the list (fuzzing and sweeps at the bounds) ------------------------


@pytest.mark.parametrize("args", [
    ["--chain", "top_p=1e-10"],  # p within the reach tolerance kept nothing
    ["--chain", "top_p=5e-324"],
])
def test_a_tiny_top_p_keeps_the_top_token(args: list[str]) -> None:
    outcome = run(["sample", *args, "--format", "json"])
    assert outcome.code == 0
    assert json.loads(outcome.stdout)["candidates"] == ["A"]


@pytest.mark.parametrize("args", [
    ["--logits", "A=-1e308,B=-1e308", "--chain", "temperature=1e-4"],
    ["--logits", "A=-1e308", "--chain", "repetition_penalty=1e300@A"],
])
def test_logits_overflowing_to_minus_infinity(args: list[str]) -> None:
    refused(run(["sample", *args]), "--chain", "overflow")


@pytest.mark.parametrize("pin", ["--tp", "--pp", "--ep"])
def test_a_pinned_split_wider_than_the_devices(pin: str) -> None:
    """--pp 65536 on 8 devices sized 65,536 stages for 20 seconds."""
    refused(run_limited(["placement", "llama-3.1-8b", "--device", "h100", pin, "65536"]),
            pin, "65,536 devices", "--count is 8")


@pytest.mark.parametrize("factor", ["Infinity", "NaN", "1e308", str(10**400)])
def test_a_rope_factor_that_overflows(tmp_path: Path, factor: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    config = {**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": "@"}}
    (folder / "config.json").write_text(json.dumps(config).replace('"@"', factor))
    refused(run(["inventory", folder]), "rope_scaling")


def test_a_vision_mlp_ratio_that_overflows(tmp_path: Path) -> None:
    """Qwen2-VL's vision width is embed_dim × mlp_ratio: 1e308 made it int(inf)."""
    source = Path(__file__).parents[2] / "tests" / "data" / "more-configs"
    config = json.loads((source / "Qwen--Qwen2-VL-7B-Instruct.json").read_text())
    config["vision_config"]["mlp_ratio"] = 1e308
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    refused(run(["inventory", folder]), "vision_config: mlp_ratio", "within ±")


def test_a_ten_megabyte_tensor_name(tmp_path: Path) -> None:
    """Classifying one 10 MB name took 15 seconds."""
    folder = tmp_path / "model"
    folder.mkdir()
    synthetic.write_config(folder, LLAMA)
    tensors = synthetic.llama_tensors()
    tensors["model.layers.0." + "x." * 5_000_000 + "weight"] = ("BF16", [4])
    synthetic.write_safetensors(folder / "model.safetensors", tensors)
    refused(run(["inventory", folder]), "tensor name", "1,024 characters")


def test_more_tensors_than_any_checkpoint(tmp_path: Path) -> None:
    """300,000 tensors took 16 seconds to tabulate; the bound is 262,144."""
    folder = tmp_path / "model"
    folder.mkdir()
    synthetic.write_config(folder, LLAMA)
    count = bounds.CHECKPOINT_TENSORS.limit + 1
    raw = ("{" + ",".join(f'"t{i}":{{"dtype":"BF16","shape":[1],"data_offsets":[{2 * i},'
                          f'{2 * i + 2}]}}' for i in range(count)) + "}").encode()
    synthetic.write_raw(folder / "model.safetensors", raw, total=8 + len(raw) + 2 * count)
    refused(run(["inventory", folder]), "tensors", "262,144")


@pytest.mark.parametrize("command", [["placement", "llama-3.1-8b", "--device", "h100"],
                                     ["placement", "llama-3.1-8b", "--count", "1"]])
def test_a_device_far_smaller_than_the_weights_is_quick(command: list[str]) -> None:
    """--device-memory 1: the memory bars once trimmed billions of cells one at a time."""
    outcome = run_limited([*command, "--device-memory", "1", "--limit", "3"])
    assert outcome.code == 0
    assert "weights leave no room" in outcome.stdout


def test_a_long_prompt_in_tiny_chunks_is_quick() -> None:
    """A 1G-token prompt prefilled 3 tokens a step: the time estimate once walked every chunk."""
    outcome = run_limited(["placement", "llama-3.1-8b", "--device", "l4",
                           "--max-num-batched-tokens", "3", "--prompt-tokens", "1G",
                           "--max-model-len", "1G", "--limit", "2"])
    assert outcome.code == 0
