"""modelopt MIXED_PRECISION: a per-module table of how each quantized weight is stored.

NVIDIA's FP4 checkpoints (Qwen3.6, MiniMax-M3, Nemotron) keep routed experts in NVFP4 and
other projections in FP8 or unquantized. TensorRT Model Optimizer writes the table as
`quantized_layers` (`process_layer_quant_config`, modelopt/torch/export/quant_utils.py):
module name → `{"quant_algo": ..., "group_size": ...}`, in config.json's
`quantization_config` or in hf_quant_config.json's `quantization`. A module the table does
not name is stored unquantized, and `exclude_modules` / `ignore` win over the table (vLLM
`ModelOptMixedPrecisionConfig.get_quant_method`, vllm/model_executor/layers/quantization/
modelopt.py). Files that carry only `config_groups` list each group's modules as its
`targets` with the group's `weights` scheme.

Storage per algorithm (each format's loader):
- NVFP4, W4A16_NVFP4: 4-bit values, one FP8 (E4M3) scale per `group_size` (16) inputs.
- FP8: 8-bit values, one fp32 scale per tensor; FP8_PER_CHANNEL(_PER_TOKEN): one per row;
  FP8_PB_WO: one per 128 × 128 block.
- MXFP8: 8-bit values, one 8-bit exponent scale per 32 inputs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from llm_inventory import bounds
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Quantization

# How a module name in the table maps to the names tensors carry here: composite prefixes
# dropped, one expert standing for all, each architecture's spellings of the same module.
_PREFIXES = (("model.language_model.", "model."), ("language_model.model.", "model."),
             ("backbone.layers.", "model.layers."), ("transformer.h.", "model.layers."))
_SPELLINGS = ((".block_sparse_moe.", ".mlp."), (".feed_forward.", ".mlp."),
              (".shared_expert.", ".shared_experts."), (".self_attention.", ".self_attn."),
              (".mlp.router.", ".mlp.gate."))
_EXPERT = re.compile(r"\.experts\.\d+\.")
# Mixtral-style expert projections (w1 gate, w3 up, w2 down).
_EXPERT_W = {".experts.w1": ".experts.gate_proj", ".experts.w3": ".experts.up_proj",
             ".experts.w2": ".experts.down_proj"}
ALGORITHMS = ("NVFP4", "W4A16_NVFP4", "FP8", "FP8_PER_CHANNEL", "FP8_PER_CHANNEL_PER_TOKEN",
              "FP8_PB_WO", "MXFP8", "UNQUANTIZED")
# A table names each quantized module once, experts one by one: far more rows than tensors.
_RAW_ROWS = bounds.LIST.limit * 16


def module_name(name: str) -> str:
    """A table's module name as tensors are named here (experts folded into one)."""
    return _spelled(_EXPERT.sub(".experts.", name))


@lru_cache(maxsize=4096)
def _spelled(name: str) -> str:
    for old, new in _PREFIXES:
        if name.startswith(old):
            name = new + name[len(old):]
    for old, new in _SPELLINGS:
        name = name.replace(old, new)
    for old, new in _EXPERT_W.items():
        if name.endswith(old):
            name = name[: -len(old)] + new
    return name


def _scheme(algo: str, group: Any, where: str, label: str, ignore: list[str]
            ) -> Quantization | None:
    if algo in ("NVFP4", "W4A16_NVFP4"):
        size = group if isinstance(group, int) and not isinstance(group, bool) and group > 0 \
            else 16
        return Quantization(method="nvfp4", bits=4, group_size=size, scale_bits=8,
                            ignore=ignore)
    if algo == "FP8":
        return Quantization(method="fp8 (modelopt)", bits=8, scale_bits=32, ignore=ignore)
    if algo in ("FP8_PER_CHANNEL", "FP8_PER_CHANNEL_PER_TOKEN"):
        return Quantization(method="fp8 (modelopt, per-channel)", bits=8, per_channel=True,
                            scale_bits=32, ignore=ignore)
    if algo == "FP8_PB_WO":
        return Quantization(method="fp8 (modelopt, block-scaled)", bits=8, block=(128, 128),
                            scale_bits=32, ignore=ignore)
    if algo == "MXFP8":
        return Quantization(method="mxfp8", bits=8, group_size=32, scale_bits=8,
                            ignore=ignore)
    if algo == "UNQUANTIZED":
        return None
    raise InputError(f"{label}: quantization_config.{where}.quant_algo",
                     f"unsupported {algo!r} in a MIXED_PRECISION table; supported: "
                     f"{', '.join(ALGORITHMS)}")


