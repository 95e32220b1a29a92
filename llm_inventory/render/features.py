"""Lines about a plan's serving features: LoRA adapter buffers and the encoder budget."""

from __future__ import annotations

from llm_inventory.engine.placement import DeviceFit
from llm_inventory.units import UnitSystem, format_bytes


def feature_lines(d: DeviceFit, units: UnitSystem) -> list[str]:
    """One line per feature of the best plan's binding device."""
    lines = []
    if d.lora is not None:
        lo = d.lora
        rank = f"rank {lo.max_lora_rank}" if lo.max_lora_rank else "adapter files"
        where = "inside the KV budget" if lo.in_budget else "outside the KV budget"
        text = (f"LoRA: {lo.max_loras} slot{'s' if lo.max_loras != 1 else ''} × {rank} "
                f"({lo.lora_dtype}, {len(lo.modules)} modules): "
                f"{format_bytes(lo.device_bytes, units)} a device, {where}")
        if lo.host_bytes:
            text += f"; host ≤ {format_bytes(lo.host_bytes, units)}"
        if lo.uncounted:
            text += f"; no slots counted for {', '.join(lo.uncounted)}"
        lines.append(text)
    if d.multimodal is not None:
        mm = d.multimodal
        if mm.fraction_factor != 1.0:
            lines.append(f"vision encoder: the default memory fraction scaled by "
                         f"{mm.fraction_factor:.3f} for the tower")
        else:
            lines.append(
                f"vision encoder: {mm.tokens_per_item:,} tokens an image, cache of "
                f"{mm.encoder_budget_tokens:,} tokens ({format_bytes(mm.cache_bytes, units)}), "
                f"profiled with {mm.profiled_items:,} image{'s' if mm.profiled_items != 1 else ''}"
                f": {format_bytes(mm.profile_bytes, units)} in the reserve")
    return lines
