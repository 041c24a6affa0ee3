"""The HTML report's view model (what goes on the page) and its rendering, from CTRF-like dicts."""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import inference as inf
from aicr_pytest import nccl
from aicr_pytest.core import records
from aicr_pytest.core.check import CheckContext
from aicr_pytest.core.errors import UsageError
from aicr_pytest.nccl.plot import busbw_svg
from aicr_pytest.report import html, svgsafe
from aicr_pytest.report.results import ResultAccumulator, phase_table
from tests.html_dom import Dom

PHASES = ("deployment", "conformance", "performance")
START_MS = 1_767_225_600_000  # 2026-01-01 00:00:00 UTC


def entry(
    name: str, status: str, phase: str = "deployment", *, duration: int = 1000, **fields: Any
) -> dict[str, Any]:
    """One CTRF test entry."""
    return {"name": name, "status": status, "duration": duration, "suite": [phase], **fields}


def report(
    *tests: dict[str, Any], run_id: str = "abcd1234", stop_ms: int = START_MS + 65_000
) -> dict[str, Any]:
    return {
        "reportFormat": "CTRF",
        "timestamp": "2026-01-01T00:00:00Z",
        "results": {
            "tool": {"name": "aicr-pytest", "version": "0.1.0"},
            "summary": {"start": START_MS, "stop": stop_ms},
            "tests": list(tests),
        },
        "extra": {"aicr.runId": run_id},
    }


INFO = html.RunInfo(
    recipe_name="h100-eks-ubuntu-training",
    recipe_criteria="service=eks accelerator=h100 intent=training os=ubuntu",
    recipe_source="recipe.yaml",
    snapshot=html.SnapshotFacts(
        source="snapshot.yaml", server_version="v1.33.5-eks-abc", node_count="3", gpu_count="8"
    ),
    phases=PHASES,
    readiness=(html.ReadinessEntry("K8s.server.version", ">= 1.32", "v1.33.5-eks-abc", True),),
)

MIXED = report(
    entry("operator-health", "passed", stdout=["Found 1 pod", "RESULT: operator pods running: 1/1"]),
    entry("expected-resources", "failed", message="Deployment gpu-operator/gpu-operator: 0/1 available"),
    entry("gpu-operator-version", "skipped", message="no constraint"),
    entry("check-nvidia-smi", "other", message="pod vanished"),
    entry("dra-support", "passed", "conformance"),
    entry("nccl-all-reduce-bw", "failed", "performance", message="bandwidth too low"),
)


def page_dom(rep: dict[str, Any], info: html.RunInfo = INFO, **kw: Any) -> tuple[str, Dom]:
    text = html.render(html.build_page(rep, info, **kw))
    return text, Dom(text)


# ------------------------------------------------------------------------------ ordering/status --
def test_failed_and_other_checks_come_first_then_run_order() -> None:
    page = html.build_page(MIXED, INFO)
    assert [c.name for c in page.checks] == [
        "expected-resources",
        "nccl-all-reduce-bw",
        "check-nvidia-smi",
        "operator-health",
        "gpu-operator-version",
        "dra-support",
    ]
    assert [c.status.word for c in page.checks] == [
        "FAILED",
        "FAILED",
        "OTHER",
        "PASSED",
        "SKIPPED",
        "PASSED",
    ]
    assert page.overall.word == "FAILED"
    assert page.headline == "2 failed, 1 other, 2 passed, 1 skipped"


def test_phase_table_has_the_terminals_numbers() -> None:
    """The same function the terminal summary uses, on the same statuses, gives the same rows."""
    page = html.build_page(MIXED, INFO)
    accs = [
        ResultAccumulator(t["name"], t["suite"][0], i, "check", status=t["status"])
        for i, t in enumerate(MIXED["results"]["tests"])
    ]
    expected = phase_table(list(PHASES), accs)
    got = [
        (
            r.phase,
            r.status.key,
            {"passed": r.passed, "failed": r.failed, "skipped": r.skipped, "other": r.other},
        )
        for r in page.phases
    ]
    assert got == expected
    assert got[0] == ("deployment", "failed", {"passed": 1, "failed": 1, "skipped": 1, "other": 1})
    assert got[1][1] == "passed" and got[2][1] == "failed"


