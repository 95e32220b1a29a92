"""`inventory check` as a table, as JUnit XML for CI test reports, and as GitHub Actions
annotations (workflow commands, one per failing deployment, pointing at its manifest line)."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.fleet import DeploymentCheck, FleetResult


def _held(check: DeploymentCheck) -> str:
    if check.total_concurrency is None:
        return "—"
    return f"{check.total_concurrency:,.1f}/{check.concurrency:,}"


def _times(check: DeploymentCheck) -> str:
    if check.ttft_s is None or check.tpot_s is None:
        return "—"
    return f"{check.ttft_s * 1000:,.0f}/{check.tpot_s * 1000:,.1f}"


def fleet_tables(result: FleetResult) -> list[Table | Text]:
    """The verdicts, failures first in the manifest's order, then why each failed."""
    verdict = "passes" if result.failed == 0 else f"fails: {result.failed:,} of " \
        f"{len(result.deployments):,} deployments"
    parts: list[Table | Text] = [Text(f"{result.manifest}: the fleet {verdict}", style="bold")]
    table = Table()
    table.add_column("deployment", overflow="fold")
    table.add_column("plan", overflow="fold")
    table.add_column("held/\nasked", justify="right")
    table.add_column("TTFT/TPOT\nms~", justify="right")
    table.add_column("result")
    for check in result.deployments:
        table.add_row(check.name, check.plan or "—", _held(check), _times(check),
                      Text(check.status, style="green" if check.status == "pass" else "red"))
    parts.append(table)
    for check in result.deployments:
        if check.reasons:
            where = f" (line {check.line})" if check.line else ""
            parts.append(Text(f"✗ {check.name}{where}: " + "; ".join(check.reasons),
                              style="red"))
    parts.append(Text("held/asked: requests at the context, every engine of the plan "
                      "together; ~ calibrated time estimate", style="dim"))
    labels: dict[str, set[str]] = {}
    for check in result.deployments:
        for group, trust in check.trust.items():
            labels.setdefault(group.replace("_", " "), set()).add(trust.label())
    if labels:
        parts.append(Text("trust: " + "; ".join(f"{group} {', '.join(sorted(found))}"
                                                for group, found in labels.items()),
                          style="dim"))
    return parts


def _escape_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: FleetResult, manifest: str) -> str:
    """One `::error` per failing deployment at its manifest line, and a `::notice` summary."""
    lines = []
    for check in result.deployments:
        if check.status == "fail":
            where = f",line={check.line}" if check.line else ""
            lines.append(f"::error file={_escape_property(manifest)}{where},"
                         f"title={_escape_property(check.name)}::"
                         f"{_escape_data('; '.join(check.reasons))}")
    lines.append(f"::notice title=inventory check::{result.passed:,} passed, "
                 f"{result.failed:,} failed")
    return "\n".join(lines) + "\n"


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """`text` with the characters XML 1.0 cannot carry (controls, lone surrogates) replaced."""
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(result: FleetResult, seconds: list[float]) -> str:
    """A JUnit report (the junit-10 schema Jenkins and GitHub reporters read): one test
    suite for the manifest, one test case per deployment, a `failure` for each that fails.
    `seconds` is each deployment's checking time."""
    total = f"{sum(seconds):.3f}"
    suites = ElementTree.Element("testsuites", name="inventory check",
                                 tests=str(len(result.deployments)),
                                 failures=str(result.failed), errors="0", time=total)
    suite = ElementTree.SubElement(suites, "testsuite", name=_xml(result.manifest),
                                   tests=str(len(result.deployments)),
                                   failures=str(result.failed), errors="0", skipped="0",
                                   time=total)
    for check, spent in zip(result.deployments, seconds, strict=True):
        case = ElementTree.SubElement(suite, "testcase", name=_xml(check.name),
                                      classname=_xml(result.manifest), time=f"{spent:.3f}")
        if check.status == "fail":
            failure = ElementTree.SubElement(case, "failure", type="DeploymentCheck",
                                             message=_xml("; ".join(check.reasons)))
            failure.text = _xml("\n".join(
                [f"model {check.model}, {check.engine}, {check.count} × {check.device}, "
                 f"{check.concurrency:,} × {check.context:,} tokens"] + check.reasons))
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + \
        ElementTree.tostring(suites, encoding="unicode") + "\n"
