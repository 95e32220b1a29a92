"""The LoRA and multimodal flags of an engine's command line, read into a LaunchCommand's
`lora` and `multimodal` fields, and written back into launch lines.

Each engine names its flags in a `FeatureFlags` table (vLLM, SGLang, llama.cpp below);
the reader is shared. vLLM turns LoRA on with `--enable-lora` only (`EngineArgs.
create_lora_config`, vllm/engine/arg_utils.py: no LoRAConfig without it); SGLang with
`--enable-lora` or `--lora-paths` (server_args.py `check_lora_server_args`); llama.cpp with
each `--lora FILE` / `--lora-scaled FILE SCALE` (common/arg.cpp).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from llm_inventory.bounds import LORA_RANK, LORA_SLOTS, MAX_PIXELS, Bound, number
from llm_inventory.engine.lora import LoraRequest
from llm_inventory.engine.mm_budget import MultimodalRequest, parse_limits
from llm_inventory.errors import InputError


@dataclass(frozen=True)
class FeatureFlags:
    """One engine's spelling of the feature flags (None: it has no such flag)."""

    enable: str | None
    slots: str | None
    rank: str | None
    cpu_slots: str | None = None
    dtype: str | None = None
    fully_sharded: str | None = None
    modules: str | None = None  # target modules (several values)
    adapters: str | None = None  # adapters to load (several values; turns LoRA on if set)
    adapter_file: str | None = None  # one file per flag (llama.cpp)
    adapter_scaled: str | None = None  # a file and a scale (llama.cpp)
    limit_mm: str | None = None
    mm_kwargs: str | None = None
    skip_mm: str | None = None
    adapters_enable: bool = False  # naming adapters turns LoRA on

    @property
    def switches(self) -> tuple[str, ...]:
        return tuple(f for f in (self.enable, self.fully_sharded, self.skip_mm) if f)

    @property
    def multi(self) -> tuple[str, ...]:
        return tuple(f for f in (self.modules, self.adapters) if f)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f for f in (self.enable, self.slots, self.rank, self.cpu_slots,
                                 self.dtype, self.fully_sharded, self.modules, self.adapters,
                                 self.adapter_file, self.adapter_scaled, self.limit_mm,
                                 self.mm_kwargs, self.skip_mm) if f)


VLLM = FeatureFlags(enable="--enable-lora", slots="--max-loras", rank="--max-lora-rank",
                    cpu_slots="--max-cpu-loras", dtype="--lora-dtype",
                    fully_sharded="--fully-sharded-loras", adapters="--lora-modules",
                    limit_mm="--limit-mm-per-prompt", mm_kwargs="--mm-processor-kwargs",
                    skip_mm="--skip-mm-profiling")
SGLANG = FeatureFlags(enable="--enable-lora", slots="--max-loras-per-batch",
                      rank="--max-lora-rank", modules="--lora-target-modules",
                      adapters="--lora-paths", adapters_enable=True)
LLAMACPP = FeatureFlags(enable=None, slots=None, rank=None, adapter_file="--lora",
                        adapter_scaled="--lora-scaled", adapters_enable=True)


def _count(flag: str, text: str, bound: Bound = LORA_SLOTS) -> int:
    return int(number(flag, text, low=1, high=bound.limit, integer=True))


