"""Count the parameters transformers builds for config.json files: the reference a new
model type's test compares against.

Each config is read by its configuration class (`CONFIG_MAPPING[model_type].from_dict`,
`quantization_config` dropped: the count is of the unquantized model) and instantiated
through the class named in `architectures[0]` on PyTorch's meta device, so no memory is
allocated and no weights are read. The total counts every parameter once (a tied output
head is the input embedding). The output is JSON: the versions used, then each file's
total, to copy with that provenance into the test data (tests/data/oracle-totals.json and
the folders' READMEs say how each set was made).

Dev only: it needs torch and transformers (`pip install torch transformers`); neither is a
dependency of the package or of its tests. From the repository root:

    python dev/reference_counts.py tests/data/configs/google--gemma-2-2b-it.json
    python dev/reference_counts.py tests/data/transformers-defaults/mistral.json \
        --architecture MistralForCausalLM
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import CONFIG_MAPPING


def count(data: dict[str, Any], architecture: str | None = None) -> int:
    """Parameters of the model `architectures[0]` (or `architecture`) builds from this
    config."""
    data = {k: v for k, v in data.items() if k != "quantization_config"}
    config = CONFIG_MAPPING[data["model_type"]].from_dict(data)
    model_class = getattr(transformers, architecture or data["architectures"][0])
    with torch.device("meta"):
        model = model_class(config)
    return sum(p.numel() for p in model.parameters())  # shared (tied) tensors once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--architecture", help="the class to build, for files that name "
                        "none (a class's own defaults: `architectures` is null)")
    args = parser.parse_args()
    totals = {str(path): count(json.loads(path.read_text()), args.architecture)
              for path in args.configs}
    print(json.dumps({
        "_about": f"total parameters, transformers {transformers.__version__} on torch "
                  f"{torch.__version__}'s meta device (dev/reference_counts.py), "
                  "quantization_config dropped, tied weights once, through architectures[0]",
        "totals": totals,
    }, indent=1))


if __name__ == "__main__":
    main()
