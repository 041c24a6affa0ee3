"""The HTML report in a real browser (Debian's headless Chromium, driven over DevTools).

Pages for a passing run (NCCL on the fake cluster), a failing run (passed/failed/skipped/other) and
an injection attempt (``<script>`` in a check message and in a pod log line) are opened from disk.
Every assertion reads the live DOM: each check and its status in words and colour, that no script
ran (title unchanged, no injected element, no CSP violation, no script element at all), and that a
400 px window needs no horizontal scrolling.  Full-page PNGs (wide and narrow) are kept under
``$AICR_TEST_ARTIFACTS`` (default ``out/test-artifacts``) in ``html-report/``.

Without Chromium the tests skip with the reason; ``AICR_REQUIRE_CHROMIUM=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.browser.cdp import REQUIRE_ENV, Browser, Tab, artifacts_dir, find_chromium
from tests.cluster.test_nccl_check import BW, RECIPE, run_nccl
from tests.plugin.helpers import SNAPSHOT, make_recipe
from tests.plugin.test_plugin import USER_CHECKS

REPO = Path(__file__).resolve().parents[2]
NCCL_CHECK = REPO / "checks" / "performance" / "test_nccl_all_reduce.py"
INJECT_SCRIPT = "<script>document.title='INJECTED';document.body.dataset.pwned='script'</script>"
INJECT_IMG = "<img src=x onerror=\"document.body.dataset.pwned='img'\">"
NARROW, WIDE = 400, 1280

INJECTING_CHECK = f"""
import pytest

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("pod gpu-operator-0 log: " + {INJECT_IMG!r})
    aicr_check.emit("RESULT: " + {INJECT_SCRIPT!r})
    aicr_check.fail("operator unhealthy: " + {INJECT_SCRIPT!r})
