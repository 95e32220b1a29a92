"""Reference figures for model types transformers has no class for, from the checkpoint's own
modelling code, built on PyTorch's meta device.

Dev-only, like tools/reference_counts.py: torch and transformers are not dependencies. The
checkpoints' code targets an older transformers than the reference set's, so run it in its
own environment, never the project's:

    python3 -m venv ckptvenv && . ckptvenv/bin/activate
    pip install torch==2.13.0 transformers==4.46.3          # the CPU build of torch
    python tools/checkpoint_code_counts.py --code CODE_DIR \
        --config configuration_bailing_moe:BailingMoeConfig \
        --model modeling_bailing_moe:BailingMoeForCausalLM \
        --source "github inclusionAI/Ling @<commit> models/" CONFIG.json ... >> out.json

CODE_DIR holds the checkpoint's Python files (they import each other relatively, so they are
loaded as one package). Each config.json is read by the configuration class (`auto_map` and
`quantization_config` dropped) and the model built with eager attention. Figures: unique
parameters (tied weights once), the input embedding, an untied head, and for MoE layers
whose `experts` is a ModuleList: experts per layer, parameters per routed expert, top-k and
active = total - (experts - top_k) x per-expert, summed over MoE layers. The cache is read
from a meta forward of 1 and 3 tokens, as reference_counts.py does.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import transformers

LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def _package(code: Path) -> str:
    """Copy the checkpoint's files into a temporary importable package; its name."""
    root = Path(tempfile.mkdtemp())
    package = root / "checkpoint_code"
    package.mkdir()
    for path in code.glob("*.py"):
        (package / path.name).write_text(path.read_text())
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    return "checkpoint_code"


def _load(package: str, spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"{package}.{module}"), name)


def _experts(model: torch.nn.Module) -> dict[str, tuple[int, int]]:
    """Decoder layer prefix -> (routed experts, parameters per expert) for ModuleList experts."""
    found: dict[str, tuple[int, int]] = {}
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] != "experts" or not isinstance(module, torch.nn.ModuleList):
            continue
        match = LAYER.search(name + ".")
        if match is None or not len(module):
            continue
        per = sum(p.numel() for p in module.parameters()) // len(module)
        found[name[: match.end() - 1]] = (len(module), per)
    return found


def _stub_moe(model: torch.nn.Module) -> None:
    """Routing is data-dependent, which the meta device cannot run; a layer's cache does not
    depend on its MLP, so every MoE block returns zeros instead."""
    for module in model.modules():
        if isinstance(getattr(module, "experts", None), torch.nn.ModuleList):
            module.forward = torch.zeros_like  # type: ignore[method-assign]


def _cache(model: torch.nn.Module) -> dict[str, Any]:
    """Elements per token each layer's K/V cache grows by, from meta forwards of 1 and 3
    tokens with the MoE blocks stubbed."""
    _stub_moe(model)
    sizes = []
    for tokens in (1, 3):
        ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
        out = model(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        legacy = cache.to_legacy_cache() if hasattr(cache, "to_legacy_cache") else cache
        sizes.append([sum(t.numel() for t in layer) for layer in legacy])
    per = [(b - a) // 2 for a, b in zip(*sizes, strict=True)]
    return {"cache_source": "meta forward of 1 and 3 tokens, use_cache=True, MoE blocks "
                            "stubbed",
            "kv_elems_per_token_by_layer": per, "kv_elems_per_token": sum(per),
            "kv_layers_with_kv": sum(1 for p in per if p)}


def count(config_cls: Any, model_cls: Any, path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    for key in ("auto_map", "quantization_config"):
        data.pop(key, None)
    config = config_cls(**data)
    config._attn_implementation = "eager"
    with torch.device("meta"):
        model = model_cls(config).to(torch.bfloat16)
    model.eval()
    total = sum(p.numel() for p in model.parameters())
    embed = model.get_input_embeddings().weight.numel()
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is model.get_input_embeddings().weight
    head_params = 0 if head is None or tied else head.weight.numel()
    entry: dict[str, Any] = {
        "file": path.name, "model_type": data.get("model_type"),
        "architecture": model_cls.__name__, "config_class": config_cls.__name__,
        "total_params": total, "input_embedding_params": embed,
        "output_head_params": head_params, "tied_embeddings": tied,
        "total_params_no_embed": total - embed - head_params,
    }
    experts = _experts(model)
    if experts:
        top_k = getattr(config, "num_experts_per_tok", None) or getattr(config, "moe_topk", None)
        top_k = top_k[0] if isinstance(top_k, list) else top_k
        counts = {e for e, _ in experts.values()}
        per = {p for _, p in experts.values()}
        inactive = sum((e - top_k) * p for e, p in experts.values())
        entry.update({"moe_layers": len(experts), "num_experts": counts.pop(),
                      "experts_per_token": top_k, "params_per_routed_expert": per.pop(),
                      "active_params": total - inactive,
                      "active_params_no_embed": total - inactive - embed - head_params})
    try:
        with torch.no_grad():
            entry.update(_cache(model))
    except Exception as exc:  # noqa: BLE001 - recorded, not hidden
        entry["cache_error"] = f"{type(exc).__name__}: {exc}"
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--code", type=Path, required=True)
    parser.add_argument("--config", required=True, metavar="MODULE:CLASS")
    parser.add_argument("--model", required=True, metavar="MODULE:CLASS")
    parser.add_argument("--source", required=True, help="where the modelling code came from")
    args = parser.parse_args()
    package = _package(args.code)
    config_cls, model_cls = _load(package, args.config), _load(package, args.model)
    versions = {"transformers": transformers.__version__, "torch": torch.__version__}
    out = []
    for path in args.configs:
        entry = count(config_cls, model_cls, path)
        entry.update({"modelling_code": args.source, "versions": versions})
        out.append(entry)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
