"""Every start-up record whose reserve can be replayed, as (predicted, printed) pairs, and
the out-of-sample band each reserve model earns from them (`engine/serving/bands.py`).

A record is in-sample when its figures chose or tuned a rule or a constant of the reserve
model it is replayed on; held out when none did. The replays reuse the engine tests' own
(the same settings, devices and configs), so a record means one thing everywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from llm_inventory.engine.placement import PlacementRequest, plan_placement
from llm_inventory.engine.serving import era_of, get
from llm_inventory.engine.serving.bands import ReserveBand
from llm_inventory.spec.devices import custom_device, resolve_device
from llm_inventory.spec.hf import from_hf_config

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Point:
    """One replayed start-up: the figure the reserve decides, predicted and printed."""

    record: str
    engine: str  # NAME@VERSION as replayed
    group: str  # the reserve model (`reserve_group`)
    era: str  # the registry era (module)
    release: str  # the release the record ran, as its log or source states it
    device: str  # the device as the record names it
    family: str  # vendor and compute capability, or a vendor alone where not named
    predicted: float  # bytes
    printed: float  # bytes
    in_sample: bool
    why: str  # what it was used for (in-sample) or where it comes from (held out)

    @property
    def residual(self) -> float:
        return self.predicted - self.printed

    @property
    def error(self) -> float:
        return (self.predicted - self.printed) / self.printed


def _point(record: str, engine: str, release: str, device: str, family: str,
           predicted: float, printed: float, in_sample: bool, why: str) -> Point:
    era = get(engine)
    return Point(record, engine, era.reserve_group or era.name, era_of(era), release, device,
                 family, float(predicted), float(printed), in_sample, why)


def _vllm_019() -> list[Point]:
    from tests.engine.test_calibration import ASSUMED, _config_path, replay
    from tests.reference import engine_runs, model_config

    points = []
    for run in engine_runs():
        path = _config_path(run)
        if path is not None:
            spec = from_hf_config(json.loads(path.read_text()), path.name)
        else:
            base, scheme = ASSUMED[run["model"]]
            spec = from_hf_config(model_config(base), base).model_copy(
                update={"quantization": scheme})
        plan = replay(run, spec)
        points.append(_point(run["id"], "vllm@0.19", "0.19.0", "H100 80GB", "nvidia 9.0",
                             plan.stages[0].kv_pool_bytes,
                             run["actual"]["kv_cache_gib"] * GIB, True,
                             "the 0.19 reserve constants (ReserveModel) were fitted on them"))
    return points


def _vllm_v0() -> list[Point]:
    from tests.engine.serving.test_vllm_eras import V0_POINTS, replay_v0
    from tests.engine.test_heldout_replay import CASES, _plan, _records

    family = {"a100-40gb": "nvidia 8.0", "a100-80gb": "nvidia 8.0", "l40s": "nvidia 8.9",
              "h200": "nvidia 9.0", "h100-sxm": "nvidia 9.0"}
    points = []
    for rid in ("V01", "V02", "V05", "V08"):  # V07 ran LoRA adapters, which are not modelled
        record, plan = replay_v0(rid)
        d = plan.per_device
        assert d is not None
        _, device, version, _, _ = V0_POINTS[rid]
        figures = record["figures"]
        printed = (figures["kv_cache_gib"] * GIB if "kv_cache_gib" in figures
                   else figures["gpu_blocks"] * 16 * d.kv_bytes_per_token)
        named = {"V01": "8 × A100 40GB", "V02": "L40 48GB", "V05": "8 × H200",
                 "V08": "A100 80GB"}[rid]
        points.append(_point(rid, f"vllm@{version}", version, named,
                             family[device], d.kv_pool_bytes, printed, True,
                             "V0Reserve was fitted on these plain launches"))
    held = _records()
    for rid in ("H05", "H06"):
        launch = CASES[rid][1]
        plan = _plan(launch, custom_device(int(23.58 * GIB), resolve_device("a10g")), 1, 0.90)
        assert plan.per_device is not None
        points.append(_point(rid, launch.engine, "0.6", "RTX 3090", "nvidia 8.6",
                             plan.per_device.kv_pool_bytes,
                             held[rid]["figures"]["kv_cache_gib"] * GIB, False,
                             "a public issue's log; no rule or constant was chosen on it"))
    return points


def _sglang() -> list[Point]:
    from tests.engine.serving.test_sglang import CASES as SG
    from tests.engine.serving.test_sglang import _device, _replay
    from tests.engine.serving.test_sglang import _records as sg_records
    from tests.engine.test_heldout_replay import CASES, _plan, _records

    family = {"l4": "nvidia 8.9", "h100-sxm": "nvidia 9.0"}
    points = []
    for rid in ("SG01", "SG07"):  # the clean servers whose GPU is in the catalog
        config, version, device, flags = SG[rid]
        record = sg_records()[rid]
        plan = _replay(record, f"sglang@{version}", _device(device), flags, config)
        assert plan.per_device is not None
        f = record["figures"]
        named = {"SG01": "4 × L4", "SG07": "H100 80GB"}[rid]
        points.append(_point(rid, f"sglang@{version}", version, named, family[device],
                             plan.per_device.kv_pool_bytes,
                             (f["k_size_gb"] + f["v_size_gb"]) * GIB, True,
                             "the SGLang init-memory constants were chosen on it"))
    launch = CASES["H04"][1]
    plan = _plan(launch, resolve_device("h100-sxm"), 4, 0.93, dtype="fp8")
    assert plan.per_device is not None
    f = _records()["H04"]["figures"]
    k_per_token = f["k_size_gb"] / (f["kv_tokens"] + 1)
    points.append(_point("H04", launch.engine, "0.4.9", "4 × H100 80GB", "nvidia 9.0",
                         plan.per_device.kv_pool_bytes,
                         2 * k_per_token * (f["kv_tokens"] + 1) * GIB, False,
                         "a public issue's log; no rule or constant was chosen on it"))
    return points


def _trtllm() -> list[Point]:
    from tests.engine.serving.test_trtllm import _llama_8b
    from tests.engine.serving.test_trtllm import _records as trt_records

    record = trt_records()["T01"]
    figures, flags = record["figures"], record["flags"]
    device = resolve_device("rtx-5090").model_copy(
        update={"memory_bytes": int(figures["total_gpu_memory_gib"] * GIB)})
    result = plan_placement(_llama_8b(), PlacementRequest(
        device=device, count=1, tp=1, pp=1, engine="trtllm@0.19", context=flags["max_seq_len"],
        dtype="fp8", kv_dtype="fp8", max_num_seqs=flags["max_batch_size"],
        max_num_batched_tokens=flags["max_num_tokens"], block_size=flags["tokens_per_block"],
        gpu_memory_utilization=flags["kv_cache_free_gpu_mem_fraction"],
        engine_flags={"backend": "tensorrt"}))
    d = result.plans[0].per_device
    assert d is not None
    return [_point("T01", "trtllm@0.19", "0.19.0", "RTX 5090", "nvidia 12.0", d.kv_pool_bytes,
                   figures["kv_cache_gib"] * GIB, True,
                   "the runtime-buffer share was checked and tuned on it")]


def _llamacpp() -> list[Point]:
    from tests.engine.serving.test_llamacpp import H100, REPLAYS
    from tests.engine.serving.test_llamacpp import _records as l_records

    printed = {"L01": "cpu_compute_buffer_mib", "L07": "cpu_compute_buffer_mib",
               "L03": "cuda0_compute_buffer_mib"}
    where = {"L01": ("CPU", "cpu"), "L07": ("CPU", "cpu"), "L03": ("CUDA GPU", "nvidia")}
    points = []
    for rid in ("L01", "L03", "L07"):
        make_spec, engine, flags, _ = REPLAYS[rid]
        name = f"llamacpp@{engine.build}" if engine.fork == "upstream" else "ik_llama"
        result = plan_placement(make_spec(), PlacementRequest(
            device=H100, count=1, tp=1, pp=1, engine=name, context=flags["ctx_size"],
            engine_flags={**flags, "n_gpu_layers": -1}))
        stage = result.plans[0].stages[0]
        record = l_records()[rid]
        release = {"L01": "b5913–b6239", "L03": "before b5913", "L07": "ik 3760"}[rid]
        points.append(_point(rid, name, release, *where[rid],
                             stage.reserve_bytes - 300 * MIB,
                             record["figures"][printed[rid]] * MIB, True,
                             "the compute-buffer estimate was fitted on it"))
    return points


def _vllm_graphs() -> list[Point]:
    """vLLM 0.29-0.31 start-ups replayed from their launch (engine-logs-2026 N09-N15)."""
    from llm_inventory.engine.serving.bands import family
    from tests.engine.serving.test_vllm_030_logs import (
        DEVICE_NAMES,
        FROM_DEVICE,
        device,
        predicted_pool,
        records,
    )

    points = []
    for key in FROM_DEVICE:
        record = records()[key]
        release = record["era"].split("@")[1]
        points.append(_point(key, record["era"], release, DEVICE_NAMES[key],
                             family(device(key)), predicted_pool(key),
                             record["figures"]["kv_pool_gib"] * GIB, False,
                             "a public start-up log; no rule or constant was chosen on it"))
    return points


@cache
def points() -> tuple[Point, ...]:
    return (*_vllm_019(), *_vllm_graphs(), *_vllm_v0(), *_sglang(), *_trtllm(),
            *_llamacpp())


def p90(errors: list[float]) -> float:
    """Nearest-rank 90th percentile: the error 90 % of the records stay within."""
    ranked = sorted(errors)
    return ranked[max(0, math.ceil(0.9 * len(ranked)) - 1)]


def out_of_sample(group: list[Point]) -> list[float]:
    """Each record's relative error on data the fit did not see: a held-out record as it
    is; an in-sample one leave-one-out, the offset refitted on the other in-sample records
    (their mean residual) before it is judged. One in-sample record alone gives none."""
    inside = [p for p in group if p.in_sample]
    errors = []
    for p in group:
        if not p.in_sample:
            errors.append(abs(p.error))
        elif len(inside) > 1:
            others = [q.residual for q in inside if q is not p]
            offset = sum(others) / len(others)
            errors.append(abs(p.residual - offset) / p.printed)
    return errors


FIGURE = {"llamacpp": "compute buffer"}


def bands() -> dict[str, ReserveBand]:
    """Every reserve model's band from its records (see `engine/serving/bands.py`)."""
    found: dict[str, ReserveBand] = {}
    groups: dict[str, list[Point]] = {}
    for p in points():
        groups.setdefault(p.group, []).append(p)
    for name, group in sorted(groups.items()):
        errors = out_of_sample(group)
        found[name] = ReserveBand(
            band=round(p90(errors), 4) if errors else None, errors=len(errors),
            records=len(group), in_sample=sum(p.in_sample for p in group),
            figure=FIGURE.get(name, "KV pool"),
            families=tuple(sorted({p.family for p in group})),
            devices=tuple(sorted({p.device for p in group})),
            eras=tuple(sorted({p.era for p in group})),
            releases=tuple(sorted({p.release for p in group})))
    return found


def literal(found: dict[str, Any]) -> str:
    """`bands()` as the Python literal `engine/serving/bands.py` ships."""
    lines = ["BANDS: dict[str, ReserveBand] = {"]
    for name, b in found.items():
        lines.append(f"    {name!r}: ReserveBand(")
        lines.append(f"        band={b.band!r}, errors={b.errors}, records={b.records}, "
                     f"in_sample={b.in_sample}, figure={b.figure!r},")
        for key in ("families", "devices", "eras", "releases"):
            lines.append(f"        {key}={getattr(b, key)!r},")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines)