"""

#: what the page looks like, read by DevTools (not by the page, whose CSP allows no script)
PAGE_STATE = """JSON.stringify({
  title: document.title,
  pwned: document.body.dataset.pwned || null,
  scripts: document.querySelectorAll('script').length,
  images: document.querySelectorAll('img').length,
  verdict: document.querySelector('#verdict').dataset.status,
  verdictWord: document.querySelector('#verdict .badge').textContent.trim(),
  checks: [...document.querySelectorAll('article.check')].map(a => ({
    name: a.dataset.check, status: a.dataset.status,
    word: a.querySelector('h3 .badge').textContent.trim(),
    colour: getComputedStyle(a.querySelector('h3 .badge')).backgroundColor,
    message: (a.querySelector('.message-text') || {}).textContent || null,
    results: [...a.querySelectorAll('ul.results li')].map(li => li.textContent),
    stdout: (a.querySelector('details.stdout pre') || {}).textContent || null,
    figures: a.querySelectorAll('figure svg').length,
    measurements: [...a.querySelectorAll('table.measurements tbody tr')].map(
      tr => [...tr.children].map(c => c.textContent.trim())),
  })),
  tableRows: [...document.querySelectorAll('#check-table tbody tr')].map(
    tr => [tr.dataset.check, tr.dataset.status]),
  phases: [...document.querySelectorAll('#phase-table tbody tr')].map(
    tr => [...tr.children].map(c => c.textContent.trim())),
  links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
  scrollWidth: document.documentElement.scrollWidth,
})"""


def require_chromium() -> str:
    """The Chromium binary, or skip with the reason (fail when ``AICR_REQUIRE_CHROMIUM=1``)."""
    binary = find_chromium()
    if binary is not None:
        return binary
    reason = "no headless Chromium (run scripts/chromium.sh install, or set AICR_CHROMIUM=/path)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser(require_chromium())
    yield b
    b.close()


def state(tab: Tab) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(tab.evaluate(PAGE_STATE))
    return data


def keep_screenshots(tab: Tab, name: str) -> list[Path]:
    """Wide and narrow full-page PNGs of the page; the narrow one must not scroll sideways."""
    out = artifacts_dir()
    shots = [
        tab.screenshot(out / f"{name}-wide.png", WIDE),
        tab.screenshot(out / f"{name}-narrow.png", NARROW),
    ]
    assert state(tab)["scrollWidth"] <= NARROW, "the page scrolls sideways in a 400 px window"
    for shot in shots:
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        print(f"screenshot: {shot}")
    return shots


def keep_page(page: Path, name: str) -> None:
    (artifacts_dir() / f"{name}.html").write_bytes(page.read_bytes())


# ------------------------------------------------------------------------------------- controls --
def test_the_detectors_detect(browser: Browser, tmp_path: Path) -> None:
    """Positive controls: a script that does run is seen, and our CSP reports what it blocks."""
    live = tmp_path / "live.html"
    live.write_text(f"<!DOCTYPE html><title>clean</title><body>{INJECT_SCRIPT}</body>")
    tab = browser.open(live.as_uri())
    assert tab.evaluate("[document.title, document.body.dataset.pwned]") == ["INJECTED", "script"]
    from aicr_pytest.report import html

    empty = html.render(html.build_page({}, html.RunInfo()))
    match = re.search(r'<meta http-equiv="Content-Security-Policy"[^>]*>', empty)
    assert match is not None
    csp = match.group(0)
    blocked = tmp_path / "blocked.html"
    blocked.write_text(f"<!DOCTYPE html><head>{csp}<title>clean</title></head><body>{INJECT_SCRIPT}</body>")
    tab = browser.open(blocked.as_uri())
    assert tab.evaluate("[document.title, document.body.dataset.pwned || null]") == ["clean", None]
    assert any("Content Security Policy" in m for m in tab.messages()), tab.messages()


# ---------------------------------------------------------------------------------------- pages --
def test_passing_run(browser: Browser, pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    page, evidence = pytester.path / "report" / "passing.html", pytester.path / "evidence"
    tests, _ = run_nccl(pytester, fc, "--aicr-html", str(page), "--aicr-evidence-dir", str(evidence))
    assert tests[BW]["status"] == "passed"
    tab = browser.open(page.as_uri(), width=WIDE)
    s = state(tab)
    assert s["title"] == "aicr-pytest: PASSED — h100-eks-ubuntu-training-kubeflow"
    assert (s["verdict"], s["verdictWord"]) == ("passed", "PASSED")
    (check,) = s["checks"]
    assert (check["name"], check["status"], check["word"]) == (BW, "passed", "PASSED")
    assert check["colour"] == "rgb(26, 127, 55)"
    assert check["figures"] == 1
    bw = tests[BW]["extra"]["aicr.measurements"][0]["value"]
    assert check["measurements"] == [
        ["bus bandwidth", f"{bw:.2f} GB/s", ">= 300", "10 %", "passes at ≥ 270.00 GB/s", "PASSED"]
    ]
    assert s["phases"] == [["performance", "PASSED", "1", "0", "0", "0"]]
    evidence_links = [h for h in s["links"] if h.startswith("../evidence/")]
    assert sorted(evidence_links) == sorted(
        [f"../evidence/{BW}-busbw.svg", f"../evidence/{BW}-launcher.log"] * 2
    )
    assert all((page.parent / h).resolve().is_file() for h in evidence_links)
    assert (s["scripts"], s["pwned"], tab.messages()) == (0, None, [])
    keep_screenshots(tab, "passing")
    keep_page(page, "passing")


def test_failing_run(browser: Browser, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    recipe = make_recipe(
        deployment=["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"],
        conformance=["dra-support"],
    )
    (pytester.path / "recipe.yaml").write_text(yamlio.dump(recipe))
    (pytester.path / "snapshot.yaml").write_text(yamlio.dump(SNAPSHOT))
    page = pytester.path / "failing.html"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--aicr-no-bundled-checks", "test_user.py", "--recipe", "recipe.yaml",
        "--snapshot", "snapshot.yaml", "--aicr-html", str(page),
    )  # fmt: skip
    assert result.ret != 0
    tab = browser.open(page.as_uri(), width=WIDE)
    s = state(tab)
    got = [(c["name"], c["status"], c["word"]) for c in s["checks"]]
    assert got == [
        ("expected-resources", "failed", "FAILED"),
        ("check-nvidia-smi", "other", "OTHER"),
        ("operator-health", "passed", "PASSED"),
        ("gpu-operator-version", "skipped", "SKIPPED"),
        ("dra-support", "passed", "PASSED"),
    ]
    assert s["tableRows"] == [[n, st] for n, st, _ in got]
    colours = {c["status"]: c["colour"] for c in s["checks"]}
    assert len(set(colours.values())) == 4, colours  # each status its own colour, and its word
    assert s["checks"][0]["message"] == "Deployment gpu-operator/gpu-operator: 0/1 available"
    assert s["checks"][2]["results"] == ["operator pods running: 1/1"]
    assert s["phases"][:2] == [
        ["deployment", "FAILED", "1", "1", "1", "1"],
        ["conformance", "PASSED", "1", "0", "0", "0"],
    ]
    assert (s["verdict"], s["scripts"], tab.messages()) == ("failed", 0, [])
    keep_screenshots(tab, "failing")
    keep_page(page, "failing")


def test_injection_attempt(
    browser: Browser, pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """``<script>`` and an ``onerror`` image in a check message, a RESULT line and a pod's log."""
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    fc.state["nccl"] = {"launcher_log": f"[1,0]<stdout>: {INJECT_SCRIPT}\n[1,0]<stdout>: {INJECT_IMG}\n"}
    pytester.makepyfile(test_user=INJECTING_CHECK)
    page = pytester.path / "injection.html"
    recipe: dict[str, Any] = yamlio.load(RECIPE.read_text())
    recipe["validation"]["deployment"]["checks"] = ["operator-health"]
    tests, _ = run_nccl(
        pytester, fc, "--aicr-phase", "deployment", "--aicr-no-bundled-checks", "test_user.py",
        str(NCCL_CHECK), "--aicr-html", str(page), recipe=recipe,
    )  # fmt: skip
    assert tests[BW]["status"] == "failed" and tests["operator-health"]["status"] == "failed"
    assert any(INJECT_SCRIPT in line for line in tests[BW]["stdout"])  # the pod log line reached stdout
    tab = browser.open(page.as_uri(), width=WIDE)
    s = state(tab)
    assert s["title"].startswith("aicr-pytest: FAILED")
    assert (s["pwned"], s["scripts"], s["images"]) == (None, 0, 0)
    assert tab.messages() == []  # not even a blocked script: none was parsed as markup
    checks = {c["name"]: c for c in s["checks"]}
    assert set(checks) == {BW, "operator-health"} and {c["word"] for c in checks.values()} == {"FAILED"}
    assert checks["operator-health"]["message"] == f"operator unhealthy: {INJECT_SCRIPT}"
    assert checks["operator-health"]["results"] == [INJECT_SCRIPT]
    assert f"pod gpu-operator-0 log: {INJECT_IMG}" in checks["operator-health"]["stdout"]
    assert INJECT_SCRIPT in checks[BW]["stdout"] and INJECT_IMG in checks[BW]["stdout"]
    keep_screenshots(tab, "injection")
    keep_page(page, "injection")


# --------------------------------------------------------------------------------- skip or fail --
def test_missing_chromium_skips_or_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AICR_CHROMIUM", str(tmp_path / "no-such-chromium"))
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no headless Chromium"):
        require_chromium()
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="AICR_REQUIRE_CHROMIUM=1 makes this a failure"):
        require_chromium()
