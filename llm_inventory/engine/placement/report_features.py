"""What a plan's report says of its serving features: the LoRA and encoder figures of the
binding device, the warnings they raise, and the engine's own line about its encoder
cache (see `placement/features.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llm_inventory.engine.lora import LoraFigures
from llm_inventory.engine.mm_budget import MmFigures, startup_line
from llm_inventory.units import GIB

if TYPE_CHECKING:
    from llm_inventory.engine.placement.facts import ModelFacts
    from llm_inventory.engine.placement.fit import Sized


@dataclass
class FeatureFits:
    lora: LoraFigures | None = None
    multimodal: MmFigures | None = None
    loaded_bytes: int = 0  # adapter bytes the engine counts with the weights it loaded
    warnings: list[str] = field(default_factory=list)
    startup: list[str] = field(default_factory=list)

    def with_startup(self, lines: list[str]) -> list[str]:
        """The engine's lines with the feature lines where the engine prints them: during
        profiling, before the pool it sizes from it ("Available KV cache memory")."""
        if not self.startup:
            return lines
        at = next((i for i, line in enumerate(lines)
                   if line.startswith("Available KV cache memory")), 0)
        return lines[:at] + self.startup + lines[at:]


def feature_fits(facts: ModelFacts, sized: Sized) -> FeatureFits:
    from llm_inventory.engine.placement.features import lora_figures, mm_figures

    found = FeatureFits()
    b = sized.binding
    if sized.lora is not None:
        device = sized.lora[b]
        found.lora = lora_figures(facts, device)
        if found.lora is not None and found.lora.in_budget:
            found.loaded_bytes = device
        elif found.lora is not None and device:
            found.warnings.append(
                f"LoRA buffers ({device / GIB:.2f} GiB a device) sit outside the engine's "
                "KV budget (vllm#14450): the device needs that much beyond its memory "
                "fraction")
            held = (sized.weights[b] + device + sized.reserves[b].reserve_bytes
                    + max(0, sized.pools[b]))
            if held > facts.request.device.memory_bytes:
                found.warnings.append("weights, LoRA buffers, reserve and KV pool exceed the "
                                      "device's memory: out of memory once adapters load")
    if facts.mm_rule is not None and b < len(sized.reserves):
        reserve = facts.reserve(sized.shape.tp, sized.shape.pp, sized.shape.ep, 0)
        base = reserve.activation_bytes
        found.multimodal = mm_figures(facts, sized.shape.tp, base)
        if found.multimodal is not None:
            line = startup_line(found.multimodal)
            if line and facts.state and facts.mm_rule.profiles_encoder:
                found.startup.append(line)
    return found
