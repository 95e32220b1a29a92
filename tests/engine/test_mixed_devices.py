"""Pipeline stages over several device types, with the layer partition vLLM is told."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.placement.mixed import DeviceGroup, plan_mixed
from llm_inventory.errors import InputError
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.presets import load_preset
from tests.conftest import Invoke

H100, A100 = resolve_device("h100-sxm"), resolve_device("a100-40gb")


def _request(**update: object) -> PlacementRequest:
    return PlacementRequest(device=H100, count=2, limit=0).model_copy(update=update)


def test_a_pinned_partition_lays_the_layers_out() -> None:
    spec = load_preset("llama-3.1-8b")  # 32 layers
    result = plan_placement(spec, _request(tp=1, pp=2, pp_layer_partition=[10, 22]))
    plan = next(p for p in result.plans if p.disaggregation is None)
    assert [s.layers for s in plan.stages] == [10, 22]
    even = plan_placement(spec, _request(tp=1, pp=2))
    assert [s.layers for s in next(p for p in even.plans
                                   if p.disaggregation is None).stages] == [16, 16]


@pytest.mark.parametrize(("update", "message"), [
    ({"tp": 1, "pp": 3, "pp_layer_partition": [10, 22]}, "pin --pp 2"),
    ({"tp": 1, "pp": 2, "pp_layer_partition": [10, 20]}, "32 in all, got 30"),
    ({"tp": 1, "pp": 2, "pp_layer_partition": [0, 32]}, "at least one layer"),
    ({"tp": 1, "pp": 2, "pp_layer_partition": [16, 16], "engine": "sglang"},
     "takes no layer partition"),
])
def test_a_partition_the_engine_refuses(update: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match="pp_layer_partition") as caught:
        plan_placement(load_preset("llama-3.1-8b"), _request(count=3, **update))
    assert message in str(caught.value)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-8b"]),
       counts=st.sampled_from([(1, 1), (2, 2), (2, 1), (1, 3)]),
       concurrency=st.sampled_from([1, 32, 256]))
def test_each_stage_is_what_its_own_device_type_gives(model: str, counts: tuple[int, int],
                                                       concurrency: int) -> None:
    """A mixed plan's stage is, figure for figure, the same stage of a one-type placement on
    that stage's device with the same split and partition pinned."""
    spec = load_preset(model)
    groups = [DeviceGroup(device=H100, count=counts[0]),
              DeviceGroup(device=A100, count=counts[1])]
    result = plan_mixed(spec, groups, _request(count=sum(counts), context=16384,
                                               concurrency=concurrency))
    assert result.plans
    for plan in result.plans[:3]:
        for stage in plan.stages:
            device = resolve_device(stage.device)
            alone = plan_placement(spec, _request(
                device=device, count=plan.devices_used, tp=plan.tp, pp=plan.pp, ep=1,
                context=16384, pp_layer_partition=plan.partition))
            same = next(p for p in alone.plans if p.disaggregation is None
                        and (p.tp, p.pp) == (plan.tp, plan.pp))
            own = same.stages[stage.stage]
            assert (own.layers, own.weight_bytes, own.reserve_bytes, own.kv_pool_bytes,
                    own.kv_blocks, own.kv_capacity_tokens) == (
                stage.layers, stage.weight_bytes, stage.reserve_bytes, stage.kv_pool_bytes,
                stage.kv_blocks, stage.kv_capacity_tokens)
        # every worker keeps the binding stage's blocks (vLLM's smallest worker binds)
        assert plan.kv_capacity_tokens == min(s.kv_capacity_tokens for s in plan.stages)


def test_the_balanced_partition_holds_more_than_the_even_one() -> None:
    spec = load_preset("llama-3.1-70b")
    groups = [DeviceGroup(device=H100, count=2), DeviceGroup(device=A100, count=2)]
    result = plan_mixed(spec, groups, _request(count=4, context=32768))
    best = next(p for p in result.plans if (p.tp, p.pp) == (2, 2)
                and p.stages[0].device == "h100-sxm")
    assert best.partition[0] > best.partition[1]  # the larger device takes more layers
    assert best.env == {"VLLM_PP_LAYER_PARTITION": ",".join(map(str, best.partition))}
    even = plan_placement(spec, _request(device=A100, count=4, tp=2, pp=2, context=32768))
    even_plan = next(p for p in even.plans if p.disaggregation is None)
    assert best.kv_capacity_tokens > (even_plan.per_device.kv_capacity_tokens
                                      if even_plan.per_device else 0)


def test_placement_devices_on_the_command_line(invoke: Invoke) -> None:
    run = invoke("placement", "qwen3-8b", "--devices", "h100:1,a100-40gb:1", "--context",
                 "32K", "-f", "json")
    assert run.code == 0, run.stderr
    result = run.json()
    assert result["groups"] == [{"device": "h100-sxm", "count": 1},
                                {"device": "a100-40gb", "count": 1}]
    assert {p["pp"] for p in result["plans"]} == {2}
    table = invoke("placement", "qwen3-8b", "--devices", "h100:1,a100-40gb:1")
    assert "VLLM_PP_LAYER_PARTITION=" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 120


@pytest.mark.parametrize(("args", "message"), [
    (["--devices", "h100"], "expected TYPE:COUNT pairs"),
    (["--devices", "h100:0,a100-40gb:1"], "expected TYPE:COUNT pairs"),
    (["--devices", "h100:2"], "give 2 to 3 different device types"),
    (["--devices", "h100:1,a100-40gb:1", "-d", "h100"], "not both"),
    (["--devices", "h100:1,a100-40gb:1", "-e", "sglang"], "takes no layer partition"),
    (["--devices", "h100:1,nope:1"], "nope"),
])
def test_bad_devices_are_one_line(invoke: Invoke, args: list[str], message: str) -> None:
    run = invoke("placement", "qwen3-8b", *args)
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.splitlines()) == 1


def test_prefill_on_one_type_decode_on_another() -> None:
    spec = load_preset("llama-3.1-8b")
    groups = [DeviceGroup(device=H100, count=2), DeviceGroup(device=A100, count=2)]
    result = plan_mixed(spec, groups, _request(count=4, context=32768, concurrency=40))
    pairs = {(p.prefill.device, p.decode.device): p for p in result.disaggregated}
    assert set(pairs) == {("h100-sxm", "a100-40gb"), ("a100-40gb", "h100-sxm")}
    for (_, decode), pair in pairs.items():
        alone = plan_placement(spec, _request(device=resolve_device(decode), count=2,
                                              context=32768, concurrency=40))
        best = next(p for p in alone.plans if p.disaggregation is None)
        assert pair.decode.total_concurrency == best.total_concurrency
        assert pair.fits == (pair.prefill.fits and pair.decode.fits)
    # the H100 pool holds more: decode there first
    assert result.disaggregated[0].decode.device == "h100-sxm"
