"""vLLM's own command line, read back: `vllm serve MODEL --flag value …`.

Rules, from vLLM's source:
- The program: `vllm serve MODEL` (vllm/entrypoints/cli/serve.py) or the OpenAI server module
  `python -m vllm.entrypoints.openai.api_server --model MODEL`; the model is the positional
  argument or `--model`.
- Flags are spelt with dashes or underscores (`FlexibleArgumentParser`,
  vllm/utils/argparse_utils.py, turns `--max_model_len` into `--max-model-len`), as
  `--flag value` or `--flag=value`; the parallel sizes have short forms `-tp`, `-pp`, `-dp`.
- `--max-model-len` reads `32k` (32,000) and `32K` (32,768), as `human_readable_int`
  (vllm/engine/arg_utils.py) does; `--kv-cache-dtype` fp8, fp8_e4m3 and fp8_e5m2 are one
  byte; `--dtype auto` (and `--kv-cache-dtype auto`) keep the model's.
- `--enable-expert-parallel` spreads the experts over the TP × DP ranks
  (vllm/model_executor/layers/fused_moe/config.py `FusedMoEParallelConfig.make`).
- `--speculative-config JSON` (and the pre-0.8 `--speculative-model`,
  `--num-speculative-tokens`): speculative decoding, read by
  engine/serving/speculative_launch.py.
- `--enable-prefix-caching` / `--no-enable-prefix-caching` set the engine flag
  `enable_prefix_caching` (a hybrid model's state pages per request; engine/serving/paged.py).
Flags that do not change the memory figures (`--host`, `--port`, `--served-model-name` …) are
listed as ignored, never refused.
"""

from __future__ import annotations

from llm_inventory.bounds import SIZE, number
from llm_inventory.engine.serving.base import FlagValue, LaunchCommand
from llm_inventory.engine.serving.vllm_offload import VllmOffload
from llm_inventory.errors import InputError
from llm_inventory.units import normalize_dtype, parse_fraction, parse_tokens

PROGRAMS: tuple[tuple[str, ...], ...] = (
    ("vllm", "serve"),
    ("python", "-m", "vllm.entrypoints.openai.api_server"),
)

_SHORT = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size",
          "-dp": "--data-parallel-size", "-q": "--quantization"}
# Flags that take no value (vLLM's store_true / BooleanOptionalAction options), so the
# token after them is not swallowed as their value.
_SWITCHES = {"--enable-expert-parallel", "--enforce-eager", "--trust-remote-code",
             "--enable-prefix-caching", "--no-enable-prefix-caching",
             "--enable-chunked-prefill", "--no-enable-chunked-prefill",
             "--disable-log-requests", "--disable-log-stats", "--enable-auto-tool-choice",
             "--disable-custom-all-reduce", "--async-scheduling", "--headless",
             "--enable-reasoning", "--enable-lora", "--disable-frontend-multiprocessing",
             "--no-enable-log-requests", "--enable-log-requests", "--enable-sleep-mode",
             "--fully-sharded-loras", "--skip-mm-profiling"}
# Switches the accounting reads: the engine-flag name each sets, and to what.
_READ_SWITCHES = {"--enforce-eager": ("enforce_eager", True),
                  "--enable-prefix-caching": ("enable_prefix_caching", True),
                  "--no-enable-prefix-caching": ("enable_prefix_caching", False)}
_DTYPES = {"auto": None, "half": "fp16", "float16": "fp16", "bfloat16": "bf16",
           "float": "fp32", "float32": "fp32"}


def _int(flag: str, text: str, low: int = 1) -> int:
    """A whole-number flag, bounded (bounds.number): finite, few digits, at least `low`."""
    return int(number(flag, text, low=low, high=SIZE.limit, integer=True))


def _kv_dtype(text: str) -> str | None:
    key = text.strip().lower()
    if key == "auto":
        return None
    if key in ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"):
        return "fp8"
    if key in ("nvfp4", "nvfp4_ds_mla"):  # the era says where it keeps one
        return "nvfp4"
    try:
        return normalize_dtype(key, "--kv-cache-dtype")
    except InputError as exc:
        raise InputError("--kv-cache-dtype", f"unknown KV cache dtype {text!r}; vLLM takes "
                         "auto, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, nvfp4, bfloat16, "
                         "float16") from exc


