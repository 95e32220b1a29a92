"""Speculative decoding inside the fit (engine/speculative.py): the drafter's memory as each
engine places it, the lookahead slots, the time at the user's acceptance rate, the engines'
own flags read and written, and nothing changed when it is off."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.launch import match_program, predict_launch
from llm_inventory.engine.launch_lines import with_launch_lines
from llm_inventory.engine.placement import PlacementRequest, PlacementResult, Plan, plan_placement
from llm_inventory.engine.serving import get
from llm_inventory.engine.speculative import Speculative, accepted_length, method_of
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.presets import load_preset
from tests.reference import DATA

QWEN3_06B = DATA / "engine-logs" / "configs" / "Qwen--Qwen3-0.6B.json"
GIB = 1 << 30


def _plan(model: str, speculative: Speculative | None, *, engine: str = "vllm",
          device: str = "h100", count: int = 1, tp: int | None = 1,
          **extra: object) -> PlacementResult:
    request = PlacementRequest(device=resolve_device(device), count=count, tp=tp,
                               engine=engine, speculative=speculative, limit=0, **extra)
    return plan_placement(load_preset(model), request)


def _draft() -> Speculative:
    return Speculative(method="draft_model", num_speculative_tokens=4, draft="Qwen/Qwen3-0.6B",
                       draft_spec=load_model(str(QWEN3_06B)))


# --- the formula ------------------------------------------------------------------------

@pytest.mark.parametrize(("a", "k", "expected"), [
    (0.0, 3, 1.0), (1.0, 3, 4.0), (0.5, 3, 1.875), (0.8, 5, (1 - 0.8 ** 6) / 0.2)])
def test_accepted_length_is_the_geometric_sum(a: float, k: int, expected: float) -> None:
    assert accepted_length(a, k) == pytest.approx(expected)


@given(st.floats(0, 1), st.integers(1, 64))
def test_accepted_length_between_one_and_k_plus_one(a: float, k: int) -> None:
    assert 1.0 - 1e-9 <= accepted_length(a, k) <= k + 1 + 1e-9


# --- memory -----------------------------------------------------------------------------

def test_draft_model_adds_its_own_kv_per_token_and_weights_on_vllm() -> None:
    off = _plan("qwen3-8b", None).plans[0].per_device
    on = _plan("qwen3-8b", _draft()).plans[0]
    assert off is not None and on.per_device is not None and on.speculative is not None
    # Qwen3-8B 36 × 2 × 8 × 128 × 2 B and Qwen3-0.6B 28 × 2 × 8 × 128 × 2 B, one block
    # holding both (vllm/v1/core/kv_cache_utils.py: one spec over every attention layer)
    assert off.kv_bytes_per_token == 147_456
    assert on.per_device.kv_bytes_per_token == 147_456 + 114_688
    assert on.speculative.draft_kv_bytes_per_token == 114_688
    assert on.speculative.draft_kv_layers == 28
    # the draft's own tied-embedding count in bf16, placed like any model
    assert on.per_device.weight_bytes - off.weight_bytes == on.speculative.draft_weight_bytes
    assert 1.10 * GIB < on.speculative.draft_weight_bytes < 1.13 * GIB
    assert on.per_device.kv_capacity_tokens < off.kv_capacity_tokens


def test_mtp_places_the_checkpoint_layers_vllm_sharing_the_vocabulary() -> None:
    spec_v3 = Speculative(method="mtp", num_speculative_tokens=1)
    off = _plan("deepseek-v3", None, device="h200", count=8, tp=8).plans[0].per_device
    on = _plan("deepseek-v3", spec_v3, device="h200", count=8, tp=8).plans[0]
    assert off is not None and on.per_device is not None and on.speculative is not None
    # one more MLA layer: 576 latent values in bf16 on every rank
    assert on.per_device.kv_bytes_per_token - off.kv_bytes_per_token == 1_152
    sglang = _plan("deepseek-v3", spec_v3, engine="sglang", device="h200", count=8,
                   tp=8).plans[0].speculative
    assert sglang is not None
    # SGLang keeps the MTP module's own embedding and head (sglang#32468): 2 × 129,280 ×
    # 7,168 × 2 B over 8 ranks more than vLLM, which takes the target's
    extra = sglang.draft_weight_bytes - on.speculative.draft_weight_bytes
    assert extra == pytest.approx(2 * 129_280 * 7_168 * 2 / 8, rel=1e-6)


def test_mtp_layer_keeps_its_own_kind_after_linear_attention_layers() -> None:
    on = _plan("qwen3.5-27b", Speculative(method="mtp", num_speculative_tokens=2)).plans[0]
    assert on.speculative is not None
    # one full-attention layer (4 KV heads × 256 × 2 × bf16), not a Gated DeltaNet state
    assert on.speculative.draft_kv_bytes_per_token == 4_096


def test_ngram_holds_no_memory_but_the_lookahead_slots() -> None:
    on = _plan("llama-3.1-8b", Speculative(method="ngram", num_speculative_tokens=4),
               context=8000).plans[0]
    assert on.speculative is not None
    assert on.speculative.draft_weight_bytes == on.speculative.draft_kv_bytes_per_token == 0
    # 8,000 + 4 tokens need one more 16-token block than 8,000: 16 × 128 KiB
    assert on.speculative.lookahead_bytes_per_sequence == 16 * 131_072


def test_an_engine_that_does_not_budget_the_drafter_warns_of_what_comes_on_top() -> None:
    on = _plan("qwen3-8b", _draft(), engine="sglang@0.5.6", max_num_seqs=8).plans[0]
    off = _plan("qwen3-8b", None, engine="sglang@0.5.6", max_num_seqs=8).plans[0]
    assert on.speculative is not None and on.per_device is not None
    assert off.per_device is not None
    assert not on.speculative.weights_budgeted and not on.speculative.kv_budgeted
    # the pool is sized as if the draft were absent (profiled before it loads), then every
    # request slot's 4 draft and 5 verify tokens and 100 more are added
    assert on.per_device.kv_capacity_tokens == off.per_device.kv_capacity_tokens + 8 * 9 + 100
    assert on.speculative.on_top_bytes > on.speculative.draft_weight_bytes > 0
    assert any("beyond the engine's budget" in w for w in on.warnings)
    newest = _plan("qwen3-8b", _draft(), engine="sglang").plans[0]
    assert newest.speculative is not None and newest.speculative.on_top_bytes == 0


def test_vllm_v0_budgets_the_proposer_kv_not_its_weights() -> None:
    on = _plan("qwen3-8b", _draft(), engine="vllm@0.6").plans[0]
    assert on.speculative is not None
    assert on.speculative.kv_budgeted and not on.speculative.weights_budgeted
    assert on.speculative.on_top_bytes == on.speculative.draft_weight_bytes


def test_vllm_draft_tp_is_one_or_the_targets() -> None:
    asked = _draft().model_copy(update={"draft_tp": 3})
    with pytest.raises(InputError, match="draft_tp"):
        _plan("qwen3-8b", asked, count=4, tp=4)
    ok = _plan("qwen3-8b", _draft().model_copy(update={"draft_tp": 1}), count=2, tp=2)
    assert ok.plans[0].speculative is not None and ok.plans[0].speculative.draft_tp == 1


def test_bad_requests_are_input_errors() -> None:
    with pytest.raises(InputError, match="draft_model"):
        _plan("qwen3-8b", Speculative(method="draft_model", num_speculative_tokens=3))
    with pytest.raises(InputError, match="no multi-token-prediction"):
        _plan("qwen3-8b", Speculative(method="mtp", num_speculative_tokens=1))
    with pytest.raises(InputError, match="unknown speculative method"):
        method_of("medusa2")


# --- the real start-up ------------------------------------------------------------------

def test_vllm_eagle3_loading_line_replays() -> None:
    """vllm-project/speculators#166: Llama-3.1-8B-Instruct with its EAGLE-3 head printed
    "Model loading took 15.8114 GiB". In-sample: the head's estimate was chosen on it."""
    record = json.loads((DATA / "speculative-startups.json").read_text())["records"][0]
    assert record["use"].startswith("in-sample")
    plan = _plan("llama-3.1-8b", Speculative(method="eagle3", num_speculative_tokens=3),
                 engine="vllm@0.11", context=1024, gpu_memory_utilization=0.8).plans[0]
    assert plan.per_device is not None
    printed = record["figures"]["weights_gib"]
    assert plan.per_device.weight_bytes / GIB == pytest.approx(printed, rel=0.001)
    assert plan.speculative is not None
    assert plan.speculative.trust["speculative"].kind == "estimate"


