"""Write configuration classes' own defaults into tests/data/transformers-defaults/.

Each file is `json.dumps(CONFIG_MAPPING[model_type]().to_dict(), indent=1)`: what the class
holds when built with no arguments. The importer's class defaults
(llm_inventory/data/hf-defaults/) are checked against these files by
tests/spec/test_hf_defaults.py.

Dev only: it needs `pip install transformers==5.23.0` (configuration classes need no torch);
transformers is never a dependency of the package or of its tests. Run from the repository
root:

    python tools/transformers_defaults.py llama mistral           # top-level model types
    python tools/transformers_defaults.py --nested clip_vision_model pixtral
    python tools/transformers_defaults.py --code configuration_hunyuan.py:HunYuanConfig

`--nested` writes to sub-configs/: classes that only appear inside a composite config (a
vision tower's config, a VLM's text config). `--code FILE:CLASS` reads a checkpoint's own
configuration module (for a model type transformers has no class for; torch may be needed
to import it) and writes `<its model_type>.json`; `--set KEY=JSON` passes a keyword to those
classes, for one whose bare defaults build no model (say so beside the file).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

from transformers import CONFIG_MAPPING, __version__

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "transformers-defaults"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="*")
    parser.add_argument("--nested", action="store_true",
                        help="write to sub-configs/ (classes used only inside a composite)")
    parser.add_argument("--code", action="append", default=[], metavar="FILE:CLASS",
                        help="a checkpoint's configuration module and its class")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                        help="a keyword for the --code classes")
    args = parser.parse_args()
    kwargs = {k: json.loads(v) for k, _, v in (item.partition("=") for item in args.set)}
    folder = OUT / "sub-configs" if args.nested else OUT
    folder.mkdir(parents=True, exist_ok=True)
    found = [(t, CONFIG_MAPPING[t]().to_dict()) for t in args.model_types]
    found += [_from_code(spec, kwargs) for spec in args.code]
    for model_type, data in found:
        (folder / f"{model_type}.json").write_text(json.dumps(data, indent=1))
        print(f"{folder / model_type}.json  (transformers {__version__})")


def _from_code(spec: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(model type, to_dict()) of the class CLASS defined in the module FILE."""
    path, _, name = spec.rpartition(":")
    loader = importlib.util.spec_from_file_location(Path(path).stem, path)
    if loader is None or loader.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    data = getattr(module, name)(**kwargs).to_dict()
    return str(data["model_type"]), data


if __name__ == "__main__":
    main()
