"""Generators of hostile input: flag values, mutated JSON and YAML documents, corrupt bytes.

Everything here is a hypothesis strategy or a plain function of a draw, so the fuzz tests
stay small: they pick a target, draw from these, run the command, and check the outcome.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz.harness import ROOT

DATA = ROOT / "tests" / "data"

# --- flag values --------------------------------------------------------------------------

# Numbers at and around every bound and every machine limit, and text that looks like one.
EDGE_NUMBERS = [
    "-1", "0", "1", "2", "3", "7", "8", "16", "64", "1000", "4096", "4097", "65536", "65537",
    "1048576", "1048577", "1073741824", "1073741825", "2147483647", "2147483648",
    "4294967295", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "1" + "0" * 30, "9" * 400, "9" * 4300, "9" * 4301, "9" * 5000, "-" + "9" * 5000,
]
EDGE_TEXT = [
    "1.5", "0.5", "0.0", "1e3", "1e400", "-1e400", "1e-400", "-0", "+1", "0x10", "0o7", "0b1",
    "1_000", "1,000", "08", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "", " ", "\t",
    "٣", "１２", "²", "߁", "8k", "8K", "8 k", "1M", "1m", "1G", "128K", "1.5k", "0.1k", "8kk",
    "80GiB", "141GB", "79.1 GiB", "1EiB", "16EiB", "17EiB", "0B", "GiB", "1e3GB", "-80GiB",
    "x", "-", "--", "é", "\ud800", "\x00", "\n", "a" * 100_000, "1" * 100_000,
    "0.92", "1.0", "1.0000001", "0", "4x4", "448x448", "0x0", "99999x99999", "448×448",
    "[/bold]", "[red]x[/blue]", ":smile:", "\x1b[31m",
    "A=1", "A=0.5,B=0.5", "A=nan", "A=1e400", "=", ",,,", "temperature=0", "top_k=0",
    "top_p=1e-400", "repetition_penalty=1e400@A", "ban@" + "A+" * 2000,
]
PATHS = [
    "/", "/dev/null", "/dev/zero", "/nonexistent/x.yaml", "x.json", "x.gguf", "x.safetensors",
    "a" * 5000, "a/" * 3000, "/proc/self/status", "\x00.yaml", "~/../x.yaml",
    str(ROOT / "examples" / "devices.yaml"), str(ROOT / "examples"),
]
MODELS = [
    "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "jamba-v0.1",
    "llava-1.5-7b", "flux-dev", "gpt-oss-20b", "llama-4-scout",
    str(ROOT / "examples" / "vlm-2048.yaml"), str(ROOT / "examples" / "diffusion-flux.yaml"),
    str(ROOT / "examples" / "embedding-bge-large.yaml"),
    str(DATA / "models" / "Qwen2.5-VL-7B-Instruct.json"),
    str(DATA / "more-configs" / "openai--whisper-base.json"),
]
DEVICES = ["h100", "h100-sxm", "a100-40gb", "mi300x", "l4", "H100", "h100_sxm"]

edge_values = st.sampled_from(EDGE_NUMBERS + EDGE_TEXT)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=0, max_value=70).map(lambda e: str(2**e)),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
junk = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
unit_junk = st.tuples(
    st.sampled_from(["1", "8", "80", "1.5", "0", "-1", "9" * 30, ""]),
    st.sampled_from(["", " ", "k", "K", "kb", "KB", "kib", "KiB", "GiB", "GB", "g", "T",
                     "TiB", "PiB", "EiB", "B", "b", "tokens", "%", "e9", "GiBs"]),
).map("".join)

#: Any hostile value for one flag.
hostile = st.one_of(edge_values, numbers, junk, unit_junk)

# Numbers as a float parser meets them: denormals, the ends of the range, signed zeros.
EDGE_FLOATS = st.sampled_from([
    "0", "-0", "1", "0.5", "1e-5", "1e-9", "1e-10", "5e-324", "1e-320", "2.2e-308", "1e-300",
    "1e300", "1e308", "-1e308", "1.7976931348623157e308", "1e309", "nan", "inf", "-inf", "-1",
    "99999999999999999999999", "1e-400", "0.999999999999", "1.0000000001",
])
float_text = st.one_of(
    EDGE_FLOATS, EDGE_FLOATS,
    st.floats().map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)
tokens = st.sampled_from(["A", "B", "C", "", " ", "A A", "é", "=", "@", "+", "a" * 300])
processor = st.one_of(
    st.tuples(st.sampled_from(["temperature", "top_k", "top_p", "min_p"]), float_text).map(
        lambda t: f"{t[0]}={t[1]}"),
    st.tuples(float_text, st.lists(tokens, min_size=1, max_size=3)).map(
        lambda t: f"repetition_penalty={t[0]}@{'+'.join(t[1])}"),
    st.lists(tokens, min_size=1, max_size=3).map(lambda t: "ban@" + "+".join(t)),
)
#: Structured values for the options that take a small language of their own.
STRUCTURED: dict[str, st.SearchStrategy[str]] = {
    "chain": st.lists(processor, max_size=5).map(",".join),
    "probs": st.lists(st.tuples(tokens, float_text), min_size=1, max_size=6).map(
        lambda pairs: ",".join(f"{t}={v}" for t, v in pairs)),
    "logits": st.lists(st.tuples(tokens, float_text), min_size=1, max_size=6).map(
        lambda pairs: ",".join(f"{t}={v}" for t, v in pairs)),
    "image_size": st.tuples(st.sampled_from(EDGE_NUMBERS[:20]), st.sampled_from(
        EDGE_NUMBERS[:20])).map("x".join),
}


def for_subprocess(value: str) -> bool:
    """Whether `value` can be an argv entry of a real process (no NUL, valid UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


# --- documents ----------------------------------------------------------------------------

DEEP = "__deep__"  # replaced by a 10,000-level nest when the text is written


def deep_json(levels: int = 10_000) -> str:
    return "[" * levels + "]" * levels


json_values = st.one_of(
    st.sampled_from([
        None, True, False, 0, -1, 1, 2, 3, 1.5, -0.0, 0.5, 2**31, 2**32 - 1, 2**53 + 1, 2**63,
        2**64, 10**30, 10**400, -(10**400), math.nan, math.inf, -math.inf, 1e308, "", "abc",
        "bf16", "fp8", "\ud800", "[/bold] [red", ":smile:", "x" * 100_000, [], [1] * 5000,
        [None], {}, {"a": 1},
        [[[[[]]]]], DEEP, "llama", "mixtral", "deepseek_v3", "sliding_attention",
    ]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=8),
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in a JSON-like document (dict keys and list indices)."""
    found = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, prefix)]
    while stack:
        value, path = stack.pop()
        items: Any = value.items() if isinstance(value, dict) else (
            enumerate(value) if isinstance(value, list) else ())
        for key, child in items:
            found.append((*path, key))
            if len(found) < 2000:
                stack.append((child, (*path, key)))
    return sorted(found, key=repr)


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """`document` (a JSON-like mapping) with one to four keys deleted, replaced, nested or
    renamed."""
    data = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(data, path)
        key = path[-1]
        action = draw(st.sampled_from(["delete", "replace", "replace", "replace", "nest",
                                       "wrap", "rename"]))
        if action == "delete":
            del parent[key]
        elif action == "replace":  # a copy: the sampled constants must stay as they are
            parent[key] = copy.deepcopy(draw(json_values))
        elif action == "nest":
            parent[key] = {"a": parent[key]}
        elif action == "wrap":
            parent[key] = [copy.deepcopy(parent[key])
                           for _ in range(draw(st.integers(min_value=0, max_value=3)))]
        elif action == "rename" and isinstance(parent, dict):
            parent[str(key) + draw(st.sampled_from(["_", "s", "X", " "]))] = parent.pop(key)
    return data


def json_text(data: Any) -> str:
    """JSON as Python writes it (NaN and Infinity included), with DEEP nests spliced in."""
    return json.dumps(data).replace(json.dumps(DEEP), deep_json())


YAML_TAGS = ["!!int 1.5", "!!timestamp soon", "!!bool 24", "!!float x", "!!int " + "9" * 5000,
             "!!binary '###'", "!!set {a, b}", "!!omap [1]", "!!python/object:os.system ls",
             "!!str", "!!null x", "!!merge x", "&a [*a]", "*nope", "!!map [1]", "!!seq {a: 1}",
             ".inf", ".nan", "-.inf", "0x" + "f" * 5000, "1:2:3:4:5",
             "2001-12-14t21:59:43.10-05:00",
             "~", "'" + "x" * 100_000 + "'", "[" * 10_000 + "]" * 10_000]


@st.composite
def yaml_text(draw: st.DrawFn, document: Any) -> str:
    """A YAML rendering of a mutated `document`, then maybe tags, aliases or truncation."""
    data = draw(mutated(document))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True).replace(
        yaml.safe_dump(DEEP).removesuffix("\n...\n"), "[" * 10_000 + "]" * 10_000)
    lines = text.splitlines()
    action = draw(st.sampled_from(["none", "tag", "tag", "alias", "truncate", "flow-bomb"]))
    if action == "tag" and lines:
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        head = lines[i].split(":", 1)[0]
        if ":" in lines[i]:
            lines[i] = f"{head}: {draw(st.sampled_from(YAML_TAGS))}"
    elif action == "alias":
        width = draw(st.integers(min_value=2, max_value=12))
        levels = draw(st.integers(min_value=2, max_value=9))
        lines.append("bomb0: &b0 [1, 2, 3]")
        for level in range(1, levels):
            refs = ", ".join([f"*b{level - 1}"] * width)
            lines.append(f"bomb{level}: &b{level} [{refs}]")
    elif action == "truncate" and text:
        return text[: draw(st.integers(min_value=0, max_value=len(text)))]
    elif action == "flow-bomb":
        lines.append("bomb: [" + ", ".join(["1"] * draw(st.sampled_from([10, 100_000]))) + "]")
    return "\n".join(lines) + "\n"


# --- corpora ------------------------------------------------------------------------------


def configs() -> list[Path]:
    """Every real config.json under tests/data, for mutation."""
    found: list[Path] = []
    for folder in ("configs", "more-configs", "models", "engine-configs"):
        for path in sorted((DATA / folder).glob("*.json")):
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("model_type"), str):
                found.append(path)
    return found


def yaml_models() -> list[Path]:
    """Every YAML model description shipped: examples and presets."""
    return sorted((ROOT / "examples").glob("*.yaml")) + sorted(
        (ROOT / "llm_inventory" / "data" / "presets").glob("*.yaml"))


@st.composite
def corrupt_bytes(draw: st.DrawFn, raw: bytes) -> bytes:
    """`raw` with bytes flipped, cut, spliced or its length prefix rewritten."""
    data = bytearray(raw)
    action = draw(st.sampled_from(["flip", "flip", "truncate", "splice", "prefix", "extend"]))
    if action == "flip" and data:
        for _ in range(draw(st.integers(min_value=1, max_value=8))):
            i = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data[i] = draw(st.integers(min_value=0, max_value=255))
    elif action == "truncate":
        del data[draw(st.integers(min_value=0, max_value=len(data))):]
    elif action == "splice" and data:
        i = draw(st.integers(min_value=0, max_value=len(data)))
        data[i:i] = draw(st.binary(max_size=64))
    elif action == "prefix" and len(data) >= 8:
        value = draw(st.sampled_from([0, 1, 7, 2**31, 2**32 - 1, 2**63, 2**64 - 1,
                                      len(data), len(data) - 8, len(data) - 7]))
        start = draw(st.sampled_from([0, 8, 16] if len(data) >= 24 else [0]))
        data[start:start + 8] = value.to_bytes(8, "little")
    elif action == "extend":
        data += b"\x00" * draw(st.sampled_from([1, 8, 4096]))
    return bytes(data)
