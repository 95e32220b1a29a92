"""The HTML report as a person sees it: rendered by a real headless Chromium at a phone's
width, with no console error, every picture drawn, nothing overflowing 390 pixels, and
every figure the page marks equal to the command's JSON.

Chromium comes from the distribution's packages (`.ci/run` installs it; by hand:
`apt-get install chromium`), driven through Playwright's Python client with that binary (the
`dev` extra; no browser download). Without either, these tests fail and say how to get it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Invoke

PHONE = {"width": 390, "height": 844}
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

COMMANDS = {
    "placement": ["placement", "llama-3.1-70b", "-d", "h100", "-n", "8"],
    "recommend": ["recommend", "llama-3.1-8b", "-d", "h100", "--use-case", "chat",
                  "--qps", "5"],
    "compare": ["compare", "llama-3.1-8b", "qwen3-8b", "-d", "h100", "-n", "1"],
    "sweep": ["sweep", "llama-3.1-70b", "-d", "h100", "-n", "8", "--context", "8K,128K",
              "--concurrency", "1,64", "--kv-dtype", "bf16,fp8"],
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("no chromium on PATH: install the distribution's package "
                    "(apt-get install chromium) to render the report")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("no playwright: pip install -e '.[dev]' (its Python client drives the "
                    "installed chromium; no browser download)")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=chromium, args=ARGS)
        yield launched
        launched.close()


def _at(data: Any, path: str) -> Any:
    for part in path.split("/"):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_report_renders_on_a_phone_as_the_json_says(invoke: Invoke, browser: Any,
                                                        tmp_path: Path, command: str) -> None:
    page_file = tmp_path / f"{command}.html"
    run = invoke(*COMMANDS[command], "--report", str(page_file), "-f", "json")
    assert run.code == 0, run.stderr
    data = run.json()
    text = page_file.read_text("utf-8")
    assert "<script src" not in text and "@import" not in text and "<link" not in text
    page = browser.new_page(viewport=PHONE)
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    shot = tmp_path / f"{command}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert errors == []
    assert fetched == [page_file.as_uri()]  # self-contained: nothing else is asked for
    drawn = page.evaluate("() => [...document.querySelectorAll('svg')].map("
                          "s => s.querySelectorAll('rect,circle,line').length)")
    assert drawn and all(n > 0 for n in drawn), drawn
    wide = page.evaluate("() => [...document.querySelectorAll('body *')].filter("
                         "e => e.getBoundingClientRect().right > 390.5).map(e => e.tagName)")
    assert wide == [] and page.evaluate("document.documentElement.scrollWidth") <= 390
    marked = page.evaluate("() => [...document.querySelectorAll('[data-json]')].map("
                           "e => [e.dataset.json, e.dataset.value, e.textContent])")
    assert marked
    embedded = json.loads(page.evaluate("document.getElementById('result').textContent"))
    if command == "sweep":
        assert embedded["cells"] == data["cells"]
        data = embedded  # its page also counts the fitting points
    else:
        assert embedded == data
    for path, value, shown in marked:
        expected = _at(data, path)
        assert float(value) == pytest.approx(float(expected)), path
        assert float(shown.replace(",", "")) == pytest.approx(float(expected), rel=0.01,
                                                              abs=0.051), path
    page.close()


def test_names_from_files_are_escaped(invoke: Invoke, tmp_path: Path) -> None:
    model = tmp_path / "odd.yaml"
    text = (ROOT / "examples" / "dense-70b.yaml").read_text()
    model.write_text(text.replace("name: ", 'name: "<script>alert(1)</script>" #', 1)
                     if "name: " in text else 'name: "<script>alert(1)</script>"\n' + text)
    report = tmp_path / "r.html"
    run = invoke("placement", str(model), "-d", "h100", "-n", "8", "--report", str(report))
    assert run.code == 0, run.stderr
    page = report.read_text("utf-8")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


@pytest.mark.parametrize(("args", "message"), [
    (["--report", "out.txt"], "write an .html file"),
    (["--report", "nowhere/r.html"], "does not exist"),
])
def test_a_report_target_is_checked_first(invoke: Invoke, args: list[str],
                                          message: str) -> None:
    run = invoke("placement", "llama-3.1-8b", "-d", "h100", *args)
    assert run.code == 2 and run.stdout == "" and message in run.stderr


def test_compare_reports_only_models_on_devices(invoke: Invoke, tmp_path: Path) -> None:
    run = invoke("compare", "llama-3.1-8b", "qwen3-8b", "--report", str(tmp_path / "c.html"))
    assert run.code == 2 and "--device" in run.stderr
