"""`inventory check FLEET.yaml`: verdicts, exit codes, JUnit XML, annotations, bad manifests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.fleet import DeploymentCheck
from llm_inventory.spec.fleet import Deployment, fleet_schema, read_fleet
from tests.cli.test_subprocess import ENV, INVENTORY
from tests.conftest import ROOT, Invoke

EXAMPLE = ROOT / "examples" / "fleets" / "platform.yaml"

FAILING = """\
defaults:
  device: h100-sxm
deployments:
  - name: fits
    model: llama-3.1-8b
    count: 1
    context: 8k
    concurrency: 4
  - name: "too many users"
    model: llama-3.1-8b
    count: 1
    context: 32K
    concurrency: 500
  - name: slow
    model: llama-3.1-70b
    count: 8
    context: 8k
    concurrency: 8
    tpot: 1ms
  - name: launch fails
    model: qwen3-8b
    count: 1
    context: 32k
    launch: vllm serve Qwen/Qwen3-8B --max-model-len 32768 --gpu-memory-utilization 0.2
"""


def _manifest(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_example_fleet_passes_in_under_three_seconds() -> None:
    """Counted in the process's CPU time, which other work on the machine does not inflate
    (about 1.5 s of 2 CPUs' wall time on an idle machine)."""
    import resource

    assert INVENTORY
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([INVENTORY, "check", str(EXAMPLE), "-f", "json"], capture_output=True,
                          text=True, env=ENV, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    assert len(result["deployments"]) == 50
    assert (result["passed"], result["failed"]) == (50, 0)
    assert spent < 3.0, f"50 deployments took {spent:.2f} s"


def test_failures_exit_1_with_each_reason(invoke: Invoke, tmp_path: Path) -> None:
    run = invoke("check", str(_manifest(tmp_path, FAILING)), "-f", "json")
    assert run.code == 1
    assert run.stderr.startswith("inventory: error: 3 of 4 deployments fail")
    by_name = {d["name"]: d for d in run.json()["deployments"]}
    assert by_name["fits"]["status"] == "pass" and by_name["fits"]["reasons"] == []
    crowd = by_name["too many users"]
    assert crowd["status"] == "fail" and crowd["line"] == 9
    assert "holds" in crowd["reasons"][0] and "500" in crowd["reasons"][0]
    assert crowd["total_concurrency"] < 500
    slow = by_name["slow"]
    assert slow["fits"] is True and slow["status"] == "fail"
    assert re.search(r"TPOT [\d.,]+ ms > target 1.0 ms", slow["reasons"][0])
    launch = by_name["launch fails"]
    assert launch["launch_starts"] is False
    assert any(r.startswith("launch line:") for r in launch["reasons"])


def test_a_target_that_is_met_passes(invoke: Invoke, tmp_path: Path) -> None:
    text = ("deployments:\n  - model: llama-3.1-8b\n    device: h100-sxm\n    count: 1\n"
            "    concurrency: 4\n    ttft: 10s\n    tpot: 1s\n")
    run = invoke("check", str(_manifest(tmp_path, text)), "-f", "json")
    assert run.code == 0, run.stderr
    check = run.json()["deployments"][0]
    assert check["name"] == "llama-3.1-8b on 1×h100-sxm"
    assert check["targets"] == {"ttft_s": 10.0, "tpot_s": 1.0}
    assert 0 < check["ttft_s"] < 10 and 0 < check["tpot_s"] < 1
    assert check["trust"]["timing"]["kind"] != "exact"  # a target is judged on an estimate


def _junit_valid(root: ElementTree.Element) -> None:
    """The rules of the junit-10 schema (jenkinsci/xunit-plugin, `junit-10.xsd`) that a
    report can break: element nesting, required attributes and the time pattern."""
    time_pattern = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")
    assert root.tag == "testsuites"
    assert set(root.attrib) <= {"name", "time", "tests", "failures", "errors"}
    assert time_pattern.fullmatch(root.attrib["time"])
    for suite in root:
        assert suite.tag == "testsuite"
        assert {"name", "tests", "failures", "errors"} <= set(suite.attrib)
        assert set(suite.attrib) <= {"name", "tests", "failures", "errors", "group", "time",
                                     "skipped", "timestamp", "hostname", "id", "package",
                                     "file", "log", "url"}
        assert time_pattern.fullmatch(suite.attrib["time"])
        for case in suite:
            assert case.tag in {"testsuite", "properties", "testcase", "system-out",
                                "system-err"}
            assert "name" in case.attrib
            assert set(case.attrib) <= {"name", "time", "classname", "group"}
            for child in case:
                assert child.tag in {"skipped", "error", "failure", "system-out",
                                     "system-err"}
                assert set(child.attrib) <= {"type", "message"}


def test_junit_report_follows_the_schema_and_counts(invoke: Invoke, tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    run = invoke("check", str(_manifest(tmp_path, FAILING)), "--junit", str(report))
    assert run.code == 1
    root = ElementTree.fromstring(report.read_bytes())
    _junit_valid(root)
    suite = root[0]
    assert (suite.attrib["tests"], suite.attrib["failures"]) == ("4", "3")
    failed = [case.attrib["name"] for case in suite if case.find("failure") is not None]
    assert failed == ["too many users", "slow", "launch fails"]
    assert not list(tmp_path.glob(".report.xml.*"))  # no temporary file left behind


def test_junit_carries_no_character_xml_cannot(invoke: Invoke, tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    text = FAILING.replace('"too many users"', '"bell \\a and \\x1b escape"')
    run = invoke("check", str(_manifest(tmp_path, text)), "--junit", str(report))
    assert run.code == 1
    _junit_valid(ElementTree.fromstring(report.read_bytes()))


def test_junit_into_a_missing_folder_is_refused_before_work(invoke: Invoke,
                                                            tmp_path: Path) -> None:
    run = invoke("check", str(EXAMPLE), "--junit", str(tmp_path / "nowhere" / "r.xml"))
    assert run.code == 2 and run.stdout == ""
    assert "--junit" in run.stderr and "does not exist" in run.stderr


def test_annotations_point_at_each_failing_entry(invoke: Invoke, tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, FAILING)
    run = invoke("check", str(manifest), "--annotations")
    assert run.code == 1
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3
    assert errors[0].startswith(f"::error file={manifest},line=9,title=too many users::")
    assert "::notice title=inventory check::1 passed, 3 failed" in run.stdout


def test_annotation_properties_are_escaped() -> None:
    from llm_inventory.engine.fleet import FleetResult, Targets
    from llm_inventory.render.fleet import github_annotations

    check = DeploymentCheck(
        name="a,b: c%", line=3, model="m", engine="vllm@0.21", device="h100-sxm", count=1,
        context=8000, concurrency=1, status="fail", reasons=["one\ntwo"], plan=None,
        fits=False, max_concurrency=None, total_concurrency=None, kv_capacity_tokens=None,
        ttft_s=None, tpot_s=None, targets=Targets())
    text = github_annotations(FleetResult(manifest="f.yaml", deployments=[check], passed=0,
                                   failed=1), "dir,x/f.yaml")
    assert text.splitlines()[0] == "::error file=dir%2Cx/f.yaml,line=3,title=a%2Cb%3A c%25::" \
        "one%0Atwo"


def test_annotations_with_json_is_refused(invoke: Invoke) -> None:
    run = invoke("check", str(EXAMPLE), "--annotations", "-f", "json")
    assert run.code == 2 and run.stdout == ""


@pytest.mark.parametrize(("text", "expected"), [
    ("deployments: []\n", "deployments: must be a non-empty list"),
    ("- model: x\n", "expected a mapping with a `deployments:` list"),
    ("deployment:\n  - model: x\n", "'deployment': unknown key (did you mean 'deployments'?)"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n    contxt: 8k\n",
     "deployments.0 (line 2): contxt: unknown key"),
    ("deployments:\n  - name: a\n    model: llama-3.1-8b\n    device: l4\n"
     "    context: 8q\n", "deployments.0 'a' (line 2): context: unknown suffix"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n    ttft: nan\n",
     "ttft: expected a positive time"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n    count: 0\n",
     "count: Input should be greater than or equal to 1"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n  - model: no-such-model\n"
     "    device: l4\n", "deployments.1 (line 4): model:"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: h100-sxm\n    count: 2\n"
     "    tp: 4\n", "tp: tp 4 needs 4 devices; count is 2"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n    engine: vllm,sglang\n",
     "one engine per deployment"),
    ("deployments:\n  - model: llama-3.1-8b\n    device: l4\n    launch: 'vllm serve \"x'\n",
     "launch: cannot split the command line"),
    ("defaults: 3\ndeployments:\n  - model: llama-3.1-8b\n    device: l4\n",
     "defaults: must be a mapping"),
])
def test_a_bad_manifest_is_one_line_exit_2(invoke: Invoke, tmp_path: Path, text: str,
                                           expected: str) -> None:
    run = invoke("check", str(_manifest(tmp_path, text)))
    assert run.code == 2, run.stderr
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr
    assert expected in run.stderr


def test_a_model_path_is_read_beside_the_manifest(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "dense.yaml").write_text(
        (ROOT / "examples" / "dense-70b.yaml").read_text())
    text = "deployments:\n  - model: models/dense.yaml\n    device: h100-sxm\n    count: 8\n"
    run = invoke("check", str(_manifest(tmp_path, text)), "-f", "json")
    assert run.code == 0, run.stderr
    assert run.json()["deployments"][0]["fits"] is True


def test_json_manifests_read_too(invoke: Invoke, tmp_path: Path) -> None:
    text = '{"deployments": [{"model": "llama-3.1-8b", "device": "l4", "count": 1}]}'
    run = invoke("check", str(_manifest(tmp_path, text, "fleet.json")), "-f", "json")
    assert run.code == 0, run.stderr
    assert run.json()["deployments"][0]["line"] is None


def test_defaults_apply_under_each_entry(tmp_path: Path) -> None:
    fleet = read_fleet(_manifest(tmp_path, FAILING))
    assert {d.device for d in fleet.deployments} == {"h100-sxm"}
    assert fleet.lines == [4, 9, 14, 20]


def test_schema_fleet_lists_every_setting(invoke: Invoke) -> None:
    run = invoke("schema", "fleet")
    assert run.code == 0
    schema = run.json()
    assert schema["$id"] == fleet_schema()["$id"]
    settings_ = schema["$defs"]["Deployment"]["properties"]
    assert set(settings_) == set(Deployment.model_fields)
    assert schema["required"] == ["deployments"]
    for name in ("model", "engine", "device", "count", "context", "concurrency", "dtype",
                 "kv_dtype", "ttft", "tpot", "name"):
        assert name in settings_
    assert invoke("schema", "nothing").code == 2


def test_the_table_reads_at_80_columns(tmp_path: Path) -> None:
    assert INVENTORY
    done = subprocess.run([INVENTORY, "check", str(_manifest(tmp_path, FAILING))],
                          capture_output=True, text=True,
                          env={**ENV, "COLUMNS": "80"}, timeout=60)
    assert done.returncode == 1
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "…" not in done.stdout


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "llama-3.1-70b", "gpt-oss-20b"]),
       device=st.sampled_from(["l4", "h100-sxm", "a100-40gb"]),
       count=st.sampled_from([1, 2, 4]),
       context=st.sampled_from([4096, 32768]),
       concurrency=st.integers(min_value=1, max_value=64))
def test_a_verdict_is_placements_require_fit(invoke: Invoke, tmp_path: Path, model: str,
                                             device: str, count: int, context: int,
                                             concurrency: int) -> None:
    """Without targets or a launch line, a deployment passes exactly when `placement
    --require-fit` does for the same settings."""
    text = (f"deployments:\n  - model: {model}\n    device: {device}\n    count: {count}\n"
            f"    context: {context}\n    concurrency: {concurrency}\n")
    checked = invoke("check", str(_manifest(tmp_path, text)), "-f", "json")
    placed = invoke("placement", model, "-d", device, "-n", str(count), "--context",
                    str(context), "--concurrency", str(concurrency), "--require-fit",
                    "-f", "json")
    assert checked.code in (0, 1) and placed.code in (0, 1)
    assert checked.code == placed.code
    verdict = checked.json()["deployments"][0]
    assert verdict["fits"] == (placed.code == 0)


def test_the_schema_validates_the_example_and_catches_a_typo(invoke: Invoke) -> None:
    import yaml

    from tests.cli.test_models_schema import _errors

    schema = invoke("schema", "fleet").json()
    document = yaml.safe_load(EXAMPLE.read_text())
    assert _errors(schema, document, schema) == []
    document["deployments"][0]["concurency"] = 3
    assert any("concurency" in e for e in _errors(schema, document, schema))


def test_partly_occupied_devices_in_a_manifest(invoke: Invoke, tmp_path: Path) -> None:
    text = ("deployments:\n  - name: shared\n    model: qwen3-8b\n    device: h100-sxm\n"
            "    count: 2\n    used: [0, 75GiB]\n  - name: listed\n    model: qwen3-8b\n"
            "    device: h100-sxm\n    count: 1\n    free: 10GiB\n")
    run = invoke("check", str(_manifest(tmp_path, text)), "-f", "json")
    shared, listed = run.json()["deployments"]
    assert shared["status"] == "pass" and shared["plan"] == "tp 1 × pp 1 × dp 1"
    assert listed["status"] == "fail"
    assert "Free memory on device" in listed["reasons"][0]
