"""Engine start-up logs read back: text in, a `StartupLog` out (pure: no file I/O).

One module per log dialect (`DIALECTS`): each says how strongly a cleaned log looks like
its engine (`score`) and reads it (`read`). Cleaning removes what terminals, containers and
multi-process engines add around the engine's words: ANSI colours, leading timestamps, and
rank prefixes (`(EngineCore_DP0 pid=1)`, `(VllmWorker TP1 pid=2)`, `[… TP3]`), which become
the line's rank so that two ranks' interleaved lines are told apart.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.errors import InputError

# Dialect modules, most specific first (the highest score wins; ties go to the earlier one).
DIALECTS: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp")

MAX_LINES = 200_000  # a start-up log is a few thousand lines; past this it is not one
MAX_LINE_CHARS = 16_384  # the longest start-up lines (vLLM's config) are ~3,000 characters

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
# Timestamps a collector puts before the engine's own words: ISO 8601 (docker, kubectl),
# syslog ("Mar  8 12:29:13 host proc[1]:").
_LEADING_STAMP = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+"
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ \S+?:\s)")
# vLLM's multi-process prefixes: (EngineCore_DP0 pid=1), (VllmWorker TP1 pid=2),
# (Worker_TP1_EP1 pid=3), (APIServer pid=4), (RayWorkerWrapper pid=5, ip=…)
_VLLM_PROC = re.compile(r"^\((?P<proc>[A-Za-z_]+[^()\s]*?)(?:\s+(?P<rank>[A-Z]+\d+))?"
                        r"\s+pid=\d+[^)]*\)\s*")
# SGLang's "[2025-03-08 12:29:13 TP0] " (the rank optional), any "[… TPn]" prefix.
_BRACKET_RANK = re.compile(r"^\[(?P<stamp>[\d\-/: .,T]+?)?\s*(?P<rank>(?:DP\d+ )?(?:PP\d+ )?"
                           r"TP\d+(?: EP\d+)?)?\]\s*")
_LLAMA_PREFIX = re.compile(r"^llama\[\d+\]:\s*")
# Another process's line glued onto this one (two ranks writing one stream without a
# newline between them): it starts a line of its own.
_GLUED = re.compile(r"(?<=\S)(?=\((?:EngineCore|Worker|VllmWorker|APIServer|RayWorker)"
                    r"[^()\s]*(?:\s+[A-Z]+\d+)?\s+pid=\d+)")


class LogLine(BaseModel):
    """One line of the log as the engine wrote it, with where it came from."""

    model_config = ConfigDict(frozen=True)

    number: int  # 1-based, in the file
    rank: str  # "" when the line names none; "TP0", "TP1 EP1", "EngineCore_DP0" …
    text: str  # the engine's own words, prefixes removed


class Figure(BaseModel):
    """One figure the engine printed, as printed, with its value in base units."""

    model_config = ConfigDict(frozen=True)

    key: str  # stable: weights, activation, non_torch, kv_pool, kv_tokens …
    printed: str  # the number as printed ("61.66")
    unit: str  # GiB, MiB, GB (SGLang's GiB), MB, bytes, tokens, blocks, cells, x
    value: float  # in `unit`
    base: int | float  # bytes for sizes, a count, or the concurrency factor
    resolution: float  # in base units: half of the last printed digit (rounding bound)
    line: int
    rank: str = ""


class Check(BaseModel):
    """A printed figure recomputed from the log's own other figures, at its printed
    precision: `holds` when the two agree within the rounding of every printed input; None
    when the figure turns out not to follow from the log alone (`formula` says why)."""

    model_config = ConfigDict(frozen=True)

    key: str
    printed: str  # as printed, with its unit
    derived: str  # recomputed, printed the same way
    formula: str  # the engine's arithmetic, in the log's own figures
    holds: bool | None
    line: int


class StartupLog(BaseModel):
    """What a start-up log says: the engine, where it ran, what it was asked and printed."""

    model_config = ConfigDict(frozen=True)

    engine: str  # the registry name: vllm, sglang, trtllm, llamacpp, ik_llama
    dialect: str  # e.g. "vLLM V1 engine", "TensorRT-LLM TensorRT-engine path"
    version: str | None = None  # as printed, or None
    version_basis: str = ""  # where the version came from ("printed", or what inferred it)
    model: str | None = None  # a Hub id or local path, as printed
    gpu: str | None = None  # the GPU's name, when printed
    gpu_memory_bytes: int | None = None  # total device memory, when printed or derivable
    gpu_count: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    context: int | None = None  # max_model_len / context_len / n_ctx
    dtype: str | None = None
    kv_dtype: str | None = None
    quantization: str | None = None
    memory_fraction: float | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None
    flags: dict[str, str] = Field(default_factory=dict)  # every setting printed, verbatim
    figures: list[Figure] = Field(default_factory=list)  # the first rank's, in log order
    ranks: list[str] = Field(default_factory=list)  # every rank seen
    lines: int = 0
    truncated: bool = False  # the log stops before the engine reported its KV pool
    error: str | None = None  # the error the engine stopped with at start-up, as printed
    notes: list[str] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)  # the log's figures checked on each other

    def figure(self, key: str) -> Figure | None:
        return next((f for f in self.figures if f.key == key), None)


def _rank_of(proc: str, rank: str | None) -> str:
    """`(VllmWorker TP1 pid=2)` is rank TP1; `(Worker_TP1 pid=3)` is Worker_TP1."""
    return rank or proc


def clean(text: str) -> list[LogLine]:
    """The log's lines with colours, timestamps and rank prefixes removed (pure)."""
    raw = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(raw) > MAX_LINES:
        raise InputError("log", f"{len(raw):,} lines; a start-up log has far fewer (at most "
                         f"{MAX_LINES:,} read)")
    out: list[LogLine] = []
    for number, whole in enumerate(raw, 1):
        for line in _GLUED.split(_ANSI.sub("", whole[:MAX_LINE_CHARS])):
            found = _clean_line(line.strip(), number)
            if found is not None:
                out.append(found)
    return out


def _clean_line(line: str, number: int) -> LogLine | None:
    """One line with its timestamp and rank prefix removed (None when nothing is left)."""
    line = _LLAMA_PREFIX.sub("", _LEADING_STAMP.sub("", line))
    rank = ""
    proc = _VLLM_PROC.match(line)
    if proc:
        rank = _rank_of(proc["proc"], proc["rank"])
        line = line[proc.end():]
    bracket = _BRACKET_RANK.match(line)
    if bracket and (bracket["stamp"] or bracket["rank"]) and not line.startswith(
            "[TensorRT-LLM]"):
        rank = bracket["rank"] or rank
        line = line[bracket.end():]
    return LogLine(number=number, rank=rank, text=line) if line else None


def _dialect(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def read_log(text: str) -> StartupLog:
    """Read an engine start-up log. InputError when no dialect recognises it."""
    if "\x00" in text:
        raise InputError("log", "binary data, not an engine's start-up log")
    lines = clean(text)
    best: tuple[int, ModuleType] | None = None
    for name in DIALECTS:
        module = _dialect(name)
        score = int(module.score(lines))
        if score > 0 and (best is None or score > best[0]):
            best = (score, module)
    if best is None:
        raise InputError("log", "no engine start-up lines recognised (vLLM, SGLang, "
                         "TensorRT-LLM, llama.cpp)")
    log: StartupLog = best[1].read(lines)
    return log.model_copy(update={"lines": len(lines), "checks": best[1].checks(log)})


__all__ = ["DIALECTS", "Check", "Figure", "LogLine", "StartupLog", "clean", "read_log"]
