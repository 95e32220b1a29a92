"""How transformers counts a T5 whose config says `tie_word_embeddings: false` (T5 v1.1,
FLAN-T5), built from the config and loaded from a checkpoint that stores its own head.

Dev-only, like reference_counts.py (torch and transformers are not dependencies):

    python tools/t5_untied_head.py CONFIG.json

T5Config's `__post_init__` forces `tie_word_embeddings` to True, so a model built from the
config ties `lm_head` to `shared`. A checkpoint saved untied holds both tensors; the script
writes one such checkpoint (the config's shapes scaled down to d_model 8 so it is small; the
head's extra parameters scale as vocab × d_model either way), loads it with
`from_pretrained` and reports whether the loaded head is still tied and both counts.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file
from transformers import T5Config, T5ForConditionalGeneration


def counts(raw: dict[str, object]) -> dict[str, object]:
    small = {**raw, "d_model": 8, "d_ff": 16, "d_kv": 4, "num_heads": 2}
    config = T5Config(**{k: v for k, v in small.items() if k != "architectures"})
    with torch.device("meta"):
        built = T5ForConditionalGeneration(config)
    built_total = sum(p.numel() for p in built.parameters())
    model = T5ForConditionalGeneration(config)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["lm_head.weight"] = state["shared.weight"] + 1.0  # a head of its own
    with tempfile.TemporaryDirectory() as tmp:
        save_file(state, str(Path(tmp, "model.safetensors")))
        Path(tmp, "config.json").write_text(json.dumps(small))
        loaded = T5ForConditionalGeneration.from_pretrained(tmp)
    loaded_total = sum(p.numel() for p in loaded.parameters())
    return {
        "config_tie_word_embeddings": raw.get("tie_word_embeddings"),
        "built_config_tie_word_embeddings": built.config.tie_word_embeddings,
        "built_total_at_d_model_8": built_total,
        "loaded_total_at_d_model_8": loaded_total,
        "loaded_head_tied": loaded.lm_head.weight is loaded.shared.weight,
        "head_params_at_d_model_8": int(small["vocab_size"]) * 8,  # type: ignore[call-overload]
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
    }


if __name__ == "__main__":
    print(json.dumps(counts(json.loads(Path(sys.argv[1]).read_text())), indent=1))