def test_all_passed_run() -> None:
    rep = report(
        entry("operator-health", "passed", stdout=["RESULT: operator pods running: 1/1"]),
        entry("nccl-all-reduce-bw", "passed", "performance"),
    )
    page = html.build_page(rep, INFO)
    assert page.overall.key == "passed" and page.overall.word == "PASSED"
    assert [c.name for c in page.checks] == ["operator-health", "nccl-all-reduce-bw"]
    assert page.checks[0].results == ["operator pods running: 1/1"]
    # conformance has no result: not validated, so no row (the terminal's table)
    assert [(r.phase, r.status.key) for r in page.phases] == [
        ("deployment", "passed"),
        ("performance", "passed"),
    ]
    assert page.run_id == "abcd1234"
    assert page.started == "2026-01-01 00:00:00 UTC"
    assert page.duration == "1 min 05 s"


def test_all_skipped_is_not_a_pass() -> None:
    rep = report(entry("operator-health", "skipped", message="skipped - no-cluster mode"))
    page = html.build_page(rep, INFO)
    assert page.overall.word == "SKIPPED"
    assert page.headline == "1 skipped"


def test_empty_run() -> None:
    text, dom = page_dom(report())
    page = html.build_page(report(), INFO)
    assert page.checks == [] and page.overall.key == "skipped"
    assert page.headline == "no checks ran"
    assert "No checks ran." in text
    assert [a["data-phase"] for a, _ in dom.find("tr") if "data-phase" in a] == []  # nothing validated


def test_unknown_or_missing_status_reads_other() -> None:
    rep = report(entry("operator-health", "weird"), {"name": "expected-resources", "suite": ["deployment"]})
    page = html.build_page(rep, INFO)
    assert [c.status.key for c in page.checks] == ["other", "other"]
    assert page.overall.key == "other"


def test_readiness_blocked_run() -> None:
    info = html.RunInfo(
        recipe_name="r",
        phases=("deployment",),
        readiness=(
            html.ReadinessEntry(
                "K8s.server.version",
                ">= 1.34",
                "v1.33.5",
                False,
                message="readiness check failed: K8s.server.version expected >= 1.34, got v1.33.5",
            ),
            html.ReadinessEntry("OS.release.ID", "ubuntu", "ubuntu", True),
            html.ReadinessEntry("GPU.smi.driver", ">= 999", "580", False, severity="warning"),
        ),
        readiness_blocked=True,
    )
    rep = report(
        entry("K8s.server.version", "failed", "readiness", message="readiness check failed: ..."),
        entry("operator-health", "skipped", message="skipped - readiness pre-flight failed"),
    )
    text, dom = page_dom(rep, info)
    page = html.build_page(rep, info)
    assert page.overall.word == "FAILED"
    assert page.headline == "readiness pre-flight failed: every check was skipped"
    assert [c.name for c in page.checks] == ["operator-health"]  # the readiness suite is its own table
    assert [(r.name, r.status.word) for r in page.readiness] == [
        ("K8s.server.version", "FAILED"),
        ("OS.release.ID", "PASSED"),
        ("GPU.smi.driver", "WARNING"),
    ]
    assert "Readiness pre-flight failed." in text
    assert "readiness check failed: K8s.server.version expected &gt;= 1.34, got v1.33.5" in text
    assert [a["data-status"] for a, _ in dom.find("tr") if "data-constraint" in a] == [
        "failed",
        "passed",
        "warning",
    ]


def test_readiness_from_ctrf_when_run_info_has_none() -> None:
    rep = report(entry("K8s.server.version", "failed", "readiness", message="readiness check failed: x"))
    page = html.build_page(rep, html.RunInfo(readiness_blocked=True))
    assert [(r.name, r.status.key, r.message) for r in page.readiness] == [
        ("K8s.server.version", "failed", "readiness check failed: x")
    ]


def test_interrupted_run_is_marked() -> None:
    info = html.RunInfo(
        recipe_name="r", phases=PHASES, interrupted=True, unfinished=("nccl-all-reduce-bw (performance)",)
    )
    rep = report(entry("operator-health", "passed"))
    text, dom = page_dom(rep, info)
    page = html.build_page(rep, info)
    assert page.overall.word == "INTERRUPTED"
    (alert,) = dom.find("p", id="interrupted")
    assert "The run was stopped before it finished" in alert[1]
    assert "Not finished: nccl-all-reduce-bw (performance)." in alert[1]
    assert dom.find("p", id="verdict")[0][0]["data-status"] == "interrupted"
    assert "<title>aicr-pytest: INTERRUPTED — r</title>" in text


