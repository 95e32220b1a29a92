"""Pipeline parallelism in the step model: micro-batches hold whole sequences.

A lone prompt cannot be cut into micro-batches; it crosses the stages one after another,
so splitting the layers over stages saves it no compute. Sequences at least as many as the
stages fill every stage, as before.
"""

from __future__ import annotations

from functools import cache

import pytest

from llm_inventory.engine.placement import PlacementRequest
from llm_inventory.engine.placement.facts import model_facts
from llm_inventory.engine.timing.profile import WorkProfile, work_profile
from llm_inventory.engine.timing.step import Load, round_time
from llm_inventory.spec.calibration import default_calibration
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model

CAL = default_calibration()


@cache
def profile(pp: int) -> WorkProfile:
    facts = model_facts(load_model("llama-3.1-70b"), PlacementRequest(
        device=resolve_device("h100"), count=pp, context=8192))
    found = work_profile(facts, 1, pp, 1)
    assert found is not None
    return found


@pytest.mark.parametrize("pp", [2, 3, 4])
def test_a_lone_prompt_gains_no_compute_from_stages(pp: int) -> None:
    prompt = Load(decode=0, context=1, prefill=2000, prompt=2000, prompts=1)
    alone, staged = round_time(profile(1), CAL, prompt, 8192), round_time(
        profile(pp), CAL, prompt, 8192)
    assert staged.compute_s == pytest.approx(alone.compute_s, rel=1e-9)


@pytest.mark.parametrize("pp", [2, 4])
def test_enough_sequences_fill_every_stage(pp: int) -> None:
    decode = Load(decode=64, context=4000)
    one, staged = round_time(profile(1), CAL, decode, 8192), round_time(
        profile(pp), CAL, decode, 8192)
    # each stage runs 1/pp of the layers for 1/pp of the sequences, pp times a round
    assert staged.compute_s == pytest.approx(one.compute_s / pp, rel=1e-9)


def test_a_prompt_rides_whole_in_one_micro_batch() -> None:
    # three decodes and a prompt over four stages: four micro-batches, the prompt's whole
    p = profile(4)
    mixed = round_time(p, CAL, Load(decode=3, context=2000, prefill=1000, prompt=1000,
                                    prompts=1), 8192, whole_prompts=True)
    lone = round_time(p, CAL, Load(decode=0, context=1, prefill=1000, prompt=1000,
                                   prompts=1), 8192)
    assert mixed.compute_s >= lone.compute_s