# The flags this reader acts on, and real vLLM flags spelt close to them (vllm/engine/
# arg_utils.py EngineArgs.add_cli_args, vllm/entrypoints/openai/cli_args.py): a flag close to
# the first and none of the second is a misspelling vLLM itself refuses.
# speculative decoding (engine/serving/speculative_launch.py reads them)
SPECULATIVE_FLAGS = ("--speculative-config", "--speculative-model", "--num-speculative-tokens",
                     "--speculative-draft-tensor-parallel-size")
READ_FLAGS = (*VllmOffload.options, "--model", "--tensor-parallel-size", "--pipeline-parallel-size",
              "--data-parallel-size", "--enable-expert-parallel", "--max-model-len",
              "--gpu-memory-utilization", "--max-num-batched-tokens", "--max-num-seqs",
              "--block-size", "--kv-cache-dtype", "--dtype", "--quantization", "--swap-space",
              *_READ_SWITCHES, *SPECULATIVE_FLAGS)
_NEAR_REAL = frozenset({
    "--data-parallel-size-local", "--data-parallel-rank", "--data-parallel-start-rank",
    "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-backend",
    "--data-parallel-hybrid-lb", "--data-parallel-external-lb",
    "--decode-context-parallel-size", "--kv-cache-memory", "--kv-cache-memory-bytes",
    "--max-num-partial-prefills", "--max-long-partial-prefills", "--max-seq-len-to-capture",
    "--enable-eplb", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
    "--enable-prompt-tokens-details", "--enable-prefix-caching", "--prefix-caching-hash-algo",
    "--model-impl", "--model-loader-extra-config", "--mode", "--hf-token", "--seed",
    "--cpu-offload-gb", "--kv-offloading-size", "--mm-processor-cache-gb",
    "--tensor-parallel-size", "--pipeline-parallel-size", "--max-logprobs",
    "--max-num-batched-tokens", "--max-num-seqs", "--max-model-len", "--block-size",
    "--served-model-name", "--tokenizer", "--revision", "--code-revision",
    "--enable-expert-parallel", "--all2all-backend", "--expert-placement-strategy",
    "--kv-transfer-config", "--kv-events-config", "--kv-sharing-fast-prefill",
    "--calculate-kv-scales", "--kv-cache-dtype", "--dtype", "--quantization",
})


def misspelt(name: str) -> None:
    """InputError, in vLLM's own argparse words, for a flag spelt close to one the reader
    acts on that is not itself a vLLM flag: the prediction must not carry on without it."""
    import difflib

    if not name.startswith("--") or name in _NEAR_REAL or name in _SWITCHES:
        return
    if any(flag.startswith(name) for flag in (*READ_FLAGS, *_NEAR_REAL)):
        return  # argparse takes a prefix of one flag as that flag (allow_abbrev)
    close = difflib.get_close_matches(name, READ_FLAGS, n=1, cutoff=0.85)
    if close:
        raise InputError("launch", f"vllm: error: unrecognized arguments: {name} (the closest "
                         f"real flag is {close[0]})")


def split_args(argv: list[str]) -> list[tuple[str, str | None]]:
    """Pair each flag with its value: ('--flag', 'value'), ('--switch', None) and positional
    words as ('', word). A value-taking flag at the end is InputError."""
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-") or token == "-":
            pairs.append(("", token))
            i += 1
            continue
        name, eq, inline = token.partition("=")
        name = _SHORT.get(name, name)
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if eq:
            pairs.append((name, inline))
            i += 1
        elif name in _SWITCHES:
            pairs.append((name, None))
            i += 1
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            pairs.append((name, argv[i + 1]))
            i += 2
        else:
            pairs.append((name, None))
            i += 1
    return pairs