# --------------------------------------------------------------------------------- measurements --
MEASURED = {
    "name": "bus bandwidth",
    "value": 452.98,
    "unit": "GB/s",
    "constraint": ">= 300",
    "tolerance": 0.1,
    "effectiveThreshold": 270.0,
    "passed": True,
}


def test_measurement_shows_value_constraint_and_tolerance() -> None:
    rep = report(
        entry("nccl-all-reduce-bw", "passed", "performance", extra={records.MEASUREMENTS_KEY: [MEASURED]})
    )
    text, dom = page_dom(rep)
    (m,) = html.build_page(rep, INFO).checks[0].measurements
    assert (m.name, m.value, m.constraint, m.tolerance, m.bound, m.verdict.word) == (
        "bus bandwidth",
        "452.98 GB/s",
        ">= 300",
        "10 %",
        "passes at ≥ 270.00 GB/s",
        "PASSED",
    )
    row = dom.find("tr", data_verdict="passed")
    assert len(row) == 1 and "452.98 GB/s" in row[0][1] and "10 %" in row[0][1]
    assert html.build_page(rep, INFO).checks[0].summary == "bus bandwidth 452.98 GB/s (passed)"
    assert "aicr.measurements" not in text  # rendered as a table, not repeated as JSON


def test_ceiling_measurement_and_unjudged() -> None:
    ttft = {
        **MEASURED,
        "name": "TTFT p99",
        "value": 702.4,
        "unit": "ms",
        "constraint": "<= 2000",
        "effectiveThreshold": 2200.0,
        "passed": False,
    }
    bare = {"name": "throughput", "value": 1.5, "unit": "tokens/sec"}
    views = [html.measurement_view(ttft), html.measurement_view(bare)]
    assert views[0].bound == "passes at ≤ 2200.00 ms" and views[0].verdict.word == "FAILED"
    assert (views[1].constraint, views[1].tolerance, views[1].bound, views[1].verdict.word) == (
        "—",
        "—",
        "—",
        "NOT JUDGED",
    )


@pytest.mark.parametrize(
    "raw",
    [
        {"value": 1.0},  # no name
        {"name": "x", "value": "fast"},
        {"name": "x", "value": True, "passed": True},
        "not an object",
    ],
)
def test_unreadable_measurement_is_never_a_pass(raw: Any) -> None:
    view = html.measurement_view(raw)
    assert view.name == "unreadable measurement" and view.verdict.key == "other"


def test_non_finite_value_fails_closed() -> None:
    m = records.Measurement(name="bw", value=math.nan, unit="GB/s", passed=True)
    assert m.value is None and m.passed is False
    assert m.to_json() == {
        "name": "bw",
        "value": None,
        "unit": "GB/s",
        "constraint": None,
        "tolerance": None,
        "effectiveThreshold": None,
        "passed": False,
    }
    view = html.measurement_view({**MEASURED, "value": float("inf")})
    assert view.value == "not a number" and view.verdict.word == "FAILED"


def test_nccl_verdict_carries_the_measurement() -> None:
    threshold = nccl.parse_threshold(nccl.CHECK_DEFAULT, ">= 300")
    low = nccl.evaluate(nccl.CHECK_DEFAULT, threshold, 250.0)
    assert low.measurement is not None
    assert low.measurement.to_json() == {
        "name": "bus bandwidth",
        "value": 250.0,
        "unit": "GB/s",
        "constraint": ">= 300",
        "tolerance": 0.1,
        "effectiveThreshold": pytest.approx(270.0),
        "passed": False,
    }
    ok = nccl.evaluate(nccl.CHECK_DEFAULT, threshold, 280.0)  # inside the tolerance
    assert ok.passed and ok.measurement is not None and ok.measurement.passed is True
    ceiling = nccl.evaluate(nccl.CHECK_DEFAULT, nccl.parse_threshold(nccl.CHECK_DEFAULT, "<= 10"), 10.5)
    assert ceiling.measurement is not None
    assert ceiling.measurement.effective_threshold == pytest.approx(11.0) and ceiling.measurement.passed


