"""Reference parameter and cache figures for real config.json files, from transformers.

Dev-only: torch and transformers are not dependencies of the package or its tests. Run it in a
separate environment, never the project's:

    python3 -m venv refvenv && . refvenv/bin/activate
    pip install torch==2.13.0 transformers==5.24.0      # the CPU build of torch
    python tools/reference_counts.py tests/data/configs-2026 tests/data/configs-2026-more \
        --out tests/data/oracle-2026.json

Each argument is a config.json file or a folder of them (`index.json` and `README.md` skipped;
an `index.json` beside the files gives each file's model name, source and checkpoint figures).
For each config, `quantization_config` is dropped, the config is read by `AutoConfig` (or, for a
`model_type` transformers does not know, by the configuration class of `architectures[0]`, as
vLLM dispatches), and the model is built on the meta device, so no weight is allocated.

Figures: unique parameters (tied weights once; buffers are not parameters), the input embedding,
an untied output head, the total without both; for MoE the routed experts of each MoE layer,
top-k, parameters per routed expert and active = total - (experts - top_k) x per expert, summed
over MoE layers. The cache is read from what transformers allocated: two forwards of 1 and 3
tokens on the meta device with `use_cache=True`; a cache tensor that grows between them holds
per-token state (its growth per token is reported), one that does not is a fixed state per
sequence (its shape and dtype are reported).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.fx.experimental._config
import transformers
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.utils import logging as hf_logging

DROP_KEYS = ("quantization_config",)
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers",
            "mtp_num_layers", "n_mtp_layers", "num_nextn_layers", "num_mtp_modules")
TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "top_k", "moe_k", "num_experts_per_token",
              "experts_per_token", "n_activated_experts", "moe_top_k", "router_top_k",
              "num_activated_experts", "top_k_experts")
ZERO_EXPERT_KEYS = ("zero_expert_num",)
PATTERN_KEYS = ("layer_types", "hybrid_override_pattern", "full_attention_interval",
                "layers_block_type", "attn_layer_indices", "moe_layer_freq",
                "interleave_moe_layer_step", "first_k_dense_replace", "mlp_only_layers",
                "num_kv_shared_layers", "sliding_window", "sliding_window_pattern",
                "compress_ratios", "compress_rates", "attention_k_eq_v", "cla_share_factor",
                "use_cla", "mlp_layer_types")
FALLBACK_CLASSES = ("AutoModelForCausalLM", "AutoModelForImageTextToText",
                    "AutoModelForSeq2SeqLM", "AutoModel")
NON_STATE_TENSORS = ("indexer_position_ids", "_sliding_window_tensor")
STANDARD_CACHE_MODULE = "transformers.cache_utils"
LONG_RUN = (1024, 2048)


def versions() -> dict[str, str]:
    return {"transformers": transformers.__version__, "torch": torch.__version__}


# model_type -> (configuration class, model class, why): types transformers has no class for,
# whose checkpoint is built by a transformers class of the same layout. Marked as stand-ins.
STAND_INS = {
    "minimax_m3": ("MiniMaxM3VLTextConfig", "MiniMaxM3VLForCausalLM",
                   "transformers has no minimax_m3 class; MiniMaxM3VLTextConfig (its docstring "
                   "checkpoint is MiniMaxAI/MiniMax-M3) reads the hub keys moe_layer_freq and "
                   "sparse_attention_config, and MiniMaxM3VLForCausalLM is its text model"),
    "mimo": ("Qwen2Config", "Qwen2ForCausalLM",
             "transformers has no mimo class; the checkpoint's modeling_mimo.py subclasses "
             "Qwen2Model and adds MTP layers, so the main model is built as Qwen2"),
}


def adapt(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Key spellings of remote-code hub files that transformers' class reads under another name."""
    data = dict(raw)
    if data.get("head_dim") is None and isinstance(data.get("attention_head_dim"), int):
        data["head_dim"] = data["attention_head_dim"]
        notes.append(f"head_dim set from attention_head_dim ({data['head_dim']}): the hub file "
                     "spells it so and transformers reads head_dim (None would fail)")
    return data


SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size",
              "num_attention_heads", "num_key_value_heads")


def ignored_flat_keys(raw: dict[str, Any], config: Any) -> list[str]:
    """Top-level shape keys of a flat file that the built text config does not carry."""
    if "text_config" in raw:
        return []
    text = config.get_text_config(decoder=True)
    return [k for k in SHAPE_KEYS if k in raw and getattr(text, k, None) != raw[k]]


