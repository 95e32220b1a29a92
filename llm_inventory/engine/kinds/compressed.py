"""Rules shared by DeepSeek-V4's three attention kinds (sliding-only, CSA, HCA).

Every V4 layer attends over a sliding window of uncompressed entries; CSA and HCA layers
also attend over older tokens compressed `ratio` to one entry (transformers
`DeepseekV4Attention`, `DeepseekV4CSACompressor`, `DeepseekV4HCACompressor`, models/
deepseek_v4; DeepSeek's own `inference/model.py` `Compressor`).

- Tensors: q_a_proj → q_a_norm → q_b_proj (heads × head_dim), one key-and-value head
  (`kv_proj`, `kv_norm`: K = V), the grouped output projection (`o_a_proj`: o_groups blocks
  of heads × head_dim ÷ o_groups → o_lora_rank, then `o_b_proj`) and a sink per head; a
  compressor adds `kv_proj` and `gate_proj` (coff × head_dim, coff = 2 where windows
  overlap), `position_bias` (ratio × coff × head_dim) and `kv_norm`.
- Entries: one vector of head_dim per token or compressed entry, at the KV dtype; at fp8,
  FlashMLA's layout vLLM keeps (`DeepseekV4MultiHeadLatentAttentionWrapper` `head_bytes`,
  vllm/model_executor/layers/deepseek_v4_attention.py): nope bytes in fp8, the rope slice in
  bf16, one scale byte per 64 nope values and one pad byte (584 for 448 + 64).
- The window (`sliding_window` entries) and the compressor's running state (`kv_state` and
  `score_state`, each coff × ratio × coff × head_dim fp32: DeepSeek's `Compressor`) are
  bounded: fixed bytes per sequence. Compressed entries grow at one per `ratio` tokens.
- Paging: vLLM gives V4 its own cache specs (sliding-window and compressed MLA pages of
  64-token blocks); here every compressed layer shares one block table whose page is the
  sum of their per-token shares (a block of B tokens holds B ÷ ratio entries per layer), a
  request needs ⌈max_model_len ÷ B⌉ blocks, and windows and compressor state are charged
  whole to every request. An estimate: vLLM's extra prefill-chunk reservation for windows
  and its 576-byte page alignment are not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from llm_inventory.engine.blocks import Entry, linear
from llm_inventory.engine.kinds.attention import attended, head_limits
from llm_inventory.engine.kinds.base import Kind, ShapeRule
from llm_inventory.engine.kinds.layer import StateLayer
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Component, Compression, Shard, Stack
from llm_inventory.units import bytes_for, normalize_dtype

_L = r"(?:^|\.)(?:layers|blk)\.\d+\."
STATE_DTYPE = "fp32"  # the compressor's kv_state and score_state


def compression(stack: Stack) -> Compression:
    if stack.compression is None or not stack.heads or not stack.head_dim:
        raise InputError("decoder.compression",
                         "DeepSeek-V4 layers need the compression block, heads and head_dim")
    return stack.compression


def entry_bytes(width: int, rope: int, dtype: str) -> int:
    """Bytes of one cached entry of `width` (`rope` of them rotary) at the KV dtype."""
    if normalize_dtype(dtype).startswith("fp8"):
        nope = width - rope
        return nope + 2 * rope + nope // 64 + 1
    return bytes_for(width, dtype)


def compressor_tensors(prefix: str, hidden: int, width: int, ratio: int, coff: int
                       ) -> Iterator[Entry]:
    a, rep = Component.ATTENTION, Shard.REPLICATED
    yield from linear(f"{prefix}.kv_proj", coff * width, hidden, a, rep, False)
    yield from linear(f"{prefix}.gate_proj", coff * width, hidden, a, rep, False)
    yield f"{prefix}.position_bias", (ratio, coff * width), a, rep, False, 0
    yield f"{prefix}.kv_norm.weight", (width,), a, rep, False, 0


class CompressedAttention(Kind):
    """A DeepSeek-V4 attention layer; subclasses set the compression ratio and indexer."""

    module = "self_attn"
    compressed: ClassVar[bool] = False
    indexed: ClassVar[bool] = False

    def ratio(self, stack: Stack) -> int | None:
        return None

    def coff(self) -> int:
        """Series per token: 2 where windows overlap (CSA), else 1."""
        return 2 if self.indexed else 1

    # --- the model ------------------------------------------------------------------------

    def tensors(self, prefix: str, stack: Stack) -> Iterator[Entry]:
        cmp, hidden, heads, hd = (compression(stack), stack.hidden_size or 0, stack.heads or 0,
                                  stack.head_dim or 0)
        a, rep = Component.ATTENTION, Shard.REPLICATED
        yield from linear(f"{prefix}.q_a_proj", cmp.q_lora_rank, hidden, a, rep, False)
        yield f"{prefix}.q_a_norm.weight", (cmp.q_lora_rank,), a, rep, False, 0
        yield from linear(f"{prefix}.q_b_proj", heads * hd, cmp.q_lora_rank, a, Shard.COLUMN,
                          False)
        yield from linear(f"{prefix}.kv_proj", hd, hidden, a, rep, False)
        yield f"{prefix}.kv_norm.weight", (hd,), a, rep, False, 0
        yield from linear(f"{prefix}.o_a_proj", cmp.o_groups * cmp.o_lora_rank,
                          heads * hd // cmp.o_groups, a, Shard.COLUMN, False)
        yield from linear(f"{prefix}.o_b_proj", hidden, cmp.o_groups * cmp.o_lora_rank, a,
                          Shard.ROW, False)
        yield f"{prefix}.sinks", (heads,), a, Shard.COLUMN, False, 0
        ratio = self.ratio(stack)
        if ratio is None:
            return
        yield from compressor_tensors(f"{prefix}.compressor", hidden, hd, ratio, self.coff())
        if self.indexed:
            ix = stack.indexer
            if ix is None:
                raise InputError("decoder.indexer", "csa layers need the indexer block")
            base = f"{prefix}.compressor.indexer"
            yield from compressor_tensors(base, hidden, ix.head_dim, ratio, 2)
            yield from linear(f"{base}.q_b_proj", ix.heads * ix.head_dim, cmp.q_lora_rank, a,
                              rep, False)
            yield f"{base}.scorer.weights_proj.weight", (ix.heads, hidden), a, rep, False, 0

    def state_layer(self, stack: Stack, index: int, encoder_tokens: int) -> StateLayer | None:
        cmp = compression(stack)
        ratio, hd = self.ratio(stack), stack.head_dim or 0
        index_dim = stack.indexer.head_dim if self.indexed and stack.indexer else 0
        state = 0
        if ratio is not None:
            coff = self.coff()
            state = 2 * (coff * ratio) * (coff * hd)
            if index_dim:
                state += 2 * (2 * ratio) * (2 * index_dim)
        return StateLayer(kind=self.state, first=index, window=stack.sliding_window,
                          latent_dim=hd, k_head_dim=cmp.rope_dim, index_dim=index_dim,
                          ratio=ratio, state_elements=state)

    def score_flops(self, stack: Stack, start: int, stop: int, encoder_tokens: int) -> int:
        """QKᵀ and AV over the window, plus the entries read: every compressed entry (HCA),
        at most index_topk of them (CSA, whose indexer scores every entry)."""
        width = 2 * (stack.heads or 0) * 2 * (stack.head_dim or 0)
        flops = width * attended(stack.sliding_window, start, stop)
        ratio = self.ratio(stack)
        if ratio is None:
            return flops
        entries = sum(t // ratio for t in range(start + 1, stop + 1))
        if self.indexed and stack.indexer is not None:
            ix = stack.indexer
            flops += 2 * ix.heads * (ix.head_dim + 1) * entries
            read = sum(min(t // ratio, ix.topk) for t in range(start + 1, stop + 1))
            return flops + width * read
        return flops + width * entries

    def tp_limits(self, stack: Stack, tp: int) -> tuple[list[str], list[str]]:
        reasons = head_limits(stack, tp)
        cmp = compression(stack)
        if cmp.o_groups % tp:
            reasons.append(f"tp {tp} does not divide the {cmp.o_groups} output groups")
        warnings = ["the single K = V head and its cache are replicated on every TP rank"
                    ] if tp > 1 else []
        return reasons, warnings

    def activation_width(self, stack: Stack, tp: int) -> int:
        return (stack.heads or 0) * (stack.head_dim or 0) // tp

    def rotary_dim(self, stack: Stack) -> int:
        return compression(stack).rope_dim

    def shape_rules(self, stack: Stack) -> list[ShapeRule]:
        heads, hd = stack.heads or 0, stack.head_dim or 0
        return [ShapeRule("query width (heads × head_dim)",
                          re.compile(_L + r"self_attn\.q_b_proj\.weight$"), 0, heads * hd),
                ShapeRule("key-and-value width (head_dim)",
                          re.compile(_L + r"self_attn\.kv_proj\.weight$"), 0, hd)]

    # --- the state ------------------------------------------------------------------------

    def validate(self, layer: StateLayer) -> None:
        if layer.latent_dim < 1 or layer.window is None:
            raise InputError("latent_dim", f"a {layer.kind} layer needs its entry width and "
                             "window")

    def replicated(self, layer: StateLayer, tp: int) -> bool:
        return tp > 1

    def _entry(self, layer: StateLayer, dtype: str) -> int:
        return entry_bytes(layer.latent_dim, layer.k_head_dim, dtype)

    def _window_bytes(self, layer: StateLayer, tokens: int, dtype: str) -> int:
        return min(tokens, layer.window or tokens) * self._entry(layer, dtype)

    def _state_bytes(self, layer: StateLayer) -> int:
        return bytes_for(layer.state_elements, STATE_DTYPE)

    def fixed_bytes(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        """The full window and the compressor's running state."""
        return (layer.window or 0) * self._entry(layer, dtype) + self._state_bytes(layer)

    def label(self, window: int | None) -> str:
        return self.state + (f" (window {window:,})" if window else "")


