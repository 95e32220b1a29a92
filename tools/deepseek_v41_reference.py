"""Reference figures for DeepSeek-V4.1 configs, from transformers main's deepseek_v41 classes.

Dev-only, like `tools/reference_counts.py`, whose counting it reuses unchanged: torch and
transformers are never dependencies of the package or its tests.

transformers 5.25.0 (the newest release when these figures were made) has no deepseek_v41
model type; the classes exist on transformers' main branch. This script loads main's two
files into an installed transformers 5.25.0 and then counts exactly as
`reference_counts.py` does (meta device, parameters, one- and three-token forwards for the
cache, a 1,024 → 2,048-token run for the compressed state). The files are not part of this
repository: fetch them yourself, at the commit the figures were made with,

    COMMIT=0a2080b43eb64e6d448186a4f3f0bc9c618f4797
    BASE=https://raw.githubusercontent.com/huggingface/transformers/$COMMIT
    mkdir -p /tmp/deepseek_v41
    for f in configuration_deepseek_v41.py modeling_deepseek_v41.py; do
        curl -fsSL -o /tmp/deepseek_v41/$f $BASE/src/transformers/models/deepseek_v41/$f
    done

then, in a scratch environment (never the project's):

    pip install torch==2.13.0 transformers==5.25.0        # the CPU build of torch
    python tools/deepseek_v41_reference.py --source /tmp/deepseek_v41 \
        tests/data/configs-2026-deepseek-v41 --out tests/data/oracle-2026-deepseek-v41.json
    python tools/deepseek_v41_reference.py --source /tmp/deepseek_v41 \
        --write-defaults tests/data/transformers-defaults deepseek_v41 deepseek_v41_text

How main's files are made to load into 5.25 (the only shims; nothing else is changed):

- The two modules are loaded under their own package name
  (`transformers.models.deepseek_v41`), so their relative imports resolve into the installed
  5.25 package; every name they import exists there. Their model types are registered with
  `AutoConfig`, and `DeepseekV41ForCausalLM` is set on the `transformers` namespace, where
  `reference_counts.model_class` looks for `architectures[0]`.
- 5.25's `cache_utils.get_layer_types_and_kwargs` passes the config only to the cache layers
  it knows (V4's two); main passes it to `shared_compressed_attention` too
  (`DeepseekV41CSACache(config)` reads `config.sliding_window`). The wrapper here adds that
  argument for that layer type alone.
- The engram layers hash token ids with a state bound to the real tokenizer
  (`DeepseekV41NgramHashState`, built from the hub's tokenizer on first forward). No
  tokenizer is loaded here: before a forward, a stub state returns hash ids of the right
  shape (`[batch, tokens, engram layers, (engram_max_ngram_size - 1) × engram_n_heads]`,
  all zero). Parameters never depend on it; the cache does not either (engram keeps no
  per-token state).
- `DeepseekV41SparseMoeBlock` routes with `torch.bincount` and a Python loop over the
  experts that received tokens, which the meta device cannot run (no meta kernel for
  bincount). For the cache forwards its forward returns zeros of its input's shape: the MoE
  keeps no cache and the attention's cache shapes do not depend on its values. Parameters
  are counted from the built modules, before any forward.
- A flat `deepseek_v41_text` file is counted as `DeepseekV41ForCausalLM` built on that text
  config (the composite unwraps its text config in `__init__`; main's later
  `DeepseekV41Config.__post_init__`, commit f026c8315a275221a61e087edc3536f341e55f09, adopts
  a flat file's text keys the same way).

Each entry's `versions` records transformers and torch as `reference_counts.py` does, and
`deepseek_v41_source`: the repository, commit and paths of the two files.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.fx.experimental._config
import transformers
from transformers import AutoConfig, cache_utils
from transformers.utils import logging as hf_logging

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_counts  # noqa: E402 - a sibling dev script

COMMIT = "0a2080b43eb64e6d448186a4f3f0bc9c618f4797"
FOLDER = "src/transformers/models/deepseek_v41"
FILES = ("configuration_deepseek_v41.py", "modeling_deepseek_v41.py")
PACKAGE = "transformers.models.deepseek_v41"
SOURCE = {"repository": "huggingface/transformers", "commit": COMMIT,
          "files": [f"{FOLDER}/{name}" for name in FILES]}


def _load(source: Path, name: str) -> types.ModuleType:
    qualified = f"{PACKAGE}.{name}"
    spec = importlib.util.spec_from_file_location(qualified, source / f"{name}.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(source / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


def _pass_config_to_shared_layers() -> None:
    original = cache_utils.get_layer_types_and_kwargs

    def wrapped(config: Any) -> tuple[list[str], list[dict[str, Any]]]:
        layer_types, per_layer = original(config)
        configs = config.per_layer_config
        for i, layer_type in enumerate(layer_types):
            if layer_type == "shared_compressed_attention" and "config" not in per_layer[i]:
                per_layer[i]["config"] = configs[i]
        return layer_types, per_layer

    cache_utils.get_layer_types_and_kwargs = wrapped


class _StubHashState:
    """Zero hash ids of the shape the engram layers index (no tokenizer needed)."""

    def __init__(self, layers: int, columns: int) -> None:
        self.layers, self.columns = layers, columns

    def __call__(self, input_ids: torch.Tensor, position_ids: torch.Tensor,
                 token_mask: torch.Tensor | None) -> torch.Tensor:
        batch, tokens = input_ids.shape
        return torch.zeros((batch, tokens, self.layers, self.columns), dtype=torch.long,
                           device=input_ids.device)


def install(source: Path) -> types.ModuleType:
    """Load main's configuration and modelling modules into transformers 5.25 and register
    them; returns the modelling module."""
    missing = [name for name in FILES if not (source / name).is_file()]
    if missing:
        raise SystemExit(f"--source {source}: missing {', '.join(missing)} (see the docstring)")
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(source)]
    sys.modules[PACKAGE] = package
    configuration = _load(source, "configuration_deepseek_v41")
    modeling = _load(source, "modeling_deepseek_v41")
    for cls in (configuration.DeepseekV41TextConfig, configuration.DeepseekV41VisionConfig,
                configuration.DeepseekV41Config):
        AutoConfig.register(cls.model_type, cls, exist_ok=True)
    transformers.DeepseekV41ForCausalLM = modeling.DeepseekV41ForCausalLM
    _pass_config_to_shared_layers()

    original = modeling.DeepseekV41TextModel._ensure_hash_state

    def ensure(self: Any, device: torch.device) -> None:
        layout = self.engram_layout
        if layout is not None and layout.layer_ids and self.engram_hash_state is None:
            columns = (layout.max_ngram_size - 1) * layout.n_heads
            self.engram_hash_state = _StubHashState(len(layout.layer_ids), columns)
        original(self, device)

    modeling.DeepseekV41TextModel._ensure_hash_state = ensure

    def routed_zeros(self: Any, hidden_states: torch.Tensor, *args: Any, **kwargs: Any
                     ) -> torch.Tensor:
        return torch.zeros_like(hidden_states)

    # Parameters are counted before any forward; only the cache forwards run this stub.
    modeling.DeepseekV41SparseMoeBlock.forward = routed_zeros
    reference_counts.TEXT_INSIDE["deepseek_v41_text"] = "deepseek_v41"
    return modeling


NOTE = (f"DeepseekV41 classes of transformers main ({SOURCE['repository']} @{COMMIT}) loaded "
        "into transformers 5.25.0 by tools/deepseek_v41_reference.py (shims: the cache's "
        "config argument for shared_compressed_attention layers; a stub engram hash state, "
        "no tokenizer; the MoE block's forward returns zeros in the cache forwards, since "
        "meta tensors have no bincount)")


def write_defaults(folder: Path, model_types: list[str]) -> None:
    """Each class's `to_dict()` with no arguments, as tools/transformers_defaults.py writes."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    folder.mkdir(parents=True, exist_ok=True)
    for model_type in model_types:
        data = CONFIG_MAPPING[model_type]().to_dict()
        (folder / f"{model_type}.json").write_text(json.dumps(data, indent=1))
        print(f"wrote {folder / model_type}.json", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="config.json files or folders of them "
                        "(with --write-defaults: model types)")
    parser.add_argument("--source", required=True, type=Path,
                        help="folder holding main's two deepseek_v41 files")
    parser.add_argument("--out", help="write the JSON list here (default: stdout)")
    parser.add_argument("--write-defaults", metavar="FOLDER",
                        help="write the named classes' defaults to FOLDER instead")
    args = parser.parse_args()
    install(args.source)
    if args.write_defaults:
        write_defaults(Path(args.write_defaults), args.paths)
        return 0
    hf_logging.set_verbosity_error()
    torch.fx.experimental._config.meta_nonzero_assume_all_nonzero = True
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    entries = []
    for path, meta in reference_counts.collect(args.paths):
        print(f"counting {path}", file=sys.stderr)
        meta = {**meta, "notes": [NOTE, *meta.get("notes", [])]}
        entry = reference_counts.count(path, meta)
        entry["versions"]["deepseek_v41_source"] = SOURCE
        entries.append(entry)
    text = json.dumps(entries, indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