@dataclass
class FeatureReader:
    """Reads one command line's feature flags as they come (see `take`)."""

    table: FeatureFlags
    enabled: bool = False
    lora: dict[str, object] = field(default_factory=dict)
    mm: dict[str, object] = field(default_factory=dict)
    adapters: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # what was read, as written
    _multi: str | None = None  # the several-valued flag the next bare words belong to

    def takes(self, name: str) -> bool:
        return name in self.table.names or self._dotted(name) is not None

    def _dotted(self, name: str) -> tuple[str, str] | None:
        """(flag, key) of a dict flag given one key at a time, as vLLM's argument parser
        takes them (`--limit-mm-per-prompt.image 1`, `--mm-processor-kwargs.max_pixels N`:
        `FlexibleArgumentParser`, vllm/utils/argparse_utils.py); None otherwise."""
        t = self.table
        for flag in (t.limit_mm, t.mm_kwargs):
            if flag and name.startswith(flag + ".") and len(name) > len(flag) + 1:
                return flag, name[len(flag) + 1:].replace("-", "_")
        return None

    def take_word(self, word: str) -> bool:
        """A bare word after a several-valued flag (`--lora-modules a=x b=y`): True when
        it belongs to that flag."""
        if self._multi is None:
            return False
        self._add(self._multi, word)
        self.texts.append(word)
        return True

    def take(self, name: str, value: str | None) -> bool:
        """Read one flag (`value` None for a switch); False when it is none of these."""
        t = self.table
        dotted = self._dotted(name)
        if dotted is not None:
            self._multi = None
            self.texts.append(name if value is None else f"{name} {value}")
            if value is None:
                raise InputError(name, "is missing its value")
            flag, key = dotted
            if flag == t.limit_mm:
                current = self.mm.get("limit_per_prompt")
                limits: dict[str, int] = dict(current) if isinstance(current, dict) else {}
                limits.update(parse_limits(f"{key}={value}"))
                self.mm["limit_per_prompt"] = limits
            elif key == "max_pixels":
                self.mm.update(_mm_kwargs(json.dumps({"max_pixels": value})))
            return True
        if name not in t.names:
            self._multi = None
            return False
        self._multi = name if name in t.multi else None
        self.texts.append(name if value is None else f"{name} {value}")
        if name in t.switches and value is not None and value.lower() in ("false", "0"):
            return True
        if name == t.enable:
            self.enabled = True
        elif name == t.fully_sharded:
            self.lora["fully_sharded"] = True
        elif name == t.skip_mm:
            self.mm["skip_profiling"] = True
        elif value is None:
            raise InputError(name, "is missing its value")
        elif name == t.slots:
            self.lora["max_loras"] = _count(name, value)
        elif name == t.rank:
            self.lora["max_lora_rank"] = _count(name, value, LORA_RANK)
        elif name == t.cpu_slots:
            self.lora["max_cpu_loras"] = _count(name, value)
        elif name == t.dtype:
            self.lora["lora_dtype"] = value
        elif name in (t.modules, t.adapters, t.adapter_file, t.adapter_scaled):
            self._add(name, value)
        elif name == t.limit_mm:
            self.mm["limit_per_prompt"] = parse_limits(value)
        elif name == t.mm_kwargs:
            self.mm.update(_mm_kwargs(value))
        return True

    def _add(self, name: str, value: str) -> None:
        t = self.table
        if name == t.modules:
            self.modules.extend(v for v in value.replace(",", " ").split() if v)
        else:
            self.adapters.append(value)
            if t.adapters_enable:
                self.enabled = True

    def fields(self) -> dict[str, object]:
        """The LaunchCommand's `lora` and `multimodal` (absent: not asked for)."""
        found: dict[str, object] = {}
        if self.enabled:
            found["lora"] = LoraRequest.model_validate({
                **self.lora, "target_modules": tuple(self.modules) if self.modules else None,
                "adapters": tuple(self.adapters)})
        if self.mm:
            found["multimodal"] = MultimodalRequest.model_validate(self.mm)
        return found


def _mm_kwargs(text: str) -> dict[str, object]:
    """The parts of --mm-processor-kwargs the budget reads (max_pixels)."""
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise InputError("--mm-processor-kwargs", "is not a JSON object") from exc
    if not isinstance(loaded, dict):
        raise InputError("--mm-processor-kwargs", "is not a JSON object")
    pixels = loaded.get("max_pixels")
    if pixels is None:
        return {}
    return {"max_pixels": _count("--mm-processor-kwargs max_pixels", str(pixels), MAX_PIXELS)}


def feature_args(table: FeatureFlags, lora: LoraRequest | None,
                 multimodal: MultimodalRequest | None) -> list[str]:
    """The flags that ask an engine for `lora` and `multimodal` (what `FeatureReader`
    reads back to the same requests)."""
    args: list[str] = []
    if lora is not None:
        if table.enable:
            args.append(table.enable)
        for flag, value in ((table.slots, lora.max_loras), (table.rank, lora.max_lora_rank),
                            (table.cpu_slots, lora.max_cpu_loras),
                            (table.dtype, lora.lora_dtype)):
            if flag and value is not None:
                args += [flag, str(value)]
        if table.fully_sharded and lora.fully_sharded:
            args.append(table.fully_sharded)
        if table.modules and lora.target_modules:
            args += [table.modules, *lora.target_modules]
        adapter_flag = table.adapters or table.adapter_file
        if adapter_flag and lora.adapters:
            if table.adapters:
                args += [adapter_flag, *lora.adapters]
            else:
                for adapter in lora.adapters:
                    args += [adapter_flag, adapter]
    if multimodal is not None:
        if table.limit_mm and multimodal.limit_per_prompt:
            args += [table.limit_mm, json.dumps(multimodal.limit_per_prompt,
                                                separators=(",", ":"))]
        if table.mm_kwargs and multimodal.max_pixels is not None:
            args += [table.mm_kwargs, json.dumps({"max_pixels": multimodal.max_pixels},
                                                 separators=(",", ":"))]
        if table.skip_mm and multimodal.skip_profiling:
            args.append(table.skip_mm)
    return args