def index_entry_bytes(index_dim: int) -> int:
    """One fp8 indexer key with its fp32 scales, as for DeepSeek-V3.2."""
    from llm_inventory.engine.kinds.indexed_mla import index_key_bytes

    return index_key_bytes(index_dim)


class Compressing(CompressedAttention):
    """CSA and HCA: compressed entries grow at one per `ratio` tokens."""

    compressed = True
    release = ("the window slides (older entries are dead); compressed entries stay until "
               "the sequence ends; the compressor's state is fixed and overwritten")

    def token_elements(self, layer: StateLayer, tp: int = 1) -> int:
        return (layer.latent_dim + layer.index_dim) // (layer.ratio or 1)

    def _per_entry(self, layer: StateLayer, dtype: str) -> int:
        """One compressed entry and its indexer key (fp8 with fp32 scales)."""
        return self._entry(layer, dtype) + (
            index_entry_bytes(layer.index_dim) if layer.index_dim else 0)

    def bytes_per_token(self, layer: StateLayer, dtype: str, tp: int = 1) -> int:
        """The average a token adds: one entry (and indexer key) per `ratio` tokens,
        rounded up."""
        return -(-self._per_entry(layer, dtype) // (layer.ratio or 1))

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        """Compressed entries held: one per `ratio` tokens, in whole blocks when paged."""
        ratio = layer.ratio or 1
        if block_size is None:
            return tokens // ratio
        return -(-tokens // block_size) * block_size // ratio

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        entries = self.tokens_held(layer, tokens, block_size)
        return (entries * self._per_entry(layer, dtype)
                + self._window_bytes(layer, tokens, dtype) + self._state_bytes(layer))

    def page_group(self, window: int | None) -> tuple[str, int | None]:
        return ("compressed", None)


class WindowOnly(CompressedAttention):
    """A layer that keeps its window alone, bounded, so charged as fixed bytes per
    sequence (DeepSeek-V4's sliding-only layers, V4.1's layers that read a shared KV)."""

    grows = False
    release = "entries older than the window are dead and may be freed as it slides"

    def sequence_bytes(
        self, layer: StateLayer, tokens: int, dtype: str, block_size: int | None, tp: int = 1
    ) -> int:
        return self._window_bytes(layer, tokens, dtype)

    def tokens_held(self, layer: StateLayer, tokens: int, block_size: int | None) -> int:
        return min(tokens, layer.window or tokens)
