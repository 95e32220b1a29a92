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

`--nested` writes to sub-configs/: classes that only appear inside a composite config (a
vision tower's config, a VLM's text config).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from transformers import CONFIG_MAPPING, __version__

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "transformers-defaults"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="+")
    parser.add_argument("--nested", action="store_true",
                        help="write to sub-configs/ (classes used only inside a composite)")
    args = parser.parse_args()
    folder = OUT / "sub-configs" if args.nested else OUT
    folder.mkdir(parents=True, exist_ok=True)
    for model_type in args.model_types:
        data = CONFIG_MAPPING[model_type]().to_dict()
        (folder / f"{model_type}.json").write_text(json.dumps(data, indent=1))
        print(f"{folder / model_type}.json  (transformers {__version__})")


if __name__ == "__main__":
    main()
