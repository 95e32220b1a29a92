"""Write tests/data/transformers-architectures.json: each model class transformers names in
its auto mappings, with the model types it is registered for.

tests/spec/test_hf_registry.py checks every architecture class the importer's registry
lists against it. The names are read from the source of
`transformers/models/auto/modeling_auto.py` (its `*_MAPPING_NAMES` tables), so no torch is
needed. Dev only: `pip install transformers==5.23.0`, then, from the repository root,
`python tools/transformers_architectures.py`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import transformers.models.auto as auto
from transformers import __version__

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "transformers-architectures.json"
ENTRY = re.compile(r'\(\s*"([^"]+)",\s*(\([^)]*\)|"[^"]+")\s*\)')


def main() -> None:
    source = (Path(auto.__file__).parent / "modeling_auto.py").read_text()
    classes: dict[str, set[str]] = {}
    for model_type, names in ENTRY.findall(source):
        for name in re.findall(r'"([^"]+)"', names):
            classes.setdefault(name, set()).add(model_type)
    about = (f"transformers {__version__} src/transformers/models/auto/modeling_auto.py: "
             "every class in its *_MAPPING_NAMES tables, with the model types mapped to it "
             "(tools/transformers_architectures.py)")
    rows = [f"  {json.dumps(name)}: {json.dumps(sorted(types))}"
            for name, types in sorted(classes.items())]
    text = "{\n \"_about\": " + json.dumps(about) + ",\n \"classes\": {\n"
    OUT.write_text(text + ",\n".join(rows) + "\n }\n}\n")
    print(f"{OUT}: {len(classes)} classes")


if __name__ == "__main__":
    main()
