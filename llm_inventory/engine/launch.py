"""An engine's own launch command, read and predicted: which engine it starts, what it asks
for, and what the engine will print at start-up (or the error it stops with).

The engine is picked by the longest `programs` prefix over every registered engine; its own
`parse_launch` reads the rest. The prediction is placement's, for the split the command
pins: the same figures `placement --engine E` gives for those settings.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, Field

from llm_inventory.engine.offload import Offload
from llm_inventory.engine.placement import PlacementRequest, Plan, plan_placement
from llm_inventory.engine.serving import ServingEngine, get, names
from llm_inventory.engine.serving.base import LaunchCommand
from llm_inventory.engine.speculative import Speculative
from llm_inventory.engine.trust import Trust
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import Device
from llm_inventory.spec.model import ModelSpec

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _normal(word: str) -> str:
    """A program word as prefixes spell it: its base name; python3, python3.12 → python."""
    base = os.path.basename(word)
    return "python" if base.startswith("python") else base


def match_program(argv: list[str]) -> tuple[ServingEngine, list[str]]:
    """The engine whose program prefix starts `argv` (the longest match) and the rest;
    InputError when none does."""
    if not argv:
        raise InputError("launch", "give the engine's command line after --, e.g. "
                         "`-- vllm serve Qwen/Qwen3-8B`")
    # a shell line's leading NAME=value assignments (CUDA_VISIBLE_DEVICES=…) are its
    # environment, not its program
    while argv and _ASSIGNMENT.match(argv[0]):
        argv = argv[1:]
    if not argv:
        raise InputError("launch", "the command line sets variables but names no program")
    words = [_normal(argv[0])] + argv[1:]
    best: tuple[int, ServingEngine] | None = None
    for name in names():
        engine = get(name)
        for prefix in engine.programs:
            n = len(prefix)
            if tuple(words[:n]) == prefix and (
                    best is None or n > best[0]
                    # a fork installing the same programs claims the lines that are its own
                    or (n == best[0] and engine.claims_launch(argv))):
                best = (n, engine)
    if best is None:
        known = sorted({" ".join(p) for name in names() for p in get(name).programs})
        raise InputError("launch", f"{' '.join(argv[:3])!r} starts no engine modelled; "
                         f"known: {', '.join(known)}")
    return best[1], argv[best[0]:]


def _option_of(flag: str, written: list[str]) -> str | None:
    """The entry of `written` (a command line's flags as read) that set the engine flag
    `flag`: its option, snake-cased, names it (--enforce-eager → enforce_eager,
    --no-enable-prefix-caching, --max-model-len auto, --kv-cache-memory-bytes)."""
    for text in written:
        option = text.split()[0].split("=")[0].lstrip("-").replace("-", "_")
        if option and (option == flag or option.endswith(flag) or flag.startswith(option)
                       or option.startswith(flag)):
            return text
    return None


def without_untaken(command: LaunchCommand, engine: ServingEngine) -> LaunchCommand:
    """`command` with the engine flags `engine`'s era does not model moved to `ignored`
    (listed, never refused: one era of an engine models a flag its reader knows that
    another does not)."""
    dropped = [name for name in command.flags if not engine.takes_launch_flag(name)]
    if not dropped:
        return command
    understood = list(command.understood)
    ignored = list(command.ignored)
    for name in dropped:
        text = _option_of(name, understood)
        if text is not None:
            understood.remove(text)
        ignored.append(text or name)
    flags = {k: v for k, v in command.flags.items() if k not in dropped}
    return command.model_copy(update={"flags": flags, "understood": understood,
                                      "ignored": ignored})


class LaunchResult(BaseModel):
    """What a launch command asks for and what its engine will print at start-up."""

    schema_version: int = 1
    engine: str
    engine_version: str
    label: str
    command: LaunchCommand
    model: str
    device: str
    device_memory_bytes: int
    count: int
    context: int
    starts: bool  # the engine starts (no start-up error)
    fits: bool  # it starts and holds the workload placement was asked for
    plan: Plan
    startup: list[str]  # in the engine's words, the binding worker's
    startup_error: str | None
    longest_context: int | None  # the longest context that fits, when the asked one does not
    trust: dict[str, Trust] = Field(default_factory=dict)  # placement's groups, and startup


def predict_launch(spec: ModelSpec, command: LaunchCommand, engine: ServingEngine,
                   device: Device, count: int | None = None,
                   speculative: Speculative | None = None) -> LaunchResult:
    """Placement for the split and settings `command` pins, as `engine` accounts for it;
    `speculative` is the command's with its draft loaded (None: the command's as read)."""
    command = without_untaken(command, engine)
    if count:
        command = engine.on_devices(command, count)
    devices = count or command.tp * command.pp * command.dp
    context = command.context or engine.launch_context(spec, command)
    if context is None:
        raise InputError("launch", f"{spec.name} states no context length; give "
                         "the engine's context flag")
    quantized = spec.quantization is not None and command.dtype not in (None, "fp8")
    # --kv-cache-dtype auto is the model's run-time dtype, --dtype when given (vLLM
    # CacheConfig.cache_dtype "auto" → ModelConfig.dtype; SGLang's kv_cache_dtype "auto")
    kv_dtype = command.kv_dtype or (command.dtype if command.dtype in ("fp16", "bf16", "fp32")
                                    and not quantized else None)
    request = PlacementRequest(
        device=device, count=devices, tp=command.tp, pp=command.pp,
        ep=command.ep or 1, engine=f"{engine.name}@{engine.version}",
        engine_flags=command.flags, context=context,
        gpu_memory_utilization=command.memory_fraction,
        max_num_batched_tokens=command.max_num_batched_tokens,
        max_num_seqs=command.max_num_seqs, block_size=command.block_size,
        # an engine's --dtype retypes unquantized checkpoints only
        dtype=None if quantized else command.dtype, kv_dtype=kv_dtype, limit=0,
        speculative=speculative if speculative is not None else command.speculative,
        lora=command.lora, multimodal=command.multimodal,
        offload=command.offload or Offload())
    result = plan_placement(spec, request)
    shape = (command.tp, command.pp, command.ep or 1)
    plan = next((p for p in result.plans if p.disaggregation is None
                 and (p.tp, p.pp, p.ep) == shape), None)
    if plan is None:
        split = f"tp{shape[0]} pp{shape[1]}" + (f" ep{shape[2]}" if shape[2] > 1 else "")
        reason = next((r.reason for r in result.refused if split in r.splits),
                      "the split is not legal for this model")
        raise InputError("launch", f"{engine.label} cannot run {spec.name} as {split}: "
                         f"{reason}")
    longest = plan.longest_context if plan.fits_context is False else None
    return LaunchResult(
        engine=engine.name, engine_version=engine.version, label=engine.label,
        command=command, model=spec.name, device=device.id,
        device_memory_bytes=device.memory_bytes, count=devices, context=result.context,
        starts=plan.startup_error is None and plan.fits_context is not False
        and bool(plan.per_device and plan.per_device.kv_pool_bytes > 0),
        fits=plan.fits, plan=plan, startup=plan.startup, startup_error=plan.startup_error,
        longest_context=longest,
        trust={**result.trust, "startup": engine.rule_trust(
            f"{engine.label}'s own start-up lines and stop, from its pool accounting")})
