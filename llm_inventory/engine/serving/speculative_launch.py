"""Speculative decoding on each engine's command line: read into `Speculative` (the draft
named, not loaded) and written back in the engine's own flags.

- vLLM: `--speculative-config JSON` with `method`, `model`, `num_speculative_tokens`,
  `draft_tensor_parallel_size` (vllm/config/speculative.py SpeculativeConfig; the JSON is
  read by vllm/engine/arg_utils.py EngineArgs). Without `method` vLLM names it from the
  draft: an `eagle3` / `eagle` model name, else a draft model. Releases before 0.8 took
  `--speculative-model`, `--num-speculative-tokens` and
  `--speculative-draft-tensor-parallel-size`.
- SGLang: `--speculative-algorithm EAGLE|EAGLE3|NEXTN|STANDALONE|NGRAM`,
  `--speculative-draft-model-path`, `--speculative-num-steps` (the tokens drafted a step),
  `--speculative-eagle-topk`, `--speculative-num-draft-tokens` (python/sglang/srt/
  server_args.py ServerArgs; NEXTN is EAGLE over the checkpoint's MTP layers). Without the
  step count SGLang picks one per model; 3 is assumed here.
- llama.cpp: `-md`/`--model-draft FILE`, `--draft-max`/`--draft`/`--draft-n N` (default 16),
  `-ngld`/`--gpu-layers-draft`, `-cd`/`--ctx-size-draft` (common/arg.cpp; the draft's
  defaults in common/common.h `common_params_speculative`).
- TensorRT-LLM: `speculative_config` in the LLM API options YAML, `decoding_type` Eagle,
  Eagle3, MTP, DraftTarget or NGram, `max_draft_len`, `speculative_model_dir` (or
  `speculative_model`), `num_nextn_predict_layers` for MTP (tensorrt_llm/llmapi/llm_args.py
  DecodingBaseConfig and its subclasses).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from llm_inventory.bounds import DEVICES, number
from llm_inventory.engine.speculative import MAX_SPECULATIVE_TOKENS, Speculative, method_of
from llm_inventory.errors import InputError, excerpt

CONFIG_TEXT = 4096  # characters of a --speculative-config JSON read at most
SGLANG_DEFAULT_STEPS = 3
LLAMACPP_DRAFT_MAX = 16  # common_params_speculative.n_max


def _count(field: str, value: object, high: int = MAX_SPECULATIVE_TOKENS) -> int:
    """A whole number of at least 1 and at most `high` (bounds.DRAFT_TOKENS for tokens)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(field, f"{value!r} is not a whole number")
    return int(number(field, str(value), low=1, high=high, integer=True))


def _guess(model: str | None) -> str:
    """vLLM's method for a draft named without one: EAGLE-3 or EAGLE heads by their
    names, else a draft model (SpeculativeConfig.__post_init__)."""
    name = (model or "").lower()
    if "eagle3" in name or "eagle-3" in name:
        return "eagle3"
    if "eagle" in name:
        return "eagle"
    return "draft_model"


# --- vLLM -------------------------------------------------------------------------------

VLLM_FLAGS = ("--speculative-config", "--speculative-model", "--num-speculative-tokens",
              "--speculative-draft-tensor-parallel-size")


def vllm_read(values: Mapping[str, str]) -> Speculative:
    """vLLM's speculative flags (by their dashed names) as a Speculative."""
    if "--speculative-config" in values:
        text = values["--speculative-config"]
        if len(text) > CONFIG_TEXT:
            raise InputError("--speculative-config", f"longer than {CONFIG_TEXT:,} "
                             "characters; a speculative config is a short JSON object")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError("--speculative-config", f"not JSON: {excerpt(text)} ({exc.msg})"
                             ) from None
        if not isinstance(data, dict):
            raise InputError("--speculative-config", "must be a JSON object such as "
                             '{"method": "eagle3", "model": "…", "num_speculative_tokens": 3}')
    else:
        data = {"model": values.get("--speculative-model"),
                "num_speculative_tokens": values.get("--num-speculative-tokens"),
                "draft_tensor_parallel_size":
                    values.get("--speculative-draft-tensor-parallel-size")}
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise InputError("--speculative-config", "model must be a string")
    method = method_of(str(data["method"]), "--speculative-config") \
        if data.get("method") is not None else _guess(model)
    k = data.get("num_speculative_tokens")
    if k is None:
        if method != "mtp":
            raise InputError("--speculative-config", "num_speculative_tokens is missing "
                             "(vLLM needs it unless the draft's config gives it)")
        k = 1  # the MTP layers' own count (n_predict), one in the checkpoints modelled
    draft_tp = data.get("draft_tensor_parallel_size")
    return Speculative(
        method=method, num_speculative_tokens=_count("num_speculative_tokens", k),
        draft=model if method not in ("mtp", "ngram", "suffix") else None,
        draft_tp=_count("draft_tensor_parallel_size", draft_tp, DEVICES.limit)
        if draft_tp is not None else None)


