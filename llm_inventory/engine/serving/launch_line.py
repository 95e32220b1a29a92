"""What a launch line has to say, and the lines an engine writes for it.

A plan becomes one command per process the engine runs: one for a plain plan; for a
prefill/decode plan a prefill server, a decode server and the router in front of them.
Each engine family writes its own flags (its module `*_line.py`, reached through
`ServingEngine.launch_lines`); every server line reads back through that engine's
`parse_launch` to the plan's split and settings (tests/engine/serving/test_launch_line.py).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_inventory.engine.speculative import Speculative

from llm_inventory.engine.lora import LoraRequest
from llm_inventory.engine.mm_budget import MultimodalRequest


@dataclass(frozen=True)
class LaunchPlan:
    """One placement plan as an engine has to be told it.

    `tp`, `pp`, `ep` are placement's shape: an EP group of `ep` devices per stage when
    `ep > tp`, attention split `tp` ways inside it, so `ep // tp` attention-DP ranks each
    holding its own requests. `max_num_seqs` and `max_num_batched_tokens` are per engine
    instance (per attention-DP rank): each writer turns them into its engine's own
    convention.
    """

    model: str
    tp: int
    pp: int
    ep: int
    context: int
    max_num_seqs: int | None  # None: the engine's own default
    max_num_batched_tokens: int
    memory_fraction: float | None = None  # None: the engine's own default
    kv_dtype: str | None = None  # None: the model's own
    quantization: str | None = None  # None: the checkpoint as stored
    disaggregation: str | None = None  # "prefill/decode": two pools behind a router
    gguf: bool = False  # the model is a GGUF file (llama.cpp -m) rather than a Hub id
    n_gpu_layers: int | None = None  # llama.cpp: layers on the GPUs (None: all)
    n_cpu_moe: int | None = None  # llama.cpp: layers whose experts stay in host memory
    # speculative decoding, as placement was asked it (None: off); engine/speculative.py
    speculative: Speculative | None = None
    lora: LoraRequest | None = None  # LoRA adapter buffers (`engine/lora.py`)
    multimodal: MultimodalRequest | None = None  # multimodal limits (`engine/mm_budget.py`)
    offload: tuple[str, ...] = ()  # the engine's own offload flags (engine/offload.py)
    no_kv_offload: bool = False  # llama.cpp -nkvo: every layer's caches in host memory

    @property
    def attention_dp(self) -> int:
        """Attention-DP ranks inside one EP group (1 without EP beyond the TP width)."""
        return self.ep // self.tp if self.ep > self.tp and self.ep % self.tp == 0 else 1

    @property
    def devices(self) -> int:
        """Devices of one instance (of one pool, for a prefill/decode plan)."""
        return (self.ep if self.ep > 1 else self.tp) * self.pp


@dataclass(frozen=True)
class LaunchLine:
    """One process to start: its role, environment and arguments."""

    role: str  # "serve", "prefill", "decode" or "router"
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """The line as a shell takes it: environment assignments, then the command."""
        words = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        return " ".join([*words, shlex.join(self.argv)])

    @property
    def server(self) -> bool:
        """An engine server (its line reads back through `inventory launch`)."""
        return self.role != "router"


def visible_devices(start: int, count: int) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for `count` devices from `start` (the second pool of a P/D
    plan on one node starts after the first)."""
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(start, start + count))}


def joined(lines: list[LaunchLine]) -> str | None:
    """The lines as one shell text, one per line (None for none)."""
    return "\n".join(line.text() for line in lines) if lines else None