def _knobs(**env: str) -> inf.InferenceKnobs:
    from aicr_pytest.core.recipe import Constraint

    cons = [
        Constraint(name="inference-throughput", value=">= 50000"),
        Constraint(name="inference-ttft-p99", value="<= 2000"),
    ]
    return inf.preflight(cons, ["dynamo-platform"], {}, env)


def test_inference_evaluation_carries_scaled_measurements() -> None:
    ev = inf.evaluate(24000.0, 2100.0, _knobs(), 4, 8)  # gate scaled to 25000; 0.9 × 25000 = 22500
    thr, ttft = (m.to_json() for m in ev.measurements)
    assert thr == {
        "name": "inference throughput",
        "value": 24000.0,
        "unit": "tokens/sec",
        "constraint": ">= 50000",
        "tolerance": 0.1,
        "effectiveThreshold": pytest.approx(22500.0),
        "passed": True,
    }
    assert ttft["effectiveThreshold"] == pytest.approx(2200.0) and ttft["passed"] is True
    failing = inf.evaluate(20000.0, 2300.0, _knobs(), 8, 8)
    assert [m.passed for m in failing.measurements] == [False, False]
    assert failing.passed is False


def test_check_context_records() -> None:
    ctx = CheckContext(name="nccl-all-reduce-bw", phase="performance", timeout_s=1, constraints=[])
    ctx.measure(records.Measurement(name="bw", value=1.0, unit="GB/s"))
    ctx.fact("node", "gpu-1")
    ctx.fact("wiring", "DRA")
    ctx.figure("sweep", "<svg xmlns='http://www.w3.org/2000/svg'/>")
    assert ctx.extra[records.MEASUREMENTS_KEY][0]["name"] == "bw"
    assert list(ctx.extra[records.FACTS_KEY].items()) == [("node", "gpu-1"), ("wiring", "DRA")]
    assert ctx.figures == [{"title": "sweep", "svg": "<svg xmlns='http://www.w3.org/2000/svg'/>"}]
    assert "aicr.figures" not in ctx.extra  # figures never reach CTRF
    with pytest.raises(ValueError, match="figure larger than"):
        ctx.figure("huge", "<svg>" + "x" * records.MAX_FIGURE_BYTES + "</svg>")


def test_facts_are_shown_in_order() -> None:
    facts = {
        "node": "gpu-h100-1",
        "wiring": "DRA (gpu.nvidia.com ResourceClaimTemplate)",
        "GPUs benchmarked": "4 of 8",
    }
    rep = report(entry("inference-perf", "passed", "performance", extra={records.FACTS_KEY: facts}))
    text, dom = page_dom(rep)
    assert html.build_page(rep, INFO).checks[0].facts == list(facts.items())
    dts = [t for a, t in dom.find("dt")]
    assert dts[-3:] == ["node", "wiring", "GPUs benchmarked"]
    assert "gpu-h100-1" in text and "aicr.facts" not in text


# -------------------------------------------------------------------------------------- figures --
PLOT = busbw_svg([(1 << i, float(i)) for i in range(10, 30)], title="sweep", threshold=15, pass_bound=13.5)


def test_the_nccl_plot_is_inlined() -> None:
    safe = svgsafe.sanitize(PLOT)
    assert safe.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert safe.count("<circle") == 20 and "pass bound 13.5 GB/s" in safe
    rep = report(entry("nccl-all-reduce-bw", "passed", "performance"))
    text, dom = page_dom(rep, figures={"nccl-all-reduce-bw": [{"title": "busbw by size", "svg": PLOT}]})
    assert len(dom.find("svg")) == 1 and dom.find("figcaption")[0][1] == "busbw by size"
    assert "figure omitted" not in text