# --- time -------------------------------------------------------------------------------

def test_time_rests_on_the_acceptance_rate_and_says_so() -> None:
    asked = _draft().model_copy(update={"acceptance": 0.7})
    result = _plan("qwen3-8b", asked)
    s = result.plans[0].speculative
    timing = result.plans[0].timing
    assert s is not None and timing is not None and s.effective_tpot_s is not None
    assert s.accepted_tokens_per_step == pytest.approx(accepted_length(0.7, 4), abs=1e-4)
    assert s.draft_step_s is not None and s.draft_step_s > 0
    assert s.effective_tpot_s == pytest.approx(
        (timing.tpot_s + s.draft_step_s) / accepted_length(0.7, 4))
    assert "acceptance rate" in result.trust["speculative_time"].basis
    assert result.trust["speculative_time"].kind == "estimate"
    none = _plan("qwen3-8b", _draft())
    assert "speculative_time" not in none.trust
    assert none.plans[0].speculative is not None
    assert none.plans[0].speculative.effective_tpot_s is None


# --- off changes nothing ----------------------------------------------------------------

PRESETS = ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v2-lite", "gemma-3-27b", "qwen3.5-27b",
           "gpt-oss-20b", "deepseek-v3"]
DEVICES = ["h100", "a100-80gb", "rtx-4090", "h200"]
ENGINES = ["vllm", "vllm@0.19", "vllm@0.6", "sglang", "sglang@0.4.7", "trtllm", "llamacpp"]
HYBRID = {"qwen3.5-27b"}  # Gated DeltaNet state beside attention
VLLM_V1 = {"vllm", "vllm@0.19"}


