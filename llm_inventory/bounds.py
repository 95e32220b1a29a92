"""Upper bounds on every count and size the tool reads, each with the reason it is safe.

A bound catches nonsense — a typo'd exponent, a generated or corrupt file — before it reaches
a loop, an allocation or float arithmetic. Each is generous: far past any published model,
device or deployment, so a real input never meets one. Each is checked where the input is
parsed (option parsers, the config and YAML readers, the model description's fields, device
files, checkpoint headers), and exceeding one is bad input: one line naming the field, the
value and the bound, exit code 2.

This module holds figures and the check only; it imports nothing of the tool but its errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_inventory.errors import InputError, excerpt


@dataclass(frozen=True)
class Bound:
    """An inclusive range for one kind of count, and why its upper end is safe."""

    limit: int
    unit: str  # what is counted, as the message says it ("layers", "bytes")
    reason: str
    low: int = 1

    def check(self, field: str, value: int) -> int:
        """`value` when it lies in [low, limit]; else InputError(field, …)."""
        if value < self.low:
            raise InputError(field, f"must be at least {self.low:,}, got {excerpt(value)}")
        if value > self.limit:
            unit = f" {self.unit}" if self.unit else ""
            raise InputError(field, f"must be at most {self.limit:,}{unit}, got {excerpt(value)}")
        return value


# --- model shapes -----------------------------------------------------------------------

LAYERS = Bound(4096, "layers", "32x the deepest published decoder (Llama 3.1 405B: 126)")
HEADS = Bound(4096, "heads", "32x the most attention heads published (DeepSeek-V3: 128)")
WIDTH = Bound(2**20, "elements", "14x the widest published MLP (Nemotron-4 340B: 73,728); "
              "hidden, intermediate, head and latent widths")
VOCAB = Bound(2**24, "rows", "64x the largest published vocabulary (Gemma 3: 262,208)")
EXPERTS = Bound(2**16, "experts", "128x the most routed experts published (Qwen3-Next: 512)")
NORMS = Bound(64, "norms", "a layer carries 2 to 4 norms")
LIST = Bound(2**16, "entries", "per-layer and per-tensor lists stay within 16x LAYERS")
PARAMETERS = Bound(10**15, "parameters", "1,000x the largest open model (Kimi K2: 10^12)",
                   low=0)
FLOPS = Bound(10**24, "FLOP", "a frontier model's whole training run; one step is far less",
              low=0)

RAW_NUMBER = 2**53  # a number in a config read as is (rope_scaling …): products stay finite

# --- workload ---------------------------------------------------------------------------

CONTEXT = Bound(2**30, "tokens", "100x the longest published context (Llama 4 Scout: "
                "10,485,760); tokens, contexts, windows and prompt lengths")
TOKENS = Bound(2**30, "tokens", "as CONTEXT; a count of 0 is allowed where it means none",
               low=0)
SEQUENCES = Bound(2**20, "sequences", "1,024x vLLM's default max_num_seqs on large GPUs (1,024)")
IMAGES = Bound(4096, "items", "media items in one request; engines cap them far lower "
               "(vLLM's --limit-mm-per-prompt)", low=0)
FRAMES = Bound(2**16, "frames", "an hour of video at 16 frames a second (57,600)")
PIXELS = Bound(2**16, "pixels", "8x the width of an 8K image (7,680); image sides and patches")
DRAFT_TOKENS = Bound(64, "tokens", "tokens drafted a step: 4x llama.cpp's default --draft-max "
                     "(16); acceptance makes longer drafts worthless")
REQUESTS = Bound(2**30, "requests", "a finite run of a billion requests is past any "
                 "benchmark; the estimate's cost does not grow with them")
STEPS = Bound(10**6, "steps", "simulation and diffusion steps; routing also caps its work")
SEED = Bound(2**64 - 1, "", "random seeds carry 64 bits", low=0)
PLANS = Bound(10**6, "plans", "plans to show; the search judges far fewer", low=0)
SIZE = Bound(2**64, "bytes", "16 EiB, a 64-bit address space: past it a size is a typo",
             low=0)

# --- devices ----------------------------------------------------------------------------

DEVICES = Bound(2**16, "devices", "a fleet larger than any one serving deployment; the "
                "placement search's candidates grow with it")
DEVICE_FLOPS = Bound(10**21, "FLOP/s", "a zettaFLOP/s: 10^5x any accelerator's dense peak")
DEVICES_PER_NODE = Bound(1024, "devices", "14x the 72 GPUs of an NVL72 rack, the largest "
                         "NVLink domain shipping")

# --- files ------------------------------------------------------------------------------

FILE_BYTES = 4 * 2**20  # YAML and JSON inputs: real config.json files are a few KiB
INDEX_BYTES = 256 * 2**20  # model.safetensors.index.json: DeepSeek-V3's is ~9 MB
REF_BYTES = 1024  # a Hub cache's refs/main holds a 40-character commit hash
SAFETENSORS_HEADER_BYTES = 100_000_000  # the format's own cap (safetensors' loader)
CHECKPOINT_TENSORS = Bound(2**18, "tensors", "2.8x DeepSeek-V3's ~92,000 (58 MoE layers x "
                           "256 experts x 3 FP8 weights, each with its scale)", low=0)
CHECKPOINT_FILES = Bound(4096, "files", "25x the shards of the largest checkpoints (DeepSeek-V3: "
                         "163)", low=0)
TENSOR_NAME = 1024  # characters in a tensor name: real ones stay under 150
TENSOR_RANK = Bound(16, "dimensions", "tensors have at most 5 dimensions; GGUF allows 4",
                    low=0)
GGUF_TENSORS = Bound(2**16, "tensors", "GGUF merges each layer's experts into one tensor: "
                     "a few thousand at most", low=0)
GGUF_KEYS = Bound(2**16, "keys", "llama.cpp writes about 50 metadata keys", low=0)
GGUF_ARRAY = Bound(2**24, "entries", "64x the token list of a 262,144-entry vocabulary",
                   low=0)
DOCUMENT_DEPTH = 64  # YAML/JSON nesting: model files nest 5 levels; parsers recurse on it
DOCUMENT_NODES = 200_000  # YAML/JSON values, aliases expanded: 100x the device catalog
YAML_ALIASES = 64  # aliases in one YAML document: model files need a handful
TEXT = 10_000  # characters in a free-text field (notes, sources) or a text option
NAME = 512  # characters in a name (a model, a tensor, a device)
NUMBER_TEXT = 100  # characters of a number with its unit: 64-bit counts have 20 digits

# --- error lines ------------------------------------------------------------------------

EXCERPT = 40  # characters of a value quoted in an error line (errors.excerpt)
ERROR_LINE = 2000  # characters of one error line: past it the line is cut, and says so

#: Integer options by parameter name, checked once each command has parsed its options;
#: every integer option of every command has an entry (a test says so).
LORA_RANK = Bound(2**16, "rank", "256x the largest LoRA rank engines accept (vLLM, SGLang: 256)")
LORA_SLOTS = Bound(2**16, "adapters", "adapter slots; engines hold a few to a few hundred")
MAX_PIXELS = Bound(2**40, "pixels", "a terapixel image; Qwen-VL processors cap at 16,777,216")

OPTIONS: dict[str, Bound] = {
    "layers": LAYERS,
    "kv_heads": HEADS,
    "head_dim": WIDTH,
    "v_head_dim": WIDTH,
    "latent": WIDTH,
    "hidden": WIDTH,
    "tokens": TOKENS,
    "context": CONTEXT,
    "prompt_tokens": CONTEXT,
    "max_num_batched_tokens": CONTEXT,
    "window": CONTEXT,
    "chunk": CONTEXT,
    "block_size": CONTEXT,
    "sequences": SEQUENCES,
    "concurrency": SEQUENCES,
    "max_num_seqs": SEQUENCES,
    "batch": SEQUENCES,
    "count": DEVICES,
    "per_node": DEVICES_PER_NODE,
    "tp": DEVICES,
    "pp": DEVICES,
    "ep": DEVICES,
    "limit": PLANS,
    "experts": EXPERTS,
    "top_k": EXPERTS,
    "moe_layers": LAYERS,
    "steps": STEPS,
    "seed": SEED,
    "images": IMAGES,
    "frames": FRAMES,
    "patch": PIXELS,
    "merge": PIXELS,
    "temporal_patch": FRAMES,
    "max_bytes": SIZE,
    "device_memory": SIZE,
    "expert_bytes": SIZE,
    "isl": CONTEXT,  # recommend's input and output lengths (tokens)
    "osl": CONTEXT,
    "num_speculative_tokens": DRAFT_TOKENS,  # speculative decoding (engine/speculative.py)
    "draft_tp": DEVICES,
    "lora_rank": LORA_RANK,  # LoRA and the encoder budget (cli/feature_options.py)
    "max_loras": LORA_SLOTS,
    "max_cpu_loras": LORA_SLOTS,
    "mm_max_pixels": MAX_PIXELS,
    "kv_disk": SIZE,  # offload and KV tiers (engine/offload.py)
    "host_memory": SIZE,
    "host_link": SIZE,
    "reload_tokens": TOKENS,
    "replicas": DEVICES,  # recommend's pinned replicas: each holds at least one device
    "requests": REQUESTS,
    "prefill_replicas": DEVICES,
    "decode_replicas": DEVICES,
}


def check_option(name: str, value: Any) -> None:
    """Check one parsed option against its bound (non-integers and None pass through)."""
    bound = OPTIONS.get(name)
    if bound is None or isinstance(value, bool) or not isinstance(value, int):
        return
    bound.check("--" + name.replace("_", "-"), value)


#: Hugging Face config.json keys by what they count. Keys not listed are sized by the
#: words in their names (config_bound), and every integer read has some bound.
CONFIG_KEYS: dict[str, Bound] = {
    "depth": LAYERS,
    "block_count": LAYERS,  # GGUF's {arch}.* keys, read the same way
    "embedding_length": WIDTH,
    "feed_forward_length": WIDTH,
    "expert_feed_forward_length": WIDTH,
    "expert_shared_feed_forward_length": WIDTH,
    "attention.key_length": WIDTH,
    "attention.value_length": WIDTH,
    "attention.key_length_mla": WIDTH,
    "attention.value_length_mla": WIDTH,
    "attention.head_count": HEADS,
    "attention.head_count_kv": HEADS,
    "context_length": CONTEXT,
    "vocab_size": VOCAB,
    "type_vocab_size": VOCAB,
    "num_labels": VOCAB,
    "pad_token_id": Bound(VOCAB.limit, "rows", VOCAB.reason, low=0),
    "max_num_tiles": IMAGES,
    "image_size": PIXELS,
    "patch_size": PIXELS,
    "spatial_merge_size": PIXELS,
    "temporal_patch_size": FRAMES,
    "num_mel_bins": WIDTH,
    "num_channels": WIDTH,
    "in_channels": WIDTH,
    # Qwen4-Exp's PLE hash modulus: the n-gram tables take the primes past it, so it bounds
    # the prime search, not a table (the class default is 20,000,000).
    "ngram_vocab_size_base": Bound(1 << 40, "rows", "a hash modulus 50,000x Qwen4-Exp's "
                                   "class default; the primes past it are found in "
                                   "microseconds each", low=2),
    # DeepSeek-V4.1's Engram hash tables: rows per table (the released ones hold 384 million).
    "engram_num_embeddings": Bound(1 << 36, "rows", "179x the rows of DeepSeek-V4.1-Flash's "
                                   "Engram tables (384,016,682)", low=0),
}

# Rotary bases are frequencies, not counts: bounded only as any number read is.
ROPE_BASE = Bound(RAW_NUMBER, "", "a rotary base is a frequency; only the bound on any number "
                  "read applies", low=1)

_CONFIG_WORDS: tuple[tuple[tuple[str, ...], Bound], ...] = (
    (("vocab",), VOCAB),  # before "layer": vocab_size_per_layer_input counts rows
    (("rope_theta", "base_freq", "rope_base"), ROPE_BASE),
    (("layer", "period", "step", "freq", "interval", "pattern", "offset", "replace",
      "block_count"), LAYERS),
    (("window", "chunk", "position", "tokens", "context"), CONTEXT),
    (("_size", "_dim", "_rank", "_length", "hidden", "d_model"), WIDTH),
    (("expert",), EXPERTS),
    (("head", "group"), HEADS),
    (("vocab",), VOCAB),
)


def config_bound(key: str) -> Bound:
    """The bound on an integer config key: listed, else by the words in its name, else WIDTH."""
    found = CONFIG_KEYS.get(key)
    if found is not None:
        return found
    words = key.lower()
    for parts, bound in _CONFIG_WORDS:
        if any(part in words for part in parts):
            return bound
    return WIDTH


# --- numbers as text --------------------------------------------------------------------

#: Digits in one dotted part of a version (`vllm@0.19.1`, `llamacpp@b7880`): real ones have
#: at most 5 (llama.cpp build numbers); a part longer than this is not a version.
VERSION_PART = 9


def number(field: str, value: Any, *, low: float = 0.0, high: float = float(RAW_NUMBER),
           integer: bool = False, low_open: bool = False) -> float | int:
    """`value` (text or a number from a flag, file or environment variable) as a finite number
    in [low, high] (`low_open`: above low), an int when `integer`; else InputError naming
    `field`. Text longer than NUMBER_TEXT is refused before it is converted, so a
    5,000-digit number never reaches int() or float()."""
    import math

    if isinstance(value, bool):
        raise InputError(field, f"expected a number, got {excerpt(value)}")
    if isinstance(value, str):
        text = value.strip()
        if len(text) > NUMBER_TEXT:
            raise InputError(field, f"expected a number of at most {NUMBER_TEXT} characters, "
                             f"got {excerpt(value)}")
        try:
            parsed: float | int = int(text) if integer else float(text)
        except ValueError:
            kind = "a whole number" if integer else "a number"
            raise InputError(field, f"expected {kind}, got {excerpt(value)}") from None
    elif isinstance(value, int | float):
        parsed = value
        if isinstance(value, int) and value.bit_length() > 200:
            raise InputError(field, f"must be at most {high:,g}, got {excerpt(value)}")
    else:
        raise InputError(field, f"expected a number, got {excerpt(value)}")
    if isinstance(parsed, float) and not math.isfinite(parsed):
        raise InputError(field, f"must be a finite number, got {excerpt(value)}")
    if integer and isinstance(parsed, float):
        if not parsed.is_integer():
            raise InputError(field, f"expected a whole number, got {excerpt(value)}")
        parsed = int(parsed)
    if parsed < low or (low_open and parsed == low):
        edge = "above" if low_open else "at least"
        raise InputError(field, f"must be {edge} {low:g}, got {excerpt(value)}")
    if parsed > high:
        raise InputError(field, f"must be at most {high:,g}, got {excerpt(value)}")
    return parsed


def version_parts(field: str, text: str) -> tuple[int, ...]:
    """A dotted version (`0.19.1`, `b7880`, `v1`) as integers, each part of at most
    VERSION_PART digits; else InputError naming `field`."""
    stripped = text.strip()
    parts = stripped.lstrip("vb").split(".")
    if not stripped or len(stripped) > NUMBER_TEXT or \
            not all(p.isascii() and p.isdigit() for p in parts):
        raise InputError(field, f"version {excerpt(text)} is not a dotted number such as 0.19")
    if any(len(p) > VERSION_PART for p in parts):
        raise InputError(field, f"version {excerpt(text)}: each part has at most "
                         f"{VERSION_PART} digits")
    return tuple(int(p) for p in parts)


# --- searches ---------------------------------------------------------------------------

#: Engines one request names, after repeats are dropped: every modelled engine era once.
ENGINES = Bound(32, "engines", "the registry models about 25 engine eras; a list names each "
                "at most once (repeats are dropped first)")
#: Engine × device searches one request asks for: each places and times every plan of one
#: engine on one device. 60 searches (6 engines × 10 devices) for an MoE model and eight
#: length bins take 13 s on one core; 64 keep any request well within a minute.
SEARCHES = Bound(64, "engine × device searches", "each search places and times every plan "
                 "of one engine on one device; 64 keep a request well within a minute")


#: Models one `compare` sets side by side: a table of more is not read, and each costs a load
#: and an inventory (1,000 took 10 s).
COMPARED = Bound(64, "models", "a side-by-side table of more is not read; each model costs a "
                 "load and an inventory")


def search_lists(engines: list[str], devices: list[str] | None = None) -> list[str]:
    """`engines` with repeats dropped (order kept), when they and `devices` (ids, also
    de-duplicated by the caller) stay within ENGINES and SEARCHES; else InputError naming the
    bound. A 1,000-entry engine list is one search per distinct engine, not 1,000."""
    distinct = list(dict.fromkeys(engines))
    ENGINES.check("engine", len(distinct))
    searches = len(distinct) * max(1, len(devices or []))
    if searches > SEARCHES.limit:
        raise InputError("engine", f"{len(distinct)} engines × {len(devices or [])} devices "
                         f"are {searches:,} searches; a request is limited to "
                         f"{SEARCHES.limit} ({SEARCHES.reason})")
    return distinct


# --- environment ------------------------------------------------------------------------

COLUMNS = Bound(10_000, "columns", "a terminal 10,000 characters wide is a typo; tables are "
                "readable at 80")


def env_columns() -> int | None:
    """$COLUMNS as a width: None when unset, empty or 0 (no width asked for); else a whole
    number within COLUMNS, or InputError naming the variable (exit 2)."""
    import os

    text = os.environ.get("COLUMNS", "").strip()
    if not text or text == "0":
        return None
    return int(number("COLUMNS", text, low=1, high=COLUMNS.limit, integer=True))
