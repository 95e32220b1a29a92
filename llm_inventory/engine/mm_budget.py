"""The vision-language budget: what an engine reserves at start-up for a model's encoder.

vLLM (V1) sizes an encoder cache and profiles the encoder before it sizes its KV pool
(`compute_mm_encoder_budget` / `compute_encoder_budget`, vllm/v1/core/encoder_cache_manager.py;
`GPUModelRunner.profile_run`, vllm/v1/worker/gpu_model_runner.py):
- T = the most feature tokens one item yields (the processor's largest input);
- the encoder's compute budget and the cache both hold max(max_num_batched_tokens, T) tokens
  (unless set apart: `max_num_batched_encoder_embeds`, `encoder_cache_size`);
- the profiling run encodes M = max(1, min(budget ÷ T, max_num_seqs × P)) items of T
  tokens, P = max(1, min(limit per prompt, max_model_len ÷ T)) the items one prompt can
  hold (`MultiModalBudget.get_max_items`, vllm/v1/worker/utils.py; later
  `MultiModalBudget._get_max_items`, vllm/multimodal/encoder_budget.py), and keeps their
  outputs (M × T × the language model's hidden width in
  the activation dtype) in the encoder cache while the language model's profiling forward
  runs, so the torch peak it subtracts before the KV pool is at least those outputs plus
  the forward's peak, and at least the encoder's own activations; it logs "Encoder cache
  will be initialized with a budget of B tokens, and profiled with M image items of the
  maximum feature size". `--limit-mm-per-prompt image=0` leaves the encoder out, and
  `--skip-mm-profiling` skips the encoder pass (the cache is then not profiled).
  vllm#18550 is this rule at 12 images × 16,384 tokens.
SGLang keeps no encoder cache on the device beyond its activations; when
`--mem-fraction-static` is left to it, it scales the default down for a multimodal model by
0.95 × clamp(1 − 0.1 × (L·H² ÷ (24 · 1024²) − 1), 0.8, 1.05) for a vision tower of L layers
of width H (`ServerArgs.adjust_mem_fraction_for_vlm`, python/sglang/srt/server_args.py).

Only images are modelled: the item is the image that yields the most tokens (Qwen-VL's
processors: `max_pixels` ÷ (patch × merge)², 16,384 tokens at the checkpoints' 12,845,056 /
16,777,216 px; fixed-size encoders: their one size).

Not modelled: from 0.10.1 (vllm#21798) until the budget counted embeddings only (vllm#30475,
December 2025), vLLM sized an item by its whole placeholder in the prompt
(`MultiModalProfiler.get_mm_max_contiguous_tokens`, vllm/multimodal/profiling.py), text
tokens around and between the features included. Gemma 3 wraps each image's 256 features
in a double newline and <start_of_image> before, <end_of_image> and a double newline after
(`Gemma3ProcessingInfo.get_image_repl`, vllm/model_executor/models/gemma3_mm.py; a double
newline is one token): 260 tokens, so a budget of 8,192 tokens profiles 31 images there,
not 32. Qwen3-VL's videos count the timestamp text between their frames. Models whose
placeholder is the features alone (Qwen-VL's images, LLaVA's) are the same either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from llm_inventory.bounds import MAX_PIXELS
from llm_inventory.engine.media import feature_tokens
from llm_inventory.errors import InputError
from llm_inventory.spec.model import Encoder, ModelSpec
from llm_inventory.units import DTYPE_BITS

DEFAULT_LIMIT = 999  # vLLM's items per prompt of a modality left unset
QWEN_MAX_TOKENS = 16_384  # Qwen-VL processors' largest image, in merged tokens
MODALITIES = ("image", "video", "audio")
MAX_ITEMS = 1 << 20


class MultimodalRequest(BaseModel):
    """How a launch bounds multimodal inputs; empty: the engine's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # items per prompt by modality (vLLM --limit-mm-per-prompt); a missing one: the default
    limit_per_prompt: dict[str, int] = Field(default_factory=dict)
    max_pixels: int | None = Field(default=None, ge=1, le=MAX_PIXELS.limit)  # processor kwargs
    skip_profiling: bool = False  # vLLM --skip-mm-profiling


@dataclass(frozen=True)
class MmRule:
    """How one engine era reserves memory for a model's encoder."""

    profiles_encoder: bool  # vLLM: an encoder pass and its outputs inside the profiled peak
    fraction_scale: bool  # SGLang: the default mem_fraction_static scaled for the tower
    source: str


class MmFigures(BaseModel):
    """What the engine reserves for the encoder on the binding device, in bytes."""

    model_config = ConfigDict(frozen=True)

    tokens_per_item: int  # the most feature tokens one image yields
    limit_per_prompt: int
    encoder_budget_tokens: int  # tokens the encoder cache holds (0: none)
    profiled_items: int  # items the profiling run encodes
    cache_bytes: int  # the encoder cache when full, per device
    profile_bytes: int  # what the profiling pass adds to the reserve
    fraction_factor: float = 1.0  # SGLang: the default fraction's scale
    source: str