def parse_vllm(argv: list[str]) -> LaunchCommand:
    """A vLLM command line (after the program prefix) as a LaunchCommand; InputError for a
    malformed one (no model, a flag missing its value, a value vLLM refuses)."""
    fields: dict[str, object] = {}
    flags: dict[str, FlagValue] = {}
    understood: list[str] = []
    ignored: list[str] = []
    model: str | None = None
    expert_parallel = False
    speculative: dict[str, str] = {}
    from llm_inventory.engine.serving.feature_flags import VLLM, FeatureReader

    features = FeatureReader(VLLM)
    offload: dict[str, str | None] = {}  # vllm_offload.py reads them
    for name, value in split_args(argv):
        if not name and features.take_word(str(value)):
            continue
        if features.take(name, value):
            continue
        if not name:
            if model is None:
                model = value
                continue
            raise InputError("launch", f"unexpected argument {value!r} (vLLM takes one model)")

        def need(flag: str = name, given: str | None = value) -> str:
            if given is None:
                raise InputError(flag, "is missing its value")
            return given

        if name == "--model":
            model = need()
        elif name == "--tensor-parallel-size":
            fields["tp"] = _int(name, need())
        elif name == "--pipeline-parallel-size":
            fields["pp"] = _int(name, need())
        elif name == "--data-parallel-size":
            fields["dp"] = _int(name, need())
        elif name == "--enable-expert-parallel":
            expert_parallel = True
        elif name == "--max-model-len":
            text = need().strip()
            if text.lower() in ("auto", "-1"):  # the longest context the pool holds (#29431)
                flags["max_model_len_auto"] = True
            else:
                fields["context"] = parse_tokens(text, name)
        elif name == "--gpu-memory-utilization":
            fields["memory_fraction"] = parse_fraction(need(), name)
        elif name == "--max-num-batched-tokens":
            fields["max_num_batched_tokens"] = parse_tokens(need(), name)
        elif name == "--max-num-seqs":
            fields["max_num_seqs"] = _int(name, need())
        elif name == "--block-size":
            fields["block_size"] = _int(name, need())
        elif name in ("--kv-cache-memory-bytes", "--kv-cache-memory"):
            from llm_inventory.engine.serving.vllm import KV_CACHE_MEMORY, kv_cache_memory

            flags[KV_CACHE_MEMORY] = kv_cache_memory(need())
        elif name == "--kv-cache-dtype":
            fields["kv_dtype"] = _kv_dtype(need())
        elif name == "--dtype":
            text = need().strip().lower()
            if text not in _DTYPES:
                raise InputError(name, f"unknown dtype {text!r}; vLLM takes "
                                 + ", ".join(_DTYPES))
            fields["dtype"] = _DTYPES[text]
        elif name == "--quantization":
            text = need().strip().lower()
            if text == "fp8":
                fields["dtype"] = "fp8"  # quantized at load time, one scale per tensor
            else:
                ignored.append(f"{name} {text}")  # a checkpoint's own scheme is read from it
                continue
        elif name == "--swap-space":
            try:
                flags["swap_space"] = float(need())
            except ValueError as exc:
                raise InputError(name, f"expected GiB, got {value!r}") from exc
        elif name in _READ_SWITCHES:
            flag, on = _READ_SWITCHES[name]
            flags[flag] = on
        elif name in SPECULATIVE_FLAGS:  # read together once all are known
            speculative[name] = need()
        elif name in VllmOffload.options:
            offload[name] = need()
        elif name == "--kv-transfer-config" and any(
                c in (value or "") for c in VllmOffload.connectors):
            offload[name] = need()
        else:
            misspelt(name)
            ignored.append(name if value is None else f"{name} {value}")
            continue
        understood.append(name if value is None else f"{name} {value}")
    if model is None:
        raise InputError("launch", "no model: give it as `vllm serve MODEL` or --model")
    if expert_parallel:
        tp = int(str(fields.get("tp", 1)))
        dp = int(str(fields.get("dp", 1)))
        fields["ep"] = tp * dp
    if speculative:
        from llm_inventory.engine.serving.speculative_launch import vllm_read

        fields["speculative"] = vllm_read(speculative)
    fields.update(features.fields())
    if features.enabled or not any(t.startswith(("--max-lora", "--max-cpu", "--lora", "--fully"))
                                   for t in features.texts):
        understood += features.texts
    else:  # LoRA flags without --enable-lora: vLLM makes no LoRA config of them
        ignored += features.texts
    if offload:
        fields["offload"] = VllmOffload().read(
            offload, int(str(fields.get("tp", 1))) * int(str(fields.get("pp", 1))))
    return LaunchCommand.model_validate({"engine": "vllm", "model": model, "flags": flags,
                                         "understood": understood, "ignored": ignored,
                                         **fields})