def _figures(result: PlacementResult) -> list[object]:
    return [(p.tp, p.pp, p.ep, p.fits, p.max_concurrency, p.per_device, p.stages, p.timing,
             p.startup, p.warnings) for p in result.plans]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PRESETS), st.sampled_from(DEVICES), st.sampled_from(ENGINES),
       st.sampled_from([1, 2, 4]))
def test_speculation_without_memory_leaves_every_figure_unchanged(
        model: str, device: str, engine: str, count: int) -> None:
    """Off (None) and n-gram drafting (no drafter) give the same plans, figure for figure;
    off adds no speculative block and no trust group."""
    try:
        off = _plan(model, None, engine=engine, device=device, count=count, tp=None)
    except InputError:
        return  # the engine refuses this model or device: nothing to compare
    ngram = _plan(model, Speculative(method="ngram", num_speculative_tokens=3), engine=engine,
                  device=device, count=count, tp=None)
    if model in HYBRID and engine in VLLM_V1:
        # vLLM's state layers keep one block more per drafted token and request
        # (MambaSpec.num_speculative_blocks): fewer requests fit; the weights and the pool
        # do not move. Fewer requests can reorder the plans (best throughput first): compare
        # split by split. The conv window grows by the drafted tokens, so the state page, and
        # the attention block sized to hold it, grow (Qwen3.5-27B at tp 2 on an H100: 784 →
        # 800 tokens); where vLLM prints whole blocks per group × the block (0.19), the
        # tokens can then round up, by less than one block per group (at most 8 groups).
        def split(p: Plan) -> tuple[object, ...]:
            return (p.tp, p.pp, p.ep, p.dp, p.devices_used, str(p.disaggregation))

        for a, b in zip(sorted(off.plans, key=split), sorted(ngram.plans, key=split),
                        strict=True):
            assert a.per_device is not None and b.per_device is not None
            # Per stage: the binding stage itself can change when the state per request
            # grows unevenly across stages.
            workers = list(zip(a.stages or [a.per_device], b.stages or [b.per_device],
                               strict=True))
            for before, after in workers:
                assert (before.weight_bytes, before.kv_pool_bytes) == (after.weight_bytes,
                                                                       after.kv_pool_bytes)
                blocks = min(before.kv_blocks or 0, after.kv_blocks or 0)
                rounding = 8 / blocks if blocks else 0
                assert (after.kv_capacity_tokens or 0) <= (before.kv_capacity_tokens or 0) * (
                    1 + rounding)
            assert (b.max_concurrency or 0) <= (a.max_concurrency or 0)
    else:
        assert _figures(off) == _figures(ngram)
    assert all(p.speculative is None for p in off.plans)
    assert not any(key.startswith("speculative") for key in off.trust)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["llama-3.1-8b", "qwen3-8b", "qwen2.5-7b"]),
       st.sampled_from(["vllm", "sglang", "trtllm", "llamacpp"]), st.integers(1, 8))
def test_a_drafter_never_adds_room(model: str, engine: str, k: int) -> None:
    asked = Speculative(method="eagle3", num_speculative_tokens=k)
    off = _plan(model, None, engine=engine)
    on = _plan(model, asked, engine=engine)
    for a, b in zip(off.plans, on.plans, strict=True):
        if a.per_device is None or b.per_device is None:
            continue
        assert b.per_device.weight_bytes >= a.per_device.weight_bytes
        assert b.per_device.kv_bytes_per_token >= a.per_device.kv_bytes_per_token
        if engine != "sglang":  # SGLang adds draft and verify headroom tokens to its pool
            assert (b.max_concurrency or 0) <= (a.max_concurrency or 0) + 1e-9
        else:
            assert b.per_device.kv_pool_bytes <= a.per_device.kv_pool_bytes


