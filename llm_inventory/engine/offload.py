"""Offload and KV tiers: where each byte of a plan lives (GPU, host memory, disk), per device.

Two kinds of offload change a plan:
- Weights moved to host memory (vLLM and SGLang `--cpu-offload-gb`): each GPU moves up to
  the given bytes of its decoder layers' parameters to pinned host memory, so its pool grows
  by as much; every forward then reads them over the host link.
- A KV tier below the GPU pool: vLLM's offloading connector (`--kv-offloading-size`,
  `--kv-offloading-backend native|lmcache`), LMCache's CPU and local-disk tiers, SGLang's
  HiCache host pool (`--enable-hierarchical-cache`, `--hicache-ratio`, `--hicache-size`).
  These leave the GPU pool as it is and hold prefixes in host memory (or on disk); a prefix
  hit served from there costs its reload over the host link before the first token.

Each engine says how it sizes these through `ServingEngine.offload_rules` (one module per
engine family, `engine/serving/*_offload.py`); nothing here names an engine. With offload
off (`Offload()`), every figure of a plan is what it was without this module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.bounds import SIZE, TOKENS
from llm_inventory.errors import InputError

KvBackend = Literal["native", "lmcache"]
GIB = 1 << 30


class Offload(BaseModel):
    """What a launch asks to keep off the GPU (all zero / None: nothing, the default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # bytes of its decoder layers' weights each GPU moves to host memory (--cpu-offload-gb)
    weight_bytes: int = Field(default=0, ge=0, le=SIZE.limit)
    # the host KV tier of one engine instance, all its ranks together (--kv-offloading-size)
    kv_host_bytes: int = Field(default=0, ge=0, le=SIZE.limit)
    kv_backend: KvBackend = "native"
    # LMCache's local disk tier per worker (LMCACHE_MAX_LOCAL_DISK_SIZE)
    kv_disk_bytes: int = Field(default=0, ge=0, le=SIZE.limit)
    # SGLang HiCache: the host pool as a multiple of the device pool, or bytes per rank
    hicache_ratio: float | None = Field(default=None, gt=0, le=1000)
    hicache_bytes: int | None = Field(default=None, gt=0, le=SIZE.limit)
    # prefix tokens each request finds in the host tier: their reload joins the TTFT
    reload_tokens: int = Field(default=0, ge=0, le=TOKENS.limit)
    # host RAM of one node, to check the plan's host bytes against (None: the catalog's)
    host_memory_bytes: int | None = Field(default=None, gt=0, le=SIZE.limit)
    # the host link of one device, bytes per second per direction (None: the catalog's)
    host_link_bytes_per_s: int | None = Field(default=None, gt=0, le=SIZE.limit)

    @property
    def hicache(self) -> bool:
        return self.hicache_ratio is not None or self.hicache_bytes is not None

    @property
    def active(self) -> bool:
        """Whether anything is asked: an inactive block leaves every figure unchanged."""
        return bool(self.weight_bytes or self.kv_host_bytes or self.kv_disk_bytes
                    or self.hicache or self.reload_tokens)


@dataclass(frozen=True)
class TierContext:
    """What one engine instance's KV tier sizing reads about its binding worker."""

    ranks: int  # workers of one instance (tp × pp, or the EP group × pp)
    pool_tokens: int  # the GPU pool's tokens on the binding worker
    bytes_per_token: int  # one token over the worker's layers, as its pool holds it
    page_tokens: int  # tokens of one block or page
    page_bytes: int  # bytes of one block id over the worker's layers (0: not paged)


@dataclass(frozen=True)
class KvTier:
    """One worker's KV below the GPU: host bytes and tokens, disk bytes, and a warning."""

    host_bytes: int = 0
    host_tokens: int = 0
    disk_bytes: int = 0
    exact: bool = True  # the engine's own arithmetic (False: an estimate, said in `note`)
    note: str = ""
    warning: str | None = None


class OffloadRules(ABC):
    """One engine family's offload rules, read from its source and cited in `sources`."""

    label: str  # the engine's name in messages
    sources: tuple[str, ...]  # file, function and release of each rule
    options: ClassVar[dict[str, bool]]  # its command-line options: whether each takes a value
    # its forward may copy an offloaded layer's weights back to the GPU (a higher peak)
    copies_on_forward: ClassVar[bool] = False

    @abstractmethod
    def read(self, found: dict[str, str | None], ranks: int = 1) -> Offload | None:
        """The offload a command line of `ranks` workers asks for, from its `options` as
        given (None: none); InputError for a value the engine refuses."""

    def with_environment(self, offload: Offload | None, env: dict[str, str],
                         ranks: int) -> Offload | None:
        """`offload` as the command line's environment settles it (unchanged by default)."""
        return offload

    @abstractmethod
    def refuse(self, offload: Offload) -> None:
        """InputError naming the setting the engine does not take."""

    def weights_moved(self, offload: Offload, layer_bytes: int) -> int:
        """Bytes one worker moves to host memory of its `layer_bytes` of decoder-layer
        weights (none by default)."""
        return 0

    def kv_tier(self, offload: Offload, ctx: TierContext) -> KvTier:
        """One worker's host and disk KV (none by default)."""
        return KvTier()

    def startup_lines(self, tier: KvTier) -> list[str]:
        """What the engine prints about its host tier at start-up, in its words (none by
        default)."""
        return []

    @abstractmethod
    def argv(self, offload: Offload) -> list[str]:
        """The engine's own flags that ask for `offload` (read back by its launch reader)."""


def refuse(label: str, field: str, flag: str) -> None:
    raise InputError(field, f"{label} has no {flag}; offload settings it takes are listed "
                     "by `inventory engines`")


def move_parameters(limit: int, layer_bytes: int) -> int:
    """Weights a worker moves under a byte limit (vLLM `maybe_offload_to_cpu`, SGLang
    `OffloaderV1`): parameters leave layer by layer from the first until the moved bytes
    reach the limit, so the whole of the layers when they hold less. The engine moves whole
    parameters and stops once the limit is met, overshooting by up to one tensor; this
    counts the limit itself, under by at most that one tensor."""
    return max(0, min(limit, layer_bytes))


def environment(argv: list[str]) -> dict[str, str]:
    """The NAME=value assignments a shell line sets before its program."""
    import re

    env: dict[str, str] = {}
    for word in argv:
        if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
            break
        name, _, value = word.partition("=")
        env[name] = value
    return env


def reload_seconds(tokens: int, bytes_per_token: int, link: int | None) -> float | None:
    """Seconds to bring `tokens` of one worker's KV back over its host link (None when the
    link is unknown): every worker reloads its own share at once, over its own link."""
    if not tokens or link is None:
        return None if tokens and link is None else 0.0
    return tokens * bytes_per_token / link


def scaled_bytes(text: str, field: str, unit: int, *, integer: bool = False) -> int:
    """A number of `unit`s as the engines' flags give sizes (vLLM's `--cpu-offload-gb 4.5`
    in GiB, SGLang's `--hicache-size 40` in GB) as whole bytes; InputError names `field`."""
    from llm_inventory.bounds import number

    value = number(field, text, low=0.0, high=float(1 << 20), integer=integer)
    return int(round(value * unit))


def parse_kv_offload(text: str, field: str = "kv_offload") -> tuple[int, KvBackend]:
    """`SIZE[,BACKEND]` as `--kv-offload` spells it (a bare number is GiB, as vLLM's
    --kv-offloading-size): bytes, and native or lmcache."""
    from llm_inventory.errors import excerpt
    from llm_inventory.units import parse_bytes

    size, _, backend = text.partition(",")
    backend = backend.strip().lower() or "native"
    if backend not in ("native", "lmcache"):
        raise InputError(field, f"unknown backend {excerpt(backend)}; use native or lmcache")
    size = size.strip()
    try:
        found = scaled_bytes(size, field, GIB)
    except InputError:
        found = parse_bytes(size, field)
    return found, "lmcache" if backend == "lmcache" else "native"