@pytest.mark.parametrize(
    ("svg", "reason"),
    [
        ('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "element <script>"),
        ('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>', "attribute 'onload'"),
        (
            '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div/></foreignObject></svg>',
            "foreignObject",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
            '<a x:href="javascript:alert(1)"><text>x</text></a></svg>',
            "element <a>",
        ),
        (
            '<svg xmlns="http://www.w3.org/2000/svg"><rect fill="url(http://evil/x)"/></svg>',
            "disallowed value",
        ),
        ('<!DOCTYPE svg [<!ENTITY a "b">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>', "DOCTYPE"),
        ("<html><body/></html>", "element <html>"),
        ("<svg", "not well-formed"),
    ],
)
def test_unsafe_figures_are_omitted_with_the_reason(svg: str, reason: str) -> None:
    with pytest.raises(svgsafe.UnsafeSvg, match=re.escape(reason)):
        svgsafe.sanitize(svg)
    view = html.figure_view({"title": "t", "svg": svg})
    assert view.svg is None and view.omitted is not None and reason in view.omitted
    text, dom = page_dom(report(entry("x", "passed")), figures={"x": [{"title": "t", "svg": svg}]})
    assert "<script" not in text and 'onload="' not in text and dom.find("svg") == []


def test_svg_text_is_escaped_on_the_way_out() -> None:
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="5"><text>a &lt;b&gt; &amp; c</text></svg>'
    )
    out = svgsafe.sanitize(svg)
    assert "a &lt;b&gt; &amp; c" in out and 'viewBox="0 0 10 5"' in out


# ------------------------------------------------------------------------------ injection, secrets --
INJECT = "<script>document.title='INJECTED'</script>"
IMG = '<img src=x onerror="document.body.dataset.pwned=1">'


def test_injection_strings_are_text() -> None:
    rep = report(
        entry(
            f"x{INJECT}",
            "failed",
            message=f"bad {INJECT}",
            stdout=[f"pod log: {IMG}", f"RESULT: {INJECT}"],
            extra={
                records.FACTS_KEY: {f"k{IMG}": f"v{INJECT}"},
                "custom": IMG,
                records.MEASUREMENTS_KEY: [{**MEASURED, "name": IMG, "constraint": INJECT}],
            },
        ),
        entry('"><script>alert(1)</script>', "passed"),
    )
    info = html.RunInfo(recipe_name=f"r{INJECT}", recipe_criteria=IMG, phases=PHASES, warnings=(INJECT,))
    text, dom = page_dom(rep, info, figures={"x": [{"title": INJECT, "svg": PLOT}]})
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert dom.find("script") == [] and dom.find("img") == []
    assert "&lt;script&gt;document.title=&#39;INJECTED&#39;&lt;/script&gt;" in text
    (msg,) = dom.find("span", **{"class": "message-text"})
    assert msg[1] == f"bad {INJECT}"
    assert [a["data-check"] for a, _ in dom.find("article")] == [f"x{INJECT}", '"><script>alert(1)</script>']
    (pre,) = [t for a, t in dom.find("pre") if "pod log" in t]
    assert IMG in pre