# --- the engines' own command lines -----------------------------------------------------

LINES = [
    ("vllm serve Qwen/Qwen3-8B --speculative-config "
     "'{\"method\":\"eagle3\",\"model\":\"x/EAGLE3-Qwen3-8B\",\"num_speculative_tokens\":5}'",
     ("eagle3", 5, "x/EAGLE3-Qwen3-8B")),
    ("vllm serve Qwen/Qwen3-8B --speculative_config "
     "'{\"model\":\"org/EAGLE-Qwen3\",\"num_speculative_tokens\":2}'",
     ("eagle", 2, "org/EAGLE-Qwen3")),
    ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\":\"ngram\","
     "\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'", ("ngram", 4, None)),
    ("vllm serve deepseek-ai/DeepSeek-V3 --speculative-config "
     "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'", ("mtp", 1, None)),
    ("vllm serve Qwen/Qwen3-8B --speculative-model Qwen/Qwen3-0.6B "
     "--num-speculative-tokens 4", ("draft_model", 4, "Qwen/Qwen3-0.6B")),
    ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --speculative-algorithm EAGLE3 "
     "--speculative-draft-model-path x/EAGLE3 --speculative-num-steps 3 "
     "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4", ("eagle3", 3, "x/EAGLE3")),
    ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
     "--speculative-algorithm NEXTN --speculative-num-draft-tokens 2", ("mtp", 1, None)),
    ("llama-server -m target.gguf -md draft.gguf --draft-max 8 -ngld 99",
     ("draft_model", 8, "draft.gguf")),
    ("llama-server -m target.gguf -md draft.gguf", ("draft_model", 16, "draft.gguf")),
]


@pytest.mark.parametrize(("line", "expected"), LINES)
def test_engine_flags_read_as_speculation(line: str, expected: tuple[str, int, str | None]
                                          ) -> None:
    era, rest = match_program(shlex.split(line))
    command = era.parse_launch(rest)
    assert command.speculative is not None
    s = command.speculative
    assert (s.method, s.num_speculative_tokens, s.draft) == expected
    assert not any("specul" in flag or "draft" in flag or flag.startswith("-md")
                   for flag in command.ignored)


def test_trtllm_speculative_config_is_read_from_its_options() -> None:
    era, rest = match_program(shlex.split("trtllm-serve Qwen/Qwen3-8B"))
    command = era.with_options(era.parse_launch(rest), {"speculative_config": {
        "decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model_dir": "x/EAGLE3"}})
    assert command.speculative == Speculative(method="eagle3", num_speculative_tokens=3,
                                              draft="x/EAGLE3")
    mtp = era.with_options(era.parse_launch(rest), {"speculative_config": {
        "decoding_type": "MTP", "num_nextn_predict_layers": 2}})
    assert mtp.speculative is not None and mtp.speculative.method == "mtp"
    assert mtp.speculative.num_speculative_tokens == 2