def vllm_args(asked: Speculative) -> list[str]:
    """`--speculative-config` for `asked`, keys in a stable order."""
    data: dict[str, object] = {"method": asked.method}
    if asked.draft:
        data["model"] = asked.draft
    data["num_speculative_tokens"] = asked.num_speculative_tokens
    if asked.draft_tp is not None:
        data["draft_tensor_parallel_size"] = asked.draft_tp
    return ["--speculative-config", json.dumps(data, separators=(",", ":"))]


# --- SGLang -----------------------------------------------------------------------------

SGLANG_FLAGS = ("--speculative-algorithm", "--speculative-draft-model-path",
                "--speculative-num-steps", "--speculative-eagle-topk",
                "--speculative-num-draft-tokens")
_SGLANG_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "nextn": "mtp",
                   "standalone": "draft_model", "ngram": "ngram"}
_SGLANG_WORDS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN",
                 "draft_model": "STANDALONE", "ngram": "NGRAM", "suffix": "NGRAM"}


def sglang_read(values: Mapping[str, str]) -> Speculative | None:
    """SGLang's speculative flags as a Speculative (None without an algorithm)."""
    algorithm = values.get("--speculative-algorithm")
    if algorithm is None:
        if values:
            raise InputError("--speculative-algorithm", "the other --speculative-* flags "
                             "need it: EAGLE, EAGLE3, NEXTN, STANDALONE or NGRAM")
        return None
    method = _SGLANG_METHODS.get(algorithm.strip().lower())
    if method is None:
        raise InputError("--speculative-algorithm", f"{algorithm!r} is not one of EAGLE, "
                         "EAGLE3, NEXTN, STANDALONE, NGRAM")
    if "--speculative-num-steps" in values:
        k = _count("--speculative-num-steps", values["--speculative-num-steps"])
    elif "--speculative-num-draft-tokens" in values:
        k = max(1, _count("--speculative-num-draft-tokens",
                          values["--speculative-num-draft-tokens"]) - 1)
    else:
        k = SGLANG_DEFAULT_STEPS
    if "--speculative-eagle-topk" in values:
        _count("--speculative-eagle-topk", values["--speculative-eagle-topk"], 1 << 10)
    draft = values.get("--speculative-draft-model-path")
    return Speculative(method=method, num_speculative_tokens=k,
                       draft=draft if method not in ("mtp", "ngram") else None)


def sglang_args(asked: Speculative) -> list[str]:
    args = ["--speculative-algorithm", _SGLANG_WORDS[asked.method]]
    if asked.draft:
        args += ["--speculative-draft-model-path", asked.draft]
    k = asked.num_speculative_tokens
    if asked.method == "ngram" or asked.method == "suffix":
        return args + ["--speculative-num-draft-tokens", str(k + 1)]
    return args + ["--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
                   "--speculative-num-draft-tokens", str(k + 1)]


# --- llama.cpp --------------------------------------------------------------------------

def llamacpp_read(draft: str | None, draft_max: str | None) -> Speculative | None:
    """`-md FILE` and `--draft-max N` as a Speculative (None without a draft model)."""
    if draft is None:
        if draft_max is not None:
            raise InputError("--draft-max", "needs a draft model (-md FILE.gguf)")
        return None
    k = _count("--draft-max", draft_max) if draft_max is not None else LLAMACPP_DRAFT_MAX
    return Speculative(method="draft_model", num_speculative_tokens=k, draft=draft)


def llamacpp_args(asked: Speculative) -> list[str]:
    if asked.method != "draft_model" or not asked.draft:
        return []
    args = ["-md", asked.draft, "--draft-max", str(asked.num_speculative_tokens)]
    if asked.draft_cache_types is not None:  # the draft's own cache types (F16 unless given)
        args += ["-ctkd", asked.draft_cache_types[0], "-ctvd", asked.draft_cache_types[1]]
    return args


# --- TensorRT-LLM -----------------------------------------------------------------------

_TRTLLM_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp",
                   "drafttarget": "draft_model", "ngram": "ngram"}


def trtllm_read(options: object) -> Speculative | None:
    """The `speculative_config` mapping of an LLM API options file (None: absent)."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InputError("speculative_config", "must be a mapping with decoding_type")
    kind = str(options.get("decoding_type", "")).strip().lower().replace("_", "")
    method = _TRTLLM_METHODS.get(kind)
    if method is None:
        raise InputError("speculative_config", f"decoding_type {options.get('decoding_type')!r}"
                         " is not one of Eagle, Eagle3, MTP, DraftTarget, NGram")
    if method == "mtp":
        k = options.get("num_nextn_predict_layers", options.get("max_draft_len", 1))
    else:
        k = options.get("max_draft_len")
        if k is None:
            raise InputError("speculative_config", "max_draft_len is missing")
    draft = options.get("speculative_model_dir", options.get("speculative_model"))
    return Speculative(method=method, num_speculative_tokens=_count(
        "max_draft_len", k), draft=str(draft) if draft and method not in ("mtp", "ngram")
        else None)