def parse_limits(text: str) -> dict[str, int]:
    """`image=4,video=0` (or vLLM's JSON `{"image": 4}`) → {modality: items}."""
    import json

    body = text.strip()
    pairs: dict[str, object]
    if body.startswith("{"):
        try:
            loaded = json.loads(body)
        except ValueError as exc:
            raise InputError("limit_mm_per_prompt", f"{body[:60]!r} is not JSON") from exc
        if not isinstance(loaded, dict):
            raise InputError("limit_mm_per_prompt", "give modality=count pairs")
        pairs = loaded
    else:
        pairs = {}
        for part in body.split(","):
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError("limit_mm_per_prompt", f"{part.strip()!r} is not "
                                 "modality=count (image=4,video=0)")
            pairs[name.strip()] = value.strip()
    found: dict[str, int] = {}
    for name, given in pairs.items():
        key = str(name).strip().lower()
        if key not in MODALITIES:
            raise InputError("limit_mm_per_prompt", f"unknown modality {key!r}; use "
                             + ", ".join(MODALITIES))
        raw = given.get("count", DEFAULT_LIMIT) if isinstance(given, dict) else given
        try:  # vLLM's {"count": n, "width": …} form gives the count inside
            count = int(str(raw))
        except ValueError as exc:
            raise InputError("limit_mm_per_prompt",
                             f"{key}={raw!r} is not a whole number") from exc
        if not 0 <= count <= MAX_ITEMS:
            raise InputError("limit_mm_per_prompt", f"{key}={count} is outside 0–{MAX_ITEMS}")
        found[key] = count
    return found


def max_tokens_per_item(encoder: Encoder, max_pixels: int | None) -> int:
    """The most feature tokens one image yields, as the engine's dummy input is sized."""
    media = encoder.media
    # Qwen-VL's dynamic resolution (smart_resize; its towers fold frames in temporal
    # patches): the processor's max_pixels bounds an image, not a fixed size
    dynamic = media.round_sides or (media.temporal_patch_size > 1 and media.tiling == "none"
                                    and not media.tokens_per_item and not media.token_budget)
    if dynamic and media.patch_size:
        block = (media.patch_size * media.spatial_merge_size) ** 2
        return max(1, max_pixels // block) if max_pixels else QWEN_MAX_TOKENS
    return feature_tokens(media).feature_tokens


def _encoder_peak(encoder: Encoder, tokens: int, tp: int, act_bytes: int) -> int:
    """An estimate of the vision tower's activation peak over `tokens` patch tokens on one
    rank: the residual stream twice and the widest projection (MLP or fused qkv)."""
    stack = encoder.stack
    if stack is None or not stack.hidden_size:
        return 0
    hidden, inter = stack.hidden_size, stack.intermediate_size or 4 * stack.hidden_size
    widest = max((3 if stack.mlp == "gated" else 2) * inter, 3 * hidden) // tp
    return tokens * (2 * hidden + widest) * act_bytes


#: Model types whose vision_config names the merger's output width `hidden_size` (the tower's
#: own is `embed_dim`: transformers `Qwen2VLVisionConfig`); SGLang reads that key as it is.
_HIDDEN_IS_OUTPUT = frozenset({"qwen2_vl"})


def vision_factor(encoder: Encoder, model_type: str | None = None,
                  output_width: int | None = None) -> float:
    """SGLang's scale of the default mem_fraction_static for a vision tower: its
    vision_config's num_hidden_layers (24 when absent) and hidden_size (1024)."""
    stack = encoder.stack
    layers = stack.layers if stack is not None else 24
    hidden = (stack.hidden_size or 1024) if stack is not None else 1024
    if model_type in _HIDDEN_IS_OUTPUT and output_width:
        hidden = output_width
    ratio = layers * hidden ** 2 / (24 * 1024 ** 2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def mm_budget(spec: ModelSpec, request: MultimodalRequest, rule: MmRule, *,
              max_num_batched_tokens: int, max_num_seqs: int, tp: int,
              activation: str, forward_peak: int,
              max_model_len: int | None = None) -> MmFigures | None:
    """What the engine reserves for `spec`'s vision encoder (None: nothing — no vision
    encoder, or images switched off)."""
    encoder = spec.encoder
    if encoder is None or encoder.kind != "vision" or not spec.family.decodes:
        return None
    limit = request.limit_per_prompt.get("image", DEFAULT_LIMIT)
    if limit == 0:
        return None
    tokens = max_tokens_per_item(encoder, request.max_pixels)
    hidden = spec.decoder.hidden_size if spec.decoder is not None else None
    act = DTYPE_BITS[activation] // 8
    if rule.fraction_scale:
        return MmFigures(tokens_per_item=tokens, limit_per_prompt=limit,
                         encoder_budget_tokens=0, profiled_items=0, cache_bytes=0,
                         profile_bytes=0, fraction_factor=vision_factor(encoder),
                         source=rule.source)
    budget = max(max_num_batched_tokens, tokens)
    per_prompt = limit if max_model_len is None else max(1, min(limit,
                                                                max_model_len // tokens))
    items = max(1, min(per_prompt * max_num_seqs, budget // tokens))
    per_token = (hidden or 0) * act
    cache = budget * per_token
    profile = 0
    if rule.profiles_encoder and not request.skip_profiling:
        outputs = items * tokens * per_token
        merge = encoder.media.spatial_merge_size ** 2
        peak = _encoder_peak(encoder, items * tokens * merge, tp, act)
        profile = outputs + max(0, peak - forward_peak)
    return MmFigures(tokens_per_item=tokens, limit_per_prompt=limit,
                     encoder_budget_tokens=budget, profiled_items=items, cache_bytes=cache,
                     profile_bytes=profile, source=rule.source)


def startup_line(figures: MmFigures) -> str | None:
    """vLLM's own line about the encoder cache (`GPUModelRunner.profile_run`)."""
    if not figures.encoder_budget_tokens:
        return None
    return (f"Encoder cache will be initialized with a budget of "
            f"{figures.encoder_budget_tokens} tokens, and profiled with "
            f"{figures.profiled_items} image items of the maximum feature size.")