@pytest.mark.parametrize("line", [
    "vllm serve m --speculative-config '{not json'",
    "vllm serve m --speculative-config '[1]'",
    "vllm serve m --speculative-config '{\"method\":\"eagle\"}'",
    "vllm serve m --speculative-config '{\"method\":\"wild\",\"num_speculative_tokens\":2}'",
    "vllm serve m --speculative-config '{\"method\":\"eagle\",\"num_speculative_tokens\":1e9}'",
    "python -m sglang.launch_server --model-path m --speculative-algorithm MEDUSA",
    "python -m sglang.launch_server --model-path m --speculative-num-steps 3",
    "llama-server -m t.gguf --draft-max 8",
    "llama-server -m t.gguf -md d.gguf --draft-max -2",
])
def test_malformed_speculative_flags_are_input_errors(line: str) -> None:
    era, rest = match_program(shlex.split(line))
    with pytest.raises(InputError):
        era.parse_launch(rest)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_written_lines_read_back_to_the_same_plan(engine: str) -> None:
    """A plan with a draft model, written in the engine's flags and read back through its
    parser, is the same plan: split, drafter, pool and concurrency."""
    device = resolve_device("h100")
    asked = _draft()
    request = PlacementRequest(device=device, count=2, engine=engine, speculative=asked,
                               limit=4)
    spec = load_preset("qwen3-8b")
    result = with_launch_lines(plan_placement(spec, request), request, "qwen3-8b")
    checked = 0
    for plan in result.plans:
        if not plan.fits or not plan.launch or plan.disaggregation:
            continue
        era, rest = match_program(shlex.split(plan.launch[0]))
        command = era.parse_launch(rest)
        assert command.speculative is not None
        assert (command.speculative.method, command.speculative.num_speculative_tokens,
                command.speculative.draft) == ("draft_model", 4, "Qwen/Qwen3-0.6B")
        loaded = command.speculative.model_copy(update={"draft_spec": asked.draft_spec})
        read = predict_launch(spec, command, get(f"{engine}@{result.engine_version}"),
                              device, speculative=loaded).plan
        assert (read.tp, read.pp, read.ep) == (plan.tp, plan.pp, plan.ep)
        assert read.per_device is not None and plan.per_device is not None
        assert read.per_device.kv_capacity_tokens == plan.per_device.kv_capacity_tokens
        assert read.per_device.weight_bytes == plan.per_device.weight_bytes
        assert read.speculative is not None and plan.speculative is not None
        assert read.speculative.draft_kv_bytes_per_token == \
            plan.speculative.draft_kv_bytes_per_token
        checked += 1
    assert checked


def test_sglang_gives_every_request_slot_draft_and_verify_headroom() -> None:
    """SGLang adds max_num_reqs × (steps × topk + num_draft_tokens) + 100 tokens to the
    profiled pool (model_runner.py init_memory_pool: draft_runner_cache_size)."""
    from llm_inventory.engine.placement.facts import model_facts

    asked = Speculative(method="eagle3", num_speculative_tokens=3)
    request = PlacementRequest(device=resolve_device("h100"), count=1, tp=1, engine="sglang",
                               max_num_seqs=16, speculative=asked)
    facts = model_facts(load_preset("qwen3-8b"), request)
    layers = facts.kv_layers(1, 0, facts.layers)
    plain = facts.engine.pool_layout(layers, facts.settings.model_copy(
        update={"speculative_tokens_per_request": 0}))
    spec = facts.engine.pool_layout(layers, facts.settings)
    pool = 40 * GIB
    assert spec.measure(pool)[1] - plain.measure(pool)[1] == 16 * (3 * 1 + 4) + 100
    ngram = facts.engine.speculative_settings(
        facts.settings.model_copy(update={"speculative_tokens_per_request": 0}),
        Speculative(method="ngram", num_speculative_tokens=3))
    assert facts.engine.pool_layout(layers, ngram).measure(pool) == plain.measure(pool)


def test_llamacpp_types_the_draft_cache_f16_whatever_the_targets() -> None:
    """llama.cpp's draft context has its own cache types, -ctkd/-ctvd, F16 unless given
    (common/common.h common_params_speculative_draft): a q8_0 target cache leaves the
    draft's at F16, and -ctkd/-ctvd q8_0 shrink it to q8_0's 34 bytes a block of 32."""
    def draft_kv(line: str) -> int:
        era, rest = match_program(shlex.split(line))
        command = era.parse_launch(rest)
        assert command.speculative is not None
        loaded = command.speculative.model_copy(update={
            "draft_spec": load_model(str(QWEN3_06B))})
        plan = predict_launch(load_preset("qwen3-8b"), command, era, resolve_device("h100"),
                              speculative=loaded).plan
        assert plan.speculative is not None
        return plan.speculative.draft_kv_bytes_per_token

    base = "llama-server -m qwen3-8b.gguf -md qwen3-0.6b.gguf -c 8192"
    f16 = draft_kv(base)
    # Qwen3-0.6B: 28 layers × 8 KV heads × 128 × K and V at 2 bytes
    assert f16 == 28 * 8 * 128 * 2 * 2
    assert draft_kv(base + " -ctk q8_0 -ctv q8_0") == f16
    assert draft_kv(base + " -ctkd q8_0 -ctvd q8_0") == 28 * 8 * 128 * 2 * 34 // 32
    era, rest = match_program(shlex.split(base + " -ctkd q8_0 -ctvd q8_0"))
    command = era.parse_launch(rest)
    assert command.speculative is not None
    assert command.speculative.draft_cache_types == ("q8_0", "q8_0")
    assert not any("ctkd" in flag or "ctvd" in flag for flag in command.ignored)
    with pytest.raises(InputError):
        era.parse_launch(shlex.split("-m t.gguf -md d.gguf -ctkd q9_9"))
