"""ik_llama.cpp (ikawrakow/ik_llama.cpp), the llama.cpp fork with its own MLA cache.

Its KV cache is sized as in older llama.cpp (`llama_kv_cache_init`, src/llama.cpp: one cache
for every layer, padded to 256 cells with flash attention, 32 without) and prints the older
lines; MLA layers keep the latent alone (`c^KV`, kv_lora_rank + rope values) with `-mla 2`
or `3` (the default) and with `-mla 1` under flash attention, add the transposed `kv^T`
(kv_lora_rank values) with `-mla 1` without it, and full heads with `-mla 0`. Defaults from
`gpt_params` (common/common.h): `-fa` on, `-mla 3`, `-c 0` (the model's context), 512-token
micro-batches. See `llamacpp_rules.py` and `llamacpp_engine.py`.
"""

from __future__ import annotations

from typing import ClassVar

from llm_inventory.engine.serving.llamacpp_engine import LlamaCpp

IK_ONLY = frozenset({"-mla", "--mla-use", "-fmoe", "--fused-moe", "-rtr", "--run-time-repack",
                     "-amb", "--attention-max-batch", "-ser", "--smart-expert-reduction"})


class IkLlama(LlamaCpp):
    name = "ik_llama"
    fork = "ik"
    build = 3000
    versions = "ik_llama.cpp (2025 builds)"
    version = "3000"
    label = "ik_llama.cpp"
    summary = ("KV = cells × K and V rows, as older llama.cpp; MLA keeps c^KV alone (-mla 2, 3)")
    # It installs the same program names as llama.cpp; `inventory launch` reads a line as
    # ik_llama.cpp's when it uses a flag upstream llama.cpp lacks or runs a binary under an
    # ik_llama folder (`claims_launch`), and `--engine ik_llama` picks this one.
    programs: ClassVar[tuple[tuple[str, ...], ...]] = LlamaCpp.programs

    def claims_launch(self, argv: list[str]) -> bool:
        """ik_llama.cpp's own options (`gpt_params_find_arg`, common/common.cpp): -mla,
        -fmoe, -rtr, -amb, -ser and their long forms, none of which upstream llama.cpp
        accepts; or a program path naming ik_llama."""
        return "ik_llama" in argv[0].lower() or any(
            word.split("=", 1)[0] in IK_ONLY for word in argv[1:])


ENGINE = IkLlama()