def _table(q: dict[str, Any], label: str) -> dict[str, Any] | None:
    layers = q.get("quantized_layers")
    if layers is None and isinstance(q.get("quantization"), dict):
        layers = q["quantization"].get("quantized_layers")  # hf_quant_config.json's shape
    if layers is not None and not isinstance(layers, dict):
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         "must map module names to {quant_algo, group_size}")
    return layers


def _from_groups(q: dict[str, Any], label: str) -> dict[str, dict[str, Any]]:
    """`config_groups` as a table: each target module with its group's weights scheme."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         "a MIXED_PRECISION config needs a quantized_layers table (or "
                         "config_groups listing each module as a target)")
    table: dict[str, dict[str, Any]] = {}
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, dict) else None
        targets = group.get("targets") if isinstance(group, dict) else None
        if not isinstance(weights, dict) or not isinstance(targets, list):
            raise InputError(f"{label}: quantization_config.config_groups.{name}",
                             "needs a weights scheme and a list of targets")
        bits = weights.get("num_bits")
        algo = ("NVFP4" if bits == 4 and weights.get("type") == "float" else
                "FP8" if bits == 8 and weights.get("type") == "float" else None)
        if algo is None:
            raise InputError(f"{label}: quantization_config.config_groups.{name}.weights",
                             f"{bits}-bit {weights.get('type')!r} is not a modelopt format; "
                             "supported: 4-bit float (NVFP4), 8-bit float (FP8)")
        for target in targets:
            if isinstance(target, str):
                table[target] = {"quant_algo": algo, "group_size": weights.get("group_size")}
    return table


def mixed_precision(q: dict[str, Any], label: str, ignore: list[str]) -> Quantization:
    """The per-module schemes of a modelopt MIXED_PRECISION config."""
    raw = _table(q, label)
    if raw is None:
        raw = _from_groups(q, label)
    if not raw:
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         "is empty: a MIXED_PRECISION config names its quantized modules")
    if len(raw) > _RAW_ROWS:
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         f"has {len(raw):,} entries; at most {_RAW_ROWS:,} are read")
    exclude = q.get("quantization", {}).get("exclude_modules") if isinstance(
        q.get("quantization"), dict) else None
    ignore = ignore + [p for p in exclude or [] if isinstance(p, str)]
    table: dict[str, Quantization] = {}
    counts: dict[str, int] = {}
    schemes: dict[tuple[str, Any], Quantization | None] = {}  # one model per distinct scheme
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            raise InputError(f"{label}: quantization_config.quantized_layers.{name}",
                             "must be a mapping with quant_algo")
        algo = str(entry.get("quant_algo", "")).upper()
        group = entry.get("group_size")
        key = (algo, group if isinstance(group, int) else None)
        if key not in schemes:
            schemes[key] = _scheme(algo, group, f"quantized_layers.{name}", label, [])
        scheme = schemes[key]
        if scheme is None:
            continue
        module = module_name(str(name))
        if module in table and table[module] is not scheme and table[module] != scheme:
            raise InputError(f"{label}: quantization_config.quantized_layers.{name}",
                             f"stores {algo} where another expert of {module} differs; "
                             "one scheme per expert module is supported")
        table[module] = scheme
        counts[scheme.method] = counts.get(scheme.method, 0) + 1
    if not table:
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         "quantizes no module (every entry is UNQUANTIZED)")
    if len(table) > bounds.LIST.limit:
        raise InputError(f"{label}: quantization_config.quantized_layers",
                         f"names {len(table):,} modules; at most {bounds.LIST.limit:,}")
    # The headline scheme: the narrowest (the one packed integer tensors hold, which the
    # checkpoint reader unpacks by its bits), then the most used.
    main = min(table.values(), key=lambda s: (s.bits, -counts[s.method]))
    methods = sorted(counts, key=lambda m: -counts[m])
    return main.model_copy(update={
        "method": f"modelopt mixed ({', '.join(methods)})", "ignore": ignore,
        "per_module": table})
