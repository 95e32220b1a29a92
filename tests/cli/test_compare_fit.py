"""`compare A B C -d DEV -n N`: each model on those devices, not the devices ignored."""

from __future__ import annotations

from tests.conftest import Invoke


def test_compare_on_devices_answers_per_model(invoke: Invoke) -> None:
    run = invoke("compare", "llama-3.1-8b", "llama-3.1-70b", "deepseek-v3", "-d", "h100",
                 "-n", "8", "--format", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert [m["model"] for m in data] == ["llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"]
    for m in data:
        for key in ("fits", "smallest_fit", "longest_context", "max_concurrency"):
            assert key in m
        assert (m["device"], m["count"], m["context"]) == ("h100-sxm", 8, 8000)
    small, big, huge = data
    assert small["fits"] and big["fits"] and not huge["fits"]
    assert small["smallest_fit"]["devices"] == 1 and big["smallest_fit"]["devices"] == 2
    assert huge["smallest_fit"] is None and huge["max_concurrency"] is None
    more = huge["would_fit"]["devices"]["devices"]  # what would fit, as placement finds it
    assert more > 8 and small["would_fit"] is None
    assert invoke("placement", "deepseek-v3", "-d", "h100", "-n", str(more), "--format",
                  "json").json()["fitting"] > 0
    # the model's own limit, one request, when the devices hold it
    assert small["longest_context"] == 131072
    assert small["max_concurrency"] > big["max_concurrency"] > 1
    # the plan holding the most is the one placement ranks first by concurrency
    placed = invoke("placement", "llama-3.1-70b", "-d", "h100", "-n", "8", "--sort",
                    "concurrency", "--format", "json").json()["plans"][0]
    assert big["max_concurrency"] == placed["total_concurrency"]
    assert big["launch"][0].startswith("vllm serve meta-llama/Llama-3.1-70B ")


def test_the_devices_change_the_answer(invoke: Invoke) -> None:
    one = invoke("compare", "llama-3.1-70b", "qwen3-8b", "-d", "h100", "-n", "1",
                 "--format", "json").json()
    assert not one[0]["fits"] and one[1]["fits"]
    table = invoke("compare", "llama-3.1-70b", "qwen3-8b", "-d", "h100", "-n", "1").stdout
    assert "on 1 × h100-sxm" in table and "does not fit" in table


def test_count_without_device_is_refused(invoke: Invoke) -> None:
    run = invoke("compare", "llama-3.1-8b", "qwen3-8b", "-n", "4")
    assert run.code == 2 and "--device" in run.stderr
