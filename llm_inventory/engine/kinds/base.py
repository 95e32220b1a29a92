"""The interface every layer kind implements (the state record it sizes is `layer.py`).

A kind holds every rule for its layers: the tensors its mixer contributes, the state it keeps
(bytes per token, fixed bytes per sequence, tokens held at a context), how a paged cache
groups and pages it, the attention FLOPs it adds, how tensor parallelism shards or replicates
it and when a split is illegal, its label and its release rule. The defaults below are those
of a kind that keeps nothing and computes nothing beyond its projections.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from llm_inventory.units import bytes_for

if TYPE_CHECKING:  # no pydantic here: a kind's rules load without the model description
    from llm_inventory.engine.blocks import Entry
    from llm_inventory.engine.kinds.layer import StateLayer
    from llm_inventory.spec.model import Stack

@dataclass(frozen=True)
class ShapeRule:
    """A config figure a checkpoint tensor's dimension must equal (config versus files)."""

    what: str
    pattern: re.Pattern[str]
    axis: int
    expected: int


class Kind:
    """One kind of decoder layer. Subclasses set the class attributes and override rules."""

    name: ClassVar[str]  # as `layer_types` spells it
    state: ClassVar[str]  # as state results spell it (defaults to `name`)
    module: ClassVar[str] = "self_attn"  # the mixer's module name inside a layer
    release: ClassVar[str]  # what a cache manager may free, and when
    grows: ClassVar[bool] = True  # state grows with the sequence (until a window caps it)
    reads_encoder: ClassVar[bool] = False  # attends to an encoder's output, not the text
    holds_tokens: ClassVar[bool] = True  # "tokens held" means something for this kind
    joint_latent: ClassVar[bool] = False  # one joint K/V latent entry per token (MLA)
    # DeepSeek sparse attention over an MLA latent: vLLM serves it with FlashMLA's sparse
    # backend, in blocks of 64 tokens
    sparse_mla: ClassVar[bool] = False
    # vLLM V1 keeps this kind's fixed state in pages of the KV block pool (a `MambaSpec`
    # layer), not beside it: see `engine/serving/paged.py`.
    paged_state: ClassVar[bool] = False
    # The `Stack` field this kind's layers are built from (`sliding_window`, `mla`, …): a
    # stack naming the kind in `layer_types` (or `parallel_mixers`) must set it. None: the
    # attention fields every stack has suffice.
    requires: ClassVar[str | None] = None

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "name" in cls.__dict__ and "state" not in cls.__dict__:
            cls.state = cls.name

    # --- the model ------------------------------------------------------------------------

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        """The mixer's tensors, named under `prefix` (`model.layers.{i}.self_attn`)."""
        return iter(())

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        """What layer `index` keeps, or None when the stack lacks the shapes to say."""
        return None

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        """FLOPs beyond the projections for positions start+1 … stop of one sequence."""
        return 0

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        """(reasons `tp` is illegal for these layers, warnings when it is legal)."""
        return [], []

    def activation_width(self, stack: Stack, tp: int) -> int:
        """Elements per token of the mixer's widest buffers on one rank (forward peak)."""
        return 0

    def rotary_dim(self, stack: Stack) -> int:
        """Rotary dimensions per head whose cos/sin an engine caches (0: no rotary)."""
        return 0

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        """Checkpoint dimensions the config fixes for this kind's tensors."""
        return []

    # --- the state ------------------------------------------------------------------------

    def validate(self, layer: StateLayer) -> None:
        """Raise InputError when `layer` lacks a fact this kind sizes from."""

    def check_split(self, layer: StateLayer, tp: int) -> None:
        """Raise InputError when `tp` cannot split this kind's state."""

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        """Elements one token adds to one layer on one of `tp` ranks (0: fixed-size kinds)."""
        return 0

    def elements_per_token(self, layer: StateLayer) -> int:
        """Elements one token adds to one whole layer."""
        return self.token_elements(layer, 1)

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        """Bytes one token adds to one layer on one of `tp` ranks."""
        return bytes_for(self.token_elements(layer, tp), dtype)

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        """Bytes one sequence holds in one layer on one of `tp` ranks, whatever its length."""
        return 0

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        """Token slots one sequence of `tokens` occupies in one layer at its peak."""
        return 0

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        """One layer's bytes for one sequence of `tokens` on one of `tp` ranks: the tokens
        held × their elements at `dtype` (rounded up once), plus the fixed state."""
        held = self.tokens_held(layer, tokens, block_size)
        growing = bytes_for(self.token_elements(layer, tp) * held, dtype) if held else 0
        return growing + self.fixed_bytes(layer, dtype, tp)

    def heads_per_device(self, layer: StateLayer, tp: int) -> int | None:
        """KV heads one rank holds, for kinds that shard by head (None otherwise)."""
        return None

    def replicated(self, layer: StateLayer, tp: int) -> bool:
        """Whether TP ranks hold copies of the same state."""
        return False

    def label(self, window: int | None) -> str:
        """How tables name a row of this kind."""
        return self.state + (f" ({window:,})" if window else "")

    # --- a paged cache (vLLM's allocator) --------------------------------------------------

    def sparse_record(self, layer: StateLayer, stack: Stack, layout: str
                      ) -> StateLayer | None:
        """`layer` as an engine keeps it in a packed sparse-attention record `layout` (vLLM's
        `fp8_ds_mla`, `nvfp4_ds_mla`; see `kinds/packed_mla.py`); None: this kind has none
        and keeps its state at the KV cache's dtype."""
        return None

    def page_group(self, window: int | None) -> tuple[str, int | None]:
        """The key layers share a block table under: kinds that page alike (same tokens held
        per request) return the same key and are paged as one kind."""
        return (self.name, window)

    def request_blocks(
        self, window: int | None, block_size: int, max_model_len: int, batched: int,
        prefix_caching: bool = False,
    ) -> int:
        """Blocks one request at `max_model_len` needs in one layer group (full attention:
        ⌈max_model_len ÷ block⌉; vLLM `FullAttentionSpec.max_memory_usage_bytes`, the same
        with prefix caching on or off)."""
        return -(-max_model_len // block_size)


def round_up(tokens: int, block: int | None) -> int:
    """`tokens` rounded up to whole blocks (unchanged without paging)."""
    return -(-tokens // block) * block if block else tokens
