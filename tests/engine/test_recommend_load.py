"""`recommend` priced at the load each replica carries: P/D pools, the running batch."""

from __future__ import annotations

from llm_inventory.engine.recommend import (
    RecommendedPlan,
    RecommendRequest,
    Targets,
    Workload,
    recommend,
)
from llm_inventory.spec.devices import resolve_device
from llm_inventory.spec.loader import load_model
from llm_inventory.spec.prices import price_catalog

SEED_MODEL = "examples/dense-70b.yaml"


def _plans(users: int) -> list[RecommendedPlan]:
    request = RecommendRequest.model_validate({
        "model_ref": SEED_MODEL, "devices": [resolve_device("h100")],
        "workload": Workload(isl=2000, osl=500, concurrency=users),
        "targets": Targets(tpot_s=0.2, percentile="p50"), "prices": price_catalog()})
    return recommend(load_model(SEED_MODEL), request).plans


def _split(plans: list[RecommendedPlan], pd: bool) -> dict[tuple[int, int, int], \
        RecommendedPlan]:
    return {(p.tp, p.pp, p.ep): p for p in plans
            if (p.disaggregation == "prefill/decode") == pd}


def test_pd_tpot_follows_the_users_not_the_batch_limit() -> None:
    by_users = {u: _split(_plans(u), pd=True) for u in (1, 32, 128)}
    shared = set(by_users[1]) & set(by_users[32]) & set(by_users[128])
    assert shared
    for key in shared:
        one, some, many = (by_users[u][key] for u in (1, 32, 128))
        assert one.tpot.p50 < some.tpot.p50 < many.tpot.p50
        assert one.running_batch <= 1.0 + 1e-9 < many.running_batch


def test_pd_at_one_user_decodes_like_the_same_layout_without_it() -> None:
    plans = _plans(1)
    pd, plain = _split(plans, pd=True), _split(plans, pd=False)
    shared = set(pd) & set(plain)
    assert shared
    for key in shared:
        # no prompt rides in a decode pool's steps: never slower than the plain layout
        assert pd[key].tpot.p50 <= plain[key].tpot.p50 * 1.001


def test_json_gives_the_running_batch_and_per_replica_throughput() -> None:
    for plan in _plans(32):
        assert 0 < plan.running_batch <= plan.batch + 1e-9
        assert plan.tokens_per_s_per_replica * plan.replicas == \
            plan.tokens_per_s_per_gpu * plan.gpus or abs(
                plan.tokens_per_s_per_replica * plan.replicas
                - plan.tokens_per_s_per_gpu * plan.gpus) <= 1e-6 * plan.tokens_per_s_per_gpu \
            * plan.gpus