def wrap_flat(raw: dict[str, Any], config_cls: Any, ignored: list[str],
              notes: list[str]) -> dict[str, Any]:
    """A flat file for a wrapper class whose text config ignored its keys: pass them as one."""
    text = {k: v for k, v in raw.items() if k not in ("architectures", "model_type")}
    notes.append(f"flat config for the wrapper {config_cls.__name__}, whose text config ignored "
                 f"its keys {ignored}: they were passed as text_config; parts the file does not "
                 "describe (vision) are left out of the figures")
    return {"model_type": raw["model_type"], "architectures": raw.get("architectures"),
            "text_config": text}


def auto_config(data: dict[str, Any]) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "config.json").write_text(json.dumps(data))
        return AutoConfig.from_pretrained(tmp)


# Text model types transformers builds only inside a wrapper (it has no model class of their
# own): a flat file of one is passed as that wrapper's text_config, the rest left out.
TEXT_INSIDE = {"hy_v4_vl_text": "hy_v4_vl", "mistral_large4_text": "mistral_large4",
               "step3p5": "step3p7",
               "glm5_next_text": "glm5_next", "muse_spark_text": "muse_spark",
               "muse_glimmer_text": "muse_glimmer"}


def load_config(raw: dict[str, Any], notes: list[str]) -> tuple[Any, bool]:
    """Read a config dict the way from_pretrained reads config.json; True if text only."""
    model_type = raw.get("model_type")
    if model_type in TEXT_INSIDE:
        wrapper = TEXT_INSIDE[model_type]
        notes.append(f"model_type {model_type!r} has no model class of its own: passed as the "
                     f"text_config of a {wrapper!r} config; its other parts are left out")
        return auto_config({"model_type": wrapper, "text_config": adapt(raw, notes)}), True
    if model_type in STAND_INS:
        config_name, _, why = STAND_INS[model_type]
        notes.append(f"no transformers class: stand-in {config_name}; {why}")
        return getattr(transformers, config_name).from_dict(adapt(raw, notes)), False
    if model_type in CONFIG_MAPPING:
        data = adapt(raw, notes)
        config = auto_config(data)
        subs = getattr(CONFIG_MAPPING[model_type], "sub_configs", {}) or {}
        ignored = ignored_flat_keys(data, config) if "text_config" in subs else []
        if not ignored:
            return config, False
        return auto_config(wrap_flat(data, CONFIG_MAPPING[model_type], ignored, notes)), True
    arch = (raw.get("architectures") or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None or not hasattr(cls, "config_class"):
        raise LookupError(f"no transformers class: model_type {model_type!r} is unknown and "
                          f"architectures[0] {arch!r} is not a transformers class")
    config_cls = cls.config_class
    data = adapt(raw, notes)
    data["model_type"] = config_cls.model_type
    notes.append(f"model_type {model_type!r} has no transformers configuration; dispatched on "
                 f"architectures[0] = {arch} ({config_cls.__name__}), as vLLM does")
    return config_cls.from_dict(data), False


NON_TEXT_PARTS = re.compile(r"vision|visual|multi_modal_projector|audio|vit\b|mm_projector")


def drop_non_text(model: torch.nn.Module, notes: list[str]) -> None:
    """Replace the wrapper's vision/audio parts (defaults the file does not describe)."""
    holder = getattr(model, "model", model)
    for name, child in list(holder.named_children()):
        if NON_TEXT_PARTS.search(name):
            n = sum(p.numel() for p in child.parameters())
            setattr(holder, name, torch.nn.Identity())
            notes.append(f"left out {name} ({n} params of transformers' default sub-config)")


def model_class(config: Any, raw: dict[str, Any], notes: list[str]) -> Any:
    if raw.get("model_type") in STAND_INS:
        return getattr(transformers, STAND_INS[raw["model_type"]][1])
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is not None:
        return cls
    for name in FALLBACK_CLASSES:
        auto = getattr(transformers, name)
        with contextlib.suppress(ValueError, KeyError):
            mapping = auto._model_mapping
            if type(config) in mapping:
                cls = mapping[type(config)]
                notes.append(f"architectures[0] {arch!r} is not a transformers class; "
                             f"built {cls.__name__} ({name})")
                return cls
    for suffix in ("ForConditionalGeneration", "ForCausalLM", "Model"):
        for name in dir(transformers):
            if name.endswith(suffix) and not name.startswith("TF"):
                candidate = getattr(transformers, name, None)
                if getattr(candidate, "config_class", None) is type(config):
                    notes.append(f"architectures[0] {arch!r} is not a transformers class; "
                                 f"built {name} (the class whose config_class it is)")
                    return candidate
    raise LookupError(f"no transformers model class for {type(config).__name__}")


def text_value(raw: dict[str, Any], key: str) -> Any:
    """A key of the config or of its text config (wrappers keep the decoder there)."""
    for part in (raw, raw.get("text_config") or {}, raw.get("llm_config") or {},
                 raw.get("thinker_config", {}).get("text_config") or {}):
        if isinstance(part, dict) and key in part:
            return part[key]
    return None


def pick_dtype(raw: dict[str, Any]) -> torch.dtype:
    for key in ("dtype", "torch_dtype"):
        value = text_value(raw, key)
        if isinstance(value, str) and hasattr(torch, value):
            dtype = getattr(torch, value)
            if isinstance(dtype, torch.dtype):
                return dtype
    return torch.bfloat16


def build(cls: Any, config: Any, dtype: torch.dtype, notes: list[str]) -> Any:
    kwargs: dict[str, Any] = {"dtype": dtype, "experts_implementation": "batched_mm"}
    try:
        with torch.device("meta"):
            return cls._from_config(config, **kwargs)
    except (ValueError, KeyError, TypeError) as exc:
        if "experts" not in str(exc):
            raise
        kwargs.pop("experts_implementation")
        notes.append("built with the default experts implementation (batched_mm refused)")
        with torch.device("meta"):
            return cls._from_config(config, **kwargs)


def unique_params(module: torch.nn.Module, seen: set[int]) -> int:
    total = 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def components(model: torch.nn.Module) -> dict[str, int]:
    """Unique parameters by top-level part (the `model` wrapper expanded one level)."""
    seen: set[int] = set()
    out: dict[str, int] = {}
    for name, child in model.named_children():
        if name == "model" or (name in ("thinker", "talker") and len(list(child.children())) > 1):
            for sub, grandchild in child.named_children():
                n = unique_params(grandchild, seen)
                if n:
                    out[f"{name}.{sub}"] = n
        else:
            n = unique_params(child, seen)
            if n:
                out[name] = n
    direct = sum(p.numel() for p in model.parameters(recurse=False))
    if direct:
        out["(direct)"] = direct
    return out


def embedding_figures(model: Any) -> dict[str, Any]:
    # Omni wrappers hold their decoder in `thinker` and do not expose its embeddings.
    model = getattr(model, "thinker", model)
    emb = None
    # A DFlash drafter (MuseGlimmerAssistantModel) has no embedding: it borrows its target's.
    with contextlib.suppress(NotImplementedError):
        emb = model.get_input_embeddings()
    emb_w = emb.weight if emb is not None else None
    head = None
    with contextlib.suppress(AttributeError, NotImplementedError):
        head = model.get_output_embeddings()
    head_w = getattr(head, "weight", None)
    tied = head_w is not None and emb_w is not None and head_w is emb_w
    out = {
        "input_embedding_params": emb_w.numel() if emb_w is not None else 0,
        "output_head_params": 0 if (tied or head_w is None) else head_w.numel()
        + (head.bias.numel() if getattr(head, "bias", None) is not None else 0),
        "tied_embeddings": tied,
    }
    per_layer = [(n, p.numel()) for n, p in model.named_parameters()
                 if "embed_tokens_per_layer" in n]
    if per_layer:
        out["per_layer_embedding_params"] = sum(n for _, n in per_layer)
    return out


# DBRX numbers its decoder layers `transformer.blocks.{i}`.
LAYER_RE = re.compile(r"(?:^|\.)(?:layers|blocks)\.(\d+)\.")


def is_expert_module(name: str, module: torch.nn.Module) -> bool:
    cls = type(module).__name__
    last = name.rsplit(".", 1)[-1]
    if "shared" in last.lower() or "Shared" in cls:
        return False
    return cls.endswith(("Experts", "ParallelExperts")) or (
        last == "experts" and isinstance(module, torch.nn.ModuleList))


def find_top_k(model: torch.nn.Module, layer_prefix: str, config: Any) -> int | None:
    for name, module in model.named_modules():
        if name.startswith(layer_prefix):
            for attr in ("top_k", "num_experts_per_tok", "topk", "moe_topk"):
                value = getattr(module, attr, None)
                if isinstance(value, int) and value > 0:
                    return value
    text = config.get_text_config(decoder=True)
    for key in TOP_K_KEYS:
        value = getattr(text, key, None)
        if isinstance(value, int) and value > 0:
            return value
        if isinstance(value, list) and value:
            return int(value[0])
    ffn = getattr(text, "ffn_config", None)
    value = getattr(ffn, "moe_top_k", None)
    return value if isinstance(value, int) else None


def moe_figures(model: torch.nn.Module, config: Any, total: int) -> dict[str, Any] | None:
    """Routed experts per MoE layer; active = total - (E - k) x per-expert per MoE layer."""
    text = config.get_text_config(decoder=True)
    zero = next((getattr(text, k) for k in ZERO_EXPERT_KEYS if getattr(text, k, None)), 0)
    layers: dict[str, dict[str, Any]] = {}
    for name, module in model.named_modules():
        if not is_expert_module(name, module):
            continue
        if any(name.startswith(prefix + ".") for prefix in layers):
            continue
        match = LAYER_RE.search(name + ".")
        if match is None:
            continue
        prefix = name[: match.end() - 1]
        params = list(module.parameters())
        shared = 0
        if isinstance(module, torch.nn.ModuleList):
            experts = len(module)
        else:
            # DBRX keeps the count on its fused GLU (`DbrxExperts.mlp.moe_num_experts`).
            experts = int(getattr(module, "num_experts", 0) or getattr(
                module, "num_routed_experts", 0) or getattr(module, "num_local_experts", 0)
                or getattr(getattr(module, "mlp", None), "moe_num_experts", 0)
                or min(p.shape[0] for p in params))
        if isinstance(module, torch.nn.ModuleList):
            per_expert = sum(p.numel() for p in params) // experts
        else:
            per_expert = 0
            for p in params:
                if p.dim() == 1 and p.shape[0] not in (experts, experts + zero):
                    # One vector every expert's output passes through (MuseSparkExperts'
                    # post_expert_norm): always active, no expert's own.
                    shared += p.numel()
                    continue
                rows = p.shape[0] if p.shape[0] in (experts, experts + zero) else experts
                per_expert += p.numel() // rows
        info = layers.setdefault(prefix, {"experts": experts, "per_expert": 0,
                                          "params": 0, "shared": 0, "path": name})
        info["per_expert"] += per_expert
        info["shared"] += shared
        info["params"] += sum(p.numel() for p in params)
    if not layers:
        return None
    first = next(iter(layers))
    top_k = find_top_k(model, first + ".", config)
    experts = {v["experts"] for v in layers.values()}
    per = {v["per_expert"] for v in layers.values()}
    inactive = None if top_k is None else sum(
        (v["experts"] - top_k) * v["per_expert"] for v in layers.values())
    out: dict[str, Any] = {
        "moe_layers": len(layers),
        "num_experts": experts.pop() if len(experts) == 1 else sorted(experts),
        "experts_per_token": top_k,
        "params_per_routed_expert": per.pop() if len(per) == 1 else sorted(per),
        "routed_expert_params": sum(v["params"] for v in layers.values()),
        "experts_module": layers[first]["path"],
        "active_params": None if inactive is None else total - inactive,
    }
    phantom = sum(v["params"] - v["shared"] - v["experts"] * v["per_expert"]
                  for v in layers.values())
    if zero and inactive is not None:
        every = sum(v["experts"] * v["per_expert"] for v in layers.values())
        out["zero_computation_experts"] = zero
        out["active_params_max"] = total - phantom - inactive
        out["active_params_min"] = total - phantom - every
        out["active_params"] = None
    if phantom:
        # e.g. LongCat-Flash: gate_up_proj has rows for the zero-computation experts too.
        out["phantom_expert_params"] = phantom
        out["total_params_without_phantom_experts"] = total - phantom
    return out


def stub_experts(model: torch.nn.Module) -> None:
    """Make routed-expert modules return zeros of the input's shape (meta forward only)."""
    def zeros(hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return torch.zeros_like(hidden_states)
    for name, module in model.named_modules():
        if is_expert_module(name, module):
            module.forward = zeros


def cache_layers(cache: Any) -> dict[str, list[Any]]:
    if cache is None:
        return {}
    if hasattr(cache, "self_attention_cache"):
        return {"self_attention": list(cache.self_attention_cache.layers),
                "cross_attention": list(cache.cross_attention_cache.layers)}
    layers = list(getattr(cache, "layers", []))
    # Some caches keep per-layer state beside `layers` (MiniMax's `linear_cache` list).
    for attr, value in vars(cache).items():
        if attr != "layers" and isinstance(value, list) and any(map(torch.is_tensor, value)):
            for i, item in enumerate(value):
                if i == len(layers):
                    layers.append(LayerView(None, {}))
                if torch.is_tensor(item):
                    layers[i] = LayerView(layers[i], {f"cache.{attr}": item})
    return {"decoder": layers}


class NoCacheLayer:
    """Stands for a layer index the cache's `layers` list does not reach."""


class LayerView:
    """A cache layer plus tensors its cache keeps for it elsewhere."""

    def __init__(self, layer: Any, extra: dict[str, torch.Tensor]) -> None:
        if isinstance(layer, LayerView):
            self.__dict__.update(vars(layer))
        elif layer is not None:
            self.__dict__.update(vars(layer))
            self.kind = type(layer)
        else:
            self.kind = NoCacheLayer
        self.__dict__.update(extra)


def kind(layer: Any) -> type:
    return layer.kind if isinstance(layer, LayerView) else type(layer)


def layer_tensors(layer: Any) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Every tensor a cache layer holds, once each, and aliases (`values` that is `keys`)."""
    out: dict[str, torch.Tensor] = {}
    for key, value in vars(layer).items():
        if key in NON_STATE_TENSORS or key == "kind":
            continue
        items = value.items() if isinstance(value, dict) else (
            enumerate(value) if isinstance(value, (list, tuple)) else None)
        if torch.is_tensor(value):
            out[key] = value
        elif items is not None:
            out.update({f"{key}[{idx}]": item for idx, item in items if torch.is_tensor(item)})
    seen: dict[int, str] = {}
    aliases: dict[str, str] = {}
    for key, tensor in list(out.items()):
        if id(tensor) in seen:
            aliases[key] = seen[id(tensor)]
            del out[key]
        else:
            seen[id(tensor)] = key
    return out, aliases


def forward_cache(model: Any, tokens: int, enc_tokens: int | None = None,
                  explicit: bool = False, decoder: bool = False) -> Any:
    """The cache after one forward; `explicit` passes DynamicCache(config), as generate does;
    `decoder` runs the wrapper's text decoder alone."""
    runner = getattr(model, "thinker", model)
    if decoder:
        runner = runner.get_decoder()
    ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
    kwargs: dict[str, Any] = {"use_cache": True}
    config = runner.config
    if hasattr(config, "target_layer_ids") and hasattr(config, "block_size"):
        # A DFlash drafter: `tokens` context positions of the target's hidden states at
        # target_layer_ids, and one block of block_size noise embeddings. The block is the
        # same in both forwards, so the growth between them is per context token.
        dtype = next(runner.parameters()).dtype
        hidden = config.hidden_size
        kwargs["noise_embeds"] = torch.zeros((1, config.block_size, hidden), dtype=dtype,
                                             device="meta")
        kwargs["context_hidden_states"] = torch.zeros(
            (1, tokens, len(config.target_layer_ids) * hidden), dtype=dtype, device="meta")
    elif enc_tokens is not None:
        kwargs["input_ids"] = torch.zeros((1, enc_tokens), dtype=torch.long, device="meta")
        kwargs["decoder_input_ids"] = ids
    else:
        kwargs["input_ids"] = ids
    if explicit:
        kwargs["past_key_values"] = transformers.DynamicCache(config=runner.config)
    with torch.no_grad():
        out = runner(**kwargs)
    return getattr(out, "past_key_values", None)


def growth(first: list[Any], second: list[Any], tokens: int) -> list[dict[str, Any]]:
    """Per layer: elements added per token between two caches `tokens` apart."""
    rows = []
    for i, (layer, later) in enumerate(zip(first, second, strict=True)):
        (a, aliases), (b, _) = layer_tensors(layer), layer_tensors(later)
        row: dict[str, Any] = {"layer": i, "cache_layer": kind(layer).__name__}
        window = getattr(layer, "sliding_window", None)
        if isinstance(window, int):
            row["sliding_window"] = window
        per_token: dict[str, Any] = {}
        fixed: dict[str, Any] = {}
        for key, tensor in a.items():
            grow = b[key].numel() - tensor.numel() if key in b else 0
            if grow:
                per_token[key] = grow // tokens if grow % tokens == 0 else grow / tokens
            else:
                fixed[key] = {"shape": list(tensor.shape), "elems": tensor.numel()}
        row["per_token"] = per_token
        row["fixed"] = fixed
        row["dtypes"] = {k: str(t.dtype).replace("torch.", "") for k, t in a.items()}
        if aliases:
            row["aliases"] = aliases
        rows.append(row)
    return rows


def describe_cache(model: Any, encoder_decoder: bool, explicit: bool,
                   decoder: bool = False) -> dict[str, Any]:
    """Per-layer cache tensors: growth per token, or a fixed shape per sequence.

    Short run: 1 and 3 tokens. Cache layers of a model's own classes (not cache_utils) are
    measured again between LONG_RUN tokens, where compressed or block-wise state shows.
    """
    if encoder_decoder:
        one = forward_cache(model, 1, 1)
        caches = {"self_attention": (one, forward_cache(model, 3, 1)),
                  "cross_attention": (one, forward_cache(model, 1, 3))}
        first = cache_layers(one)
        if not first:
            return {"cache_class": type(one).__name__ if one is not None else None}
        stacks = {name: growth(cache_layers(a)[name], cache_layers(b)[name], 2)
                  for name, (a, b) in caches.items()}
        return {"cache_class": type(one).__name__, "stacks": stacks}
    one = forward_cache(model, 1, explicit=explicit, decoder=decoder)
    first = cache_layers(one)
    if not first:
        return {"cache_class": type(one).__name__ if one is not None else None}
    rows = growth(first["decoder"], cache_layers(forward_cache(
        model, 3, explicit=explicit, decoder=decoder))["decoder"], 2)
    result: dict[str, Any] = {"cache_class": type(one).__name__, "stacks": {"decoder": rows}}
    custom = sorted({kind(layer).__name__ for layer in first["decoder"]
                     if kind(layer).__module__ != STANDARD_CACHE_MODULE})
    if custom:
        short, long = (cache_layers(forward_cache(
            model, n, explicit=explicit, decoder=decoder))["decoder"] for n in LONG_RUN)
        result["long_run"] = {"tokens": list(LONG_RUN), "custom_cache_layers": custom,
                              "rows": growth(short, long, LONG_RUN[1] - LONG_RUN[0])}
    return result


def summarize_cache(desc: dict[str, Any]) -> dict[str, Any]:
    """Fold per-layer rows into the reference.json fields (int, or {elems: layers})."""
    out: dict[str, Any] = {"cache_class": desc.get("cache_class")}
    stacks = desc.get("stacks")
    if not stacks:
        out["kv_elems_per_token_per_layer"] = None
        return out
    rows = stacks.get("decoder") or stacks["self_attention"]
    kv = [r["per_token"].get("keys", 0) + r["per_token"].get("values", 0) for r in rows]
    counts = Counter(kv)
    out["kv_elems_per_token_per_layer"] = (
        kv[0] if len(counts) == 1 else {str(k): v for k, v in sorted(counts.items())})
    out["kv_elems_per_token"] = sum(kv)
    out["kv_layers_with_kv"] = sum(1 for x in kv if x)
    dtypes = {r["dtypes"][k] for r in rows for k in ("keys", "values") if k in r["dtypes"]}
    if dtypes:
        out["kv_dtype"] = sorted(dtypes)[0] if len(dtypes) == 1 else sorted(dtypes)
    if len(counts) > 1:
        out["kv_elems_per_token_by_layer"] = kv
    other = Counter()
    for r in rows:
        for key, n in r["per_token"].items():
            if key not in ("keys", "values"):
                other[(key, n, r["dtypes"][key])] += 1
    if other:
        out["other_per_token_state"] = [
            {"tensor": k, "elems_per_token": n, "dtype": d, "layers": c}
            for (k, n, d), c in sorted(other.items())]
    fixed = Counter()
    for r in rows:
        for key, f in r["fixed"].items():
            if f["elems"]:
                fixed[(key, tuple(f["shape"]), r["dtypes"][key])] += 1
    if fixed:
        out["fixed_state_per_sequence"] = [
            {"tensor": k, "shape": list(s), "dtype": d, "layers": c}
            for (k, s, d), c in sorted(fixed.items())]
    windows = Counter(r["sliding_window"] for r in rows if "sliding_window" in r)
    if windows:
        out["sliding_window_layers"] = sum(windows.values())
        out["sliding_window"] = sorted(windows)
    kinds = Counter(r["cache_layer"] for r in rows)
    out["cache_layer_kinds"] = dict(sorted(kinds.items()))
    empty = [r["layer"] for r in rows if not r["per_token"] and not any(
        f["elems"] for f in r["fixed"].values())]
    if empty:
        out["layers_storing_nothing"] = empty
    alias_layers = sum(1 for r in rows if r.get("aliases"))
    if alias_layers:
        out["kv_one_tensor_layers"] = alias_layers
    long = desc.get("long_run")
    if long:
        grown = Counter()
        bounded = Counter()
        for r in long["rows"]:
            for key, n in r["per_token"].items():
                grown[(r["cache_layer"], key, n, r["dtypes"][key])] += 1
            for key, f in r["fixed"].items():
                bounded[(r["cache_layer"], key, tuple(f["shape"]), r["dtypes"][key])] += 1
        out["long_run"] = {
            "tokens": long["tokens"], "custom_cache_layers": long["custom_cache_layers"],
            "per_token": [{"cache_layer": c, "tensor": k, "elems_per_token": n, "dtype": d,
                           "layers": m} for (c, k, n, d), m in sorted(grown.items())],
            "not_growing": [{"cache_layer": c, "tensor": k, "shape_at_first": list(sh),
                             "dtype": d, "layers": m}
                            for (c, k, sh, d), m in sorted(bounded.items())]}
    if "cross_attention" in stacks:
        cross = [r["per_token"].get("keys", 0) + r["per_token"].get("values", 0)
                 for r in stacks["cross_attention"]]
        out["cross_kv_elems_per_encoder_token_per_layer"] = (
            cross[0] if len(set(cross)) == 1 else cross)
    return out


def config_facts(raw: dict[str, Any], config: Any) -> dict[str, Any]:
    text = config.get_text_config(decoder=True)
    out: dict[str, Any] = {}
    for key in PATTERN_KEYS:
        value = getattr(text, key, None)
        if value is not None:
            out[key] = value
    mtp = {k: text_value(raw, k) for k in MTP_KEYS if text_value(raw, k)}
    if mtp:
        out["mtp_layers_in_config"] = mtp
    return out


def count(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    raw = json.loads(path.read_text())
    notes: list[str] = []
    dropped = [k for k in DROP_KEYS if k in raw]
    for k in dropped:
        raw.pop(k)
    if dropped:
        notes.append(f"dropped before instantiation: {dropped} (counts are unquantized "
                     "logical params)")
    entry: dict[str, Any] = {"file": path.name, "model": meta.get("model"),
                             "model_type": raw.get("model_type"),
                             "architectures": raw.get("architectures")}
    config, text_only = load_config(raw, notes)
    cls = model_class(config, raw, notes)
    dtype = pick_dtype(raw)
    model = build(cls, config, dtype, notes)
    if text_only:
        drop_non_text(model, notes)
    total = sum(p.numel() for p in model.parameters())
    entry["architecture"] = cls.__name__
    entry["config_class"] = type(config).__name__
    entry["build_dtype"] = str(dtype).replace("torch.", "")
    entry["total_params"] = total
    entry.update(embedding_figures(model))
    entry["total_params_no_embed"] = (total - entry["input_embedding_params"]
                                      - entry["output_head_params"])
    entry["components"] = components(model)
    mtp_built = sum(p.numel() for n, p in model.named_parameters()
                    if re.search(r"(^|\.)(mtp|nextn)", n))
    entry["mtp_params_built"] = mtp_built
    moe = moe_figures(model, config, total)
    if moe:
        entry.update(moe)
        if moe.get("active_params") is not None:
            entry["active_params_no_embed"] = (
                moe["active_params"] - entry["input_embedding_params"]
                - entry["output_head_params"])
    entry.update(config_facts(raw, config))
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    errors = []
    attempts = [(False, False, False), (True, False, False), (False, True, False),
                (True, True, False), (False, False, True), (True, True, True)]
    for explicit, stub, decoder in attempts:
        if stub:
            stub_experts(model)
        try:
            desc = describe_cache(model, encoder_decoder, explicit, decoder)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, not hidden
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            continue
        entry["cache_source"] = "meta forward of 1 and 3 tokens, use_cache=True" + (
            ", past_key_values=DynamicCache(config=model.config) passed as generate() does"
            if explicit else "") + (", routed experts stubbed" if stub else "") + (
            ", text decoder (get_decoder()) run alone" if decoder else "")
        if decoder:
            notes.append(f"the wrapper's meta forward failed ({errors[0]}); the cache was read "
                         "from its text decoder (get_decoder()) run alone")
        elif explicit or stub:
            notes.append(f"the plain meta forward failed ({errors[0]}); " + (
                "the cache was passed explicitly; " if explicit else "") + (
                "routed-expert forwards were replaced by a zero stub (routing is data-dependent "
                "on the meta device; the cache does not depend on it)" if stub else ""))
        entry.update(summarize_cache(desc))
        break
    else:
        entry["cache_source"] = None
        entry["cache_error"] = errors
    if entry.get("mtp_layers_in_config") and not mtp_built:
        entry["mtp_note"] = ("transformers does not build the multi-token-prediction layers the "
                             "config names; every total here leaves them out (checkpoints hold "
                             "them)")
    entry["versions"] = versions()
    entry["notes"] = notes + list(meta.get("notes", []))
    for key in ("source", "config_kind", "confidence", "doubts", "checkpoint"):
        if key in meta:
            entry[key] = meta[key]
    return entry


def write_defaults(folder: Path, model_types: list[str]) -> None:
    """Write each configuration class's own defaults (XConfig().to_dict()) as <type>.json."""
    folder.mkdir(parents=True, exist_ok=True)
    for model_type in model_types:
        config = CONFIG_MAPPING[model_type]()
        cls = model_class(config, {}, [])
        data = config.to_dict()
        data["architectures"] = [cls.__name__]
        data.pop("transformers_version", None)
        (folder / f"{model_type}.json").write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {folder / model_type}.json ({cls.__name__})", file=sys.stderr)


def collect(args: list[str]) -> list[tuple[Path, dict[str, Any]]]:
    files: list[tuple[Path, dict[str, Any]]] = []
    for arg in args:
        path = Path(arg)
        paths = sorted(p for p in path.glob("*.json") if p.name != "index.json"
                       and isinstance(json.loads(p.read_text()), dict)) \
            if path.is_dir() else [path]
        index_path = (path if path.is_dir() else path.parent) / "index.json"
        index = {}
        if index_path.exists():
            index = {e["file"]: e for e in json.loads(index_path.read_text())}
        files += [(p, index.get(p.name, {})) for p in paths]
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="config.json files or folders of them")
    parser.add_argument("--out", help="write the JSON list here (default: stdout)")
    parser.add_argument("--only", help="regex on file names to count")
    parser.add_argument("--write-defaults", metavar="FOLDER",
                        help="instead of counting, write the defaults of the configuration "
                        "classes named by model_type in PATHS to FOLDER")
    args = parser.parse_args()
    if args.write_defaults:
        write_defaults(Path(args.write_defaults), args.paths)
        return 0
    hf_logging.set_verbosity_error()
    # Routing picks experts by data; on the meta device nonzero() may assume every element is
    # non-zero (all experts run), which leaves cache shapes unchanged.
    torch.fx.experimental._config.meta_nonzero_assume_all_nonzero = True
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    entries = []
    for path, meta in collect(args.paths):
        if args.only and not re.search(args.only, path.name):
            continue
        print(f"counting {path}", file=sys.stderr)
        try:
            entries.append(count(path, meta))
        except Exception as exc:  # noqa: BLE001 - a config transformers cannot build is data
            traceback.print_exc(limit=-2, file=sys.stderr)
            entries.append({"file": path.name, "model": meta.get("model"),
                            "model_type": json.loads(path.read_text()).get("model_type"),
                            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
                            "versions": versions(), "notes": list(meta.get("notes", [])),
                            **{k: meta[k] for k in ("source", "confidence", "checkpoint")
                               if k in meta}})
    text = json.dumps(entries, indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