def test_page_is_self_contained() -> None:
    text, dom = page_dom(MIXED, figures={"nccl-all-reduce-bw": [{"title": "p", "svg": PLOT}]})
    assert dom.find("script") == [] and dom.find("link") == [] and dom.find("img") == []
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:|//|file:)""", text)
    assert "@import" not in text and "url(" not in text
    csp = [a["content"] for a, _ in dom.find("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    ]
    assert html.environment().autoescape is True


def test_secrets_are_redacted_everywhere() -> None:
    token = "hf_SENTINELtoken0123456789abcdef"
    rep = report(
        entry(
            "inference-perf",
            "failed",
            "performance",
            message=f"token {token} leaked",
            stdout=[f"echo {token}"],
            extra={"aicr.diagnostics": {"log": [token]}, records.FACTS_KEY: {"t": token}},
        ),
    )
    info = html.RunInfo(
        recipe_name="r",
        recipe_source=f"https://x/{token}",
        warnings=(token,),
        readiness=(html.ReadinessEntry("a", token, token, False, message=token),),
    )
    text = html.render(
        html.build_page(
            rep, info, figures={"inference-perf": [{"title": token, "svg": PLOT}]}, secrets=[token, None, ""]
        )
    )
    assert token not in text
    assert text.count("&lt;redacted&gt;") >= 8


def test_short_values_are_not_treated_as_secrets() -> None:
    page = html.build_page(report(entry("abc", "passed")), INFO, secrets=["abc"])
    assert page.checks[0].name == "abc"


def test_stdout_is_folded_and_complete() -> None:
    lines = [f"line {i}" for i in range(1000)]
    _text, dom = page_dom(report(entry("operator-health", "passed", stdout=lines)))
    (details,) = dom.find("details", **{"class": "stdout"})
    assert "line 0\nline 1\n" in details[1] and "line 999" in details[1]
    assert "stdout (1000 lines)" in details[1]
    assert "open" not in details[0]


def test_extra_keys_without_a_form_are_listed_as_json() -> None:
    rep = report(
        entry(
            "nccl-all-reduce-bw",
            "passed",
            "performance",
            extra={"aicr.ncclRun": {"workers": 2}, "aicr.cleanupWarnings": ["left pod x"]},
        )
    )
    page = html.build_page(rep, INFO)
    c = page.checks[0]
    assert (
        c.extra_json is not None
        and '"aicr.ncclRun"' in c.extra_json
        and "cleanupWarnings" not in c.extra_json
    )
    assert c.cleanup_warnings == ["left pod x"]
    big = report(entry("x", "passed", extra={"blob": "y" * (html.MAX_EXTRA_CHARS + 10)}))
    assert "[truncated" in (html.build_page(big, INFO).checks[0].extra_json or "")


# ------------------------------------------------------------------------------------- evidence --
def test_evidence_links_are_relative_and_only_this_runs_files(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    now = time.time()
    for name in (
        "nccl-all-reduce-bw-busbw.svg",
        "nccl-all-reduce-bw-launcher.log",
        "nccl-all-reduce-bw-net-busbw.svg",
        "run summary.txt",
        "old.log",
    ):
        (evidence / name).write_text("x")
    os.utime(evidence / "old.log", (now - 3600, now - 3600))
    rep = report(
        entry("nccl-all-reduce-bw", "passed", "performance"),
        entry("nccl-all-reduce-bw-net", "passed", "performance"),
    )
    rep["results"]["summary"]["start"] = int(now * 1000) - 1000
    info = html.RunInfo(phases=PHASES, evidence_dir=evidence)
    page = html.build_page(rep, info, page_path=tmp_path / "out" / "report.html")
    assert [(e.name, e.href) for e in page.checks[0].evidence] == [
        ("nccl-all-reduce-bw-busbw.svg", "../evidence/nccl-all-reduce-bw-busbw.svg"),
        ("nccl-all-reduce-bw-launcher.log", "../evidence/nccl-all-reduce-bw-launcher.log"),
    ]
    # "-net" is another check: its file is its own, not the default check's (longest name wins)
    assert [e.name for e in page.checks[1].evidence] == ["nccl-all-reduce-bw-net-busbw.svg"]
    assert [e.href for e in page.evidence] == [
        "../evidence/nccl-all-reduce-bw-busbw.svg",
        "../evidence/nccl-all-reduce-bw-launcher.log",
        "../evidence/nccl-all-reduce-bw-net-busbw.svg",
        "../evidence/run%20summary.txt",
    ]
    text = html.render(page)
    assert 'href="../evidence/run%20summary.txt"' in text and "old.log" not in text


def test_no_evidence_section_without_evidence_dir() -> None:
    _text, dom = page_dom(MIXED)
    assert dom.find("section", id="evidence") == []


# ---------------------------------------------------------------------------------------- write --
def test_write_page_creates_parents_and_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.html"
    html.write_page(target, MIXED, INFO)
    first = target.read_text()
    assert first.startswith("<!DOCTYPE html>") and "expected-resources" in first
    html.write_page(target, report(), INFO)
    assert "No checks ran." in target.read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_check_target(tmp_path: Path) -> None:
    assert html.check_target(tmp_path / "r.html") == tmp_path / "r.html"
    with pytest.raises(UsageError, match="is a directory"):
        html.check_target(tmp_path)
    with pytest.raises(UsageError, match="needs a file path"):
        html.check_target("-")


def test_template_ships_in_the_package() -> None:
    import aicr_pytest.report

    template = Path(aicr_pytest.report.__file__).parent / "templates" / "report.html.j2"
    assert template.is_file()


def test_format_duration() -> None:
    assert [html.format_duration_ms(v) for v in (850, 12_340, 61_500, 3_725_000)] == [
        "0.85 s",
        "12.3 s",
        "1 min 02 s",
        "1 h 02 min",
    ]
